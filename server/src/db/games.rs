//! Finished games: stored exactly once per game id, with their rating changes applied in
//! the same transaction, and read back as JSON (how a record is stored: `stored`).
//!
//! The writer rates from the ratings stored *now*, not from those in the record (which
//! were shown when the game started): a player who finished another game meanwhile is
//! rated from where that game left them.

use elementals_protocol::messages::{EndReason, GameId, SeatPair};
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::Seat;
use rusqlite::{params, Connection, OptionalExtension};

use super::schema::ms_to_sql;
use super::{stored, DbError, DbResult};
use crate::record::{AccountId, GameRecord};

/// Store `record` (`stored` is its `stored::encode`ing) unless its id is already stored, and apply
/// what it means for the two accounts. The caller owns the transaction (a savepoint
/// within a batch).
pub(super) fn record(
    conn: &Connection,
    record: &GameRecord,
    stored: &[u8],
) -> DbResult<Option<SeatPair<RatingChange>>> {
    let game_id = record.game_id.to_string();
    let inserted = conn
        .prepare_cached(
            "INSERT INTO games (id, rated, one_id, two_id, winner, reason, started_at, ended_at,
                                rounds, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![
            game_id,
            record.rated,
            record.players.one.account_id,
            record.players.two.account_id,
            record.result.winner.map(Seat::number),
            reason_name(record.result.reason),
            ms_to_sql(record.started_at),
            ms_to_sql(record.ended_at),
            record.rounds.len() as i64,
            stored,
        ])?;
    if inserted == 0 {
        // Already recorded: a retry after a lost reply, or a duplicate. Change nothing.
        return recorded_changes(conn, &game_id);
    }
    for player in [&record.players.one, &record.players.two] {
        // A guest with a game on record is never pruned: the record names it.
        if player.guest {
            conn.prepare_cached("UPDATE accounts SET played = 1 WHERE id = ?1")?
                .execute([player.account_id])?;
        }
    }
    let accounts = SeatPair::new(record.players.one.account_id, record.players.two.account_id);
    match record.result.winner {
        Some(winner) if record.changes_ratings() => {
            rate(conn, &game_id, record.ended_at, accounts, winner).map(Some)
        }
        None if is_rated_draw(record) => {
            let mut add_draw =
                conn.prepare_cached("UPDATE accounts SET draws = draws + 1 WHERE id = ?1")?;
            add_draw.execute([accounts.one])?;
            add_draw.execute([accounts.two])?;
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Whether a record of the game is stored (its live log is then no longer needed).
pub(super) fn is_recorded(conn: &Connection, game_id: &GameId) -> DbResult<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM games WHERE id = ?1")?
        .query_row([game_id.to_string()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// A drawn game that would have been rated had someone won. Aborts are not draws, and a
/// game stopped at the round limit is unrated: they leave no trace on either account.
pub(super) fn is_rated_draw(record: &GameRecord) -> bool {
    record.rated_between_accounts()
        && record.result.winner.is_none()
        && !matches!(
            record.result.reason,
            EndReason::Aborted | EndReason::ServerAborted | EndReason::MaxRounds
        )
}

/// Rate a won game from the stored ratings and write both changes and their history. Only
/// for a record that `changes_ratings`: two different accounts, so two rows to change.
fn rate(
    conn: &Connection,
    game_id: &str,
    at: u64,
    accounts: SeatPair<AccountId>,
    winner: Seat,
) -> DbResult<SeatPair<RatingChange>> {
    let winner_id = *accounts.get(winner);
    let loser_id = *accounts.get(winner.other());
    let (won, lost) = rate_win(
        stored_rating(conn, winner_id)?,
        stored_rating(conn, loser_id)?,
    );

    conn.prepare_cached("UPDATE accounts SET rating = ?1, wins = wins + 1 WHERE id = ?2")?
        .execute(params![won.after, winner_id])?;
    conn.prepare_cached("UPDATE accounts SET rating = ?1, losses = losses + 1 WHERE id = ?2")?
        .execute(params![lost.after, loser_id])?;
    let mut history = conn.prepare_cached(
        r#"INSERT INTO rating_history (account_id, game_id, "before", "after", at)
           VALUES (?1, ?2, ?3, ?4, ?5)"#,
    )?;
    history.execute(params![
        winner_id,
        game_id,
        won.before,
        won.after,
        ms_to_sql(at)
    ])?;
    history.execute(params![
        loser_id,
        game_id,
        lost.before,
        lost.after,
        ms_to_sql(at)
    ])?;

    Ok(match winner {
        Seat::One => SeatPair::new(won, lost),
        Seat::Two => SeatPair::new(lost, won),
    })
}

fn stored_rating(conn: &Connection, account: AccountId) -> DbResult<f64> {
    conn.prepare_cached("SELECT rating FROM accounts WHERE id = ?1")?
        .query_row([account], |row| row.get(0))
        .optional()?
        .ok_or_else(|| DbError::Sqlite(format!("no account {account}")))
}

/// Both seats' changes of one game, found by the primary keys of `games` and
/// `rating_history` (there is no index of the history by game alone): a change's time is
/// its game's end.
pub(super) const RECORDED_CHANGES: &str = r#"
    SELECT one."before", one."after", two."before", two."after"
    FROM games g
    JOIN rating_history one
        ON one.account_id = g.one_id AND one.at = g.ended_at AND one.game_id = g.id
    JOIN rating_history two
        ON two.account_id = g.two_id AND two.at = g.ended_at AND two.game_id = g.id
    WHERE g.id = ?1"#;

/// The changes a stored game made, seat by seat; `None` if it changed no rating.
pub(super) fn recorded_changes(
    conn: &Connection,
    game_id: &str,
) -> DbResult<Option<SeatPair<RatingChange>>> {
    let changes = conn
        .prepare_cached(RECORDED_CHANGES)?
        .query_row([game_id], |row| {
            Ok(SeatPair::new(
                RatingChange {
                    before: row.get(0)?,
                    after: row.get(1)?,
                },
                RatingChange {
                    before: row.get(2)?,
                    after: row.get(3)?,
                },
            ))
        })
        .optional()?;
    Ok(changes)
}

/// The stored record of a game, as JSON.
pub(super) fn stored_record(
    conn: &Connection,
    game_id: &GameId,
) -> DbResult<Option<serde_json::Value>> {
    let mut query = conn.prepare_cached("SELECT record FROM games WHERE id = ?1")?;
    let mut rows = query.query([game_id.to_string()])?;
    match rows.next()? {
        Some(row) => match row.get_ref(0)? {
            rusqlite::types::ValueRef::Blob(bytes) => stored::to_json(game_id, bytes).map(Some),
            other => Err(stored::stored_error(
                game_id,
                format!("not a record: a value of type {}", other.data_type()),
            )),
        },
        None => Ok(None),
    }
}

/// The reason as the protocol spells it (`"time"`, `"draw_agreed"`, ...).
pub(super) fn reason_name(reason: EndReason) -> String {
    match serde_json::to_value(reason) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{reason:?}"),
    }
}
