//! The readers: leaderboard, player pages and stored records, on read-only connections.

use std::sync::{Mutex, PoisonError};

use elementals_protocol::messages::GameId;
use postgres::Client;
use tokio::sync::mpsc;

use super::accounts::by_name;
use super::conn::Conn;
use super::Cache;
use crate::db::reader::Read;
use crate::db::{stored, DbResult, HistoryRow, LeaderRow, Page, PlayerPage};

pub(super) fn run_reader(mut conn: Conn, queue: &Mutex<mpsc::Receiver<Read>>) {
    loop {
        let read = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .blocking_recv();
        let Some(read) = read else {
            return;
        };
        // While the database cannot be reached, each read is answered `Unavailable`.
        let (client, cache) = match conn.get() {
            Ok(connection) => connection,
            Err(error) => {
                read.refuse(error);
                continue;
            }
        };
        // A read that fails because the connection is lost answers `Unavailable`.
        match read {
            Read::Leaderboard { page, reply } => {
                let answer = leaderboard(client, cache, page);
                let _ = reply.send(conn.settle(answer));
            }
            Read::PlayerPage { name, page, reply } => {
                let answer = player_page(client, cache, &name, page);
                let _ = reply.send(conn.settle(answer));
            }
            Read::GameRecord { game_id, reply } => {
                let answer = stored_record(client, cache, &game_id);
                let _ = reply.send(conn.settle(answer));
            }
            Read::PlayerGames { name, page, reply } => {
                let answer = crate::db::history::player_games_pg(client, &name, page);
                let _ = reply.send(conn.settle(answer));
            }
            Read::StoredGame { game_id, reply } => {
                let answer = crate::db::history::stored_game_pg(client, &game_id);
                let _ = reply.send(conn.settle(answer));
            }
        }
    }
}

pub(super) fn leaderboard(c: &mut Client, k: &mut Cache, page: Page) -> DbResult<Vec<LeaderRow>> {
    // Ties by name whatever its case, as SQLite's NOCASE column orders them. The
    // computer's accounts (`bots`) play unrated only: not listed.
    let select = k.get(
        c,
        "SELECT name, rating, wins, losses, draws,
                (SELECT game_id FROM rating_history h WHERE h.account_id = accounts.id
                 ORDER BY at DESC, game_id DESC LIMIT 1)
         FROM accounts
         WHERE NOT guest AND lower(name) NOT LIKE 'bot-%'
         ORDER BY rating DESC, lower(name), name LIMIT $1 OFFSET $2",
    )?;
    let count =
        |row: &postgres::Row, i: usize| u32::try_from(row.get::<_, i64>(i)).unwrap_or(u32::MAX);
    Ok(
        c.query(&select, &[&i64::from(page.limit), &i64::from(page.offset)])?
            .iter()
            .map(|row| LeaderRow {
                name: row.get(0),
                rating: row.get(1),
                wins: count(row, 2),
                losses: count(row, 3),
                draws: count(row, 4),
                last_game: row.get(5),
            })
            .collect(),
    )
}

pub(super) fn player_page(
    c: &mut Client,
    k: &mut Cache,
    name: &str,
    page: Page,
) -> DbResult<Option<PlayerPage>> {
    let Some(account) = by_name(c, k, name)?.filter(|a| !a.guest) else {
        return Ok(None);
    };
    let select = k.get(
        c,
        r#"SELECT game_id, "before", "after", at FROM rating_history
           WHERE account_id = $1 ORDER BY at DESC, game_id DESC LIMIT $2 OFFSET $3"#,
    )?;
    let history = c
        .query(
            &select,
            &[&account.id, &i64::from(page.limit), &i64::from(page.offset)],
        )?
        .iter()
        .map(|row| HistoryRow {
            game_id: row.get(0),
            before: row.get(1),
            after: row.get(2),
            at: row.get::<_, i64>(3).max(0) as u64,
        })
        .collect();
    Ok(Some(PlayerPage {
        name: account.name,
        rating: account.rating,
        wins: account.wins,
        losses: account.losses,
        draws: account.draws,
        history,
    }))
}

pub(super) fn stored_record(
    c: &mut Client,
    k: &mut Cache,
    game_id: &GameId,
) -> DbResult<Option<serde_json::Value>> {
    let select = k.get(c, "SELECT record FROM games WHERE id = $1")?;
    match c.query_opt(&select, &[&game_id.to_string()])? {
        Some(row) => stored::to_json(game_id, row.get::<_, &[u8]>(0)).map(Some),
        None => Ok(None),
    }
}
