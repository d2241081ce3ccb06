//! Every finished game kept, read back: a player's games newest first
//! (`GET /api/players/{name}/games`), and what a game's signed transcript holds (its stored
//! record and the rating changes it made), on both backends.
//!
//! A page's rows come from the indexes by seat (`games_by_one`, `games_by_two`, of
//! (account, end)), each read newest first for `offset + limit` entries and merged; only
//! the page's records are then read, and of those only the fields before and after the
//! rounds (`stored::decode_head`).

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use postgres::GenericClient;
use rusqlite::{params, Connection, OptionalExtension};

use super::{accounts, games, stored, DbError, DbResult, Page};
use crate::record::AccountId;

/// One game in a player's list.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct PlayerGame {
    pub game_id: GameId,
    /// The player's seat.
    pub seat: Seat,
    pub opponent: Opponent,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub result: GameResult,
    /// Rounds played.
    pub rounds: u32,
    /// Unix milliseconds.
    pub started_at: u64,
    pub ended_at: u64,
    /// The player's rating change; `null` for a game that changed no rating.
    pub rating_change: Option<RatingChange>,
}

/// The other seat of a listed game.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Opponent {
    pub name: String,
    pub guest: bool,
    /// The rating shown when the game started.
    pub rating: f64,
}

/// A finished game as its transcript signs it: its record as `GET /api/games/{id}` reads
/// it, and both seats' rating changes if it changed ratings.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredGame {
    pub record: serde_json::Value,
    pub changes: Option<SeatPair<RatingChange>>,
}

/// A page's games, newest first (ties by rowid, descending: the later recorded first):
/// each seat's index read for `offset + limit` entries, merged. `UNION` keeps one row of a
/// game in both seats.
const PAGE_IDS_SQLITE: &str = "
    SELECT rowid, ended_at FROM (
        SELECT * FROM (SELECT rowid, ended_at FROM games WHERE one_id = ?1
                       ORDER BY ended_at DESC, rowid DESC LIMIT ?2)
        UNION
        SELECT * FROM (SELECT rowid, ended_at FROM games WHERE two_id = ?1
                       ORDER BY ended_at DESC, rowid DESC LIMIT ?2))
    ORDER BY ended_at DESC, rowid DESC LIMIT ?3 OFFSET ?4";

/// On PostgreSQL, ties by id, descending.
const PAGE_IDS_PG: &str = "
    (SELECT id, ended_at FROM games WHERE one_id = $1 ORDER BY ended_at DESC, id DESC LIMIT $2)
    UNION
    (SELECT id, ended_at FROM games WHERE two_id = $1 ORDER BY ended_at DESC, id DESC LIMIT $2)
    ORDER BY ended_at DESC, id DESC LIMIT $3 OFFSET $4";

/// One player's change in one game, by the history's key.
const CHANGE_SQLITE: &str = r#"SELECT "before", "after" FROM rating_history
    WHERE account_id = ?1 AND at = ?2 AND game_id = ?3"#;

const CHANGE_PG: &str = r#"SELECT "before", "after" FROM rating_history
    WHERE account_id = $1 AND at = $2 AND game_id = $3"#;

/// A registered player's games, newest first; `None` for an unknown name or a guest (who
/// has no public page).
pub(super) fn player_games(
    conn: &Connection,
    name: &str,
    page: Page,
) -> DbResult<Option<Vec<PlayerGame>>> {
    let Some(account) = accounts::by_name(conn, name)?.filter(|a| !a.guest) else {
        return Ok(None);
    };
    let rows: Vec<(i64, i64)> = conn
        .prepare_cached(PAGE_IDS_SQLITE)?
        .query_map(
            params![account.id, page_end(page), page.limit, page.offset],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut record =
        conn.prepare_cached("SELECT id, record, rounds FROM games WHERE rowid = ?1")?;
    let mut change = conn.prepare_cached(CHANGE_SQLITE)?;
    let mut games = Vec::with_capacity(rows.len());
    for (rowid, ended_at) in rows {
        let (id, bytes, rounds): (String, Vec<u8>, i64) =
            record.query_row([rowid], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        let rating_change = change
            .query_row(params![account.id, ended_at, id], |row| {
                Ok(RatingChange {
                    before: row.get(0)?,
                    after: row.get(1)?,
                })
            })
            .optional()?;
        games.push(listed(account.id, &id, &bytes, rounds, rating_change)?);
    }
    Ok(Some(games))
}

/// The same on PostgreSQL.
pub(super) fn player_games_pg(
    c: &mut impl GenericClient,
    name: &str,
    page: Page,
) -> DbResult<Option<Vec<PlayerGame>>> {
    let account = c.query_opt(
        "SELECT id, guest FROM accounts WHERE lower(name) = lower($1)",
        &[&name],
    )?;
    let Some(account) = account.filter(|row| !row.get::<_, bool>(1)) else {
        return Ok(None);
    };
    let account: AccountId = account.get(0);
    let ids = c.query(
        PAGE_IDS_PG,
        &[
            &account,
            &i64::from(page_end(page)),
            &i64::from(page.limit),
            &i64::from(page.offset),
        ],
    )?;
    let mut games = Vec::with_capacity(ids.len());
    for row in ids {
        let id: String = row.get(0);
        let ended_at: i64 = row.get(1);
        let game = c.query_one("SELECT record, rounds FROM games WHERE id = $1", &[&id])?;
        let rating_change = c
            .query_opt(CHANGE_PG, &[&account, &ended_at, &id])?
            .map(|row| RatingChange {
                before: row.get(0),
                after: row.get(1),
            });
        games.push(listed(
            account,
            &id,
            game.get::<_, &[u8]>(0),
            game.get(1),
            rating_change,
        )?);
    }
    Ok(Some(games))
}

/// A finished game's stored record and rating changes, for its transcript.
pub(super) fn stored_game(conn: &Connection, game_id: &GameId) -> DbResult<Option<StoredGame>> {
    let id = game_id.to_string();
    let record: Option<Vec<u8>> = conn
        .prepare_cached("SELECT record FROM games WHERE id = ?1")?
        .query_row([&id], |row| row.get(0))
        .optional()?;
    let Some(record) = record else {
        return Ok(None);
    };
    let record = stored::to_json(game_id, &record)?;
    let changes = games::recorded_changes(conn, &id)?;
    Ok(Some(StoredGame { record, changes }))
}

/// The same on PostgreSQL.
pub(super) fn stored_game_pg(
    c: &mut impl GenericClient,
    game_id: &GameId,
) -> DbResult<Option<StoredGame>> {
    let id = game_id.to_string();
    let Some(row) = c.query_opt("SELECT record FROM games WHERE id = $1", &[&id])? else {
        return Ok(None);
    };
    let record = stored::to_json(game_id, row.get::<_, &[u8]>(0))?;
    let changes = c
        .query_opt(
            r#"SELECT one."before", one."after", two."before", two."after"
               FROM games g
               JOIN rating_history one
                   ON one.account_id = g.one_id AND one.at = g.ended_at AND one.game_id = g.id
               JOIN rating_history two
                   ON two.account_id = g.two_id AND two.at = g.ended_at AND two.game_id = g.id
               WHERE g.id = $1"#,
            &[&id],
        )?
        .map(|row| {
            SeatPair::new(
                RatingChange {
                    before: row.get(0),
                    after: row.get(1),
                },
                RatingChange {
                    before: row.get(2),
                    after: row.get(3),
                },
            )
        });
    Ok(Some(StoredGame { record, changes }))
}

/// Entries each seat's index is read for: the page's end.
fn page_end(page: Page) -> u32 {
    page.offset.saturating_add(page.limit)
}

/// One listed game from its stored record, as seen from `account`'s seat.
fn listed(
    account: AccountId,
    id: &str,
    bytes: &[u8],
    rounds: i64,
    rating_change: Option<RatingChange>,
) -> DbResult<PlayerGame> {
    let game_id: GameId = id
        .parse()
        .map_err(|_| DbError::Sqlite(format!("a stored game id that is not one: {id:?}")))?;
    let head = stored::decode_head(bytes).map_err(|what| stored::stored_error(&game_id, what))?;
    let seat = if head.players.one.account_id == account {
        Seat::One
    } else {
        Seat::Two
    };
    let opponent = head.players.get(seat.other());
    Ok(PlayerGame {
        game_id,
        seat,
        opponent: Opponent {
            name: opponent.name.clone(),
            guest: opponent.guest,
            rating: opponent.rating,
        },
        variant: head.variant,
        time_control: head.time_control,
        rated: head.rated,
        result: head.result,
        rounds: u32::try_from(rounds).unwrap_or(0),
        started_at: head.started_at,
        ended_at: head.ended_at,
        rating_change,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reads_each_index_to_its_end() {
        let page = |limit, offset| Page { limit, offset };
        assert_eq!(page_end(page(50, 0)), 50);
        assert_eq!(page_end(page(50, 10_000)), 10_050);
        assert_eq!(page_end(page(u32::MAX, 1)), u32::MAX);
    }

    #[test]
    fn a_page_of_games_is_read_from_the_seats_indexes_alone() {
        let dir = tempfile::tempdir().unwrap();
        let conn = super::super::schema::open(&dir.path().join("elementals.db")).unwrap();
        let plan = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PAGE_IDS_SQLITE}"))
            .unwrap()
            .query_map(params![1, 50, 50, 0], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        // Each seat's index searched by account, covering: no table read, no scan.
        for index in ["games_by_one", "games_by_two"] {
            let step = format!("SEARCH games USING COVERING INDEX {index}");
            assert!(
                plan.iter().any(|s| s.starts_with(&step)),
                "{index}: {plan:?}"
            );
        }
        assert!(
            !plan.iter().any(|s| s.starts_with("SCAN games")),
            "{plan:?}"
        );
    }
}
