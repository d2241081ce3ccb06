//! Hibernated games' wake-up rows (`game_wakeups`), on SQLite: written and deleted by the
//! writer, read by the sweeper through the writer too (one indexed range a sweep); and
//! their logs moved out of the step-log file (`sleeping_logs`, read by key).

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use rusqlite::{params, Connection};

use super::DbResult;
use crate::record::AccountId;

/// A sweep's answer: the games due by then, earliest first, and when the next one after
/// them is due (Unix milliseconds), if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueWakeups {
    pub games: Vec<GameId>,
    pub next_ms: Option<u64>,
}

/// A hibernated game as its row keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sleeper {
    pub game_id: GameId,
    pub due_ms: u64,
    pub seats: SeatPair<AccountId>,
    /// How the listings show it while it sleeps (`None` for a row written without one).
    pub summary: Option<LiveGame>,
}

/// Wall milliseconds as stored: a far-off "never" (`u64::MAX`) is the largest `i64`.
pub(super) fn ms_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A sleeping game's summary as stored (a MessagePack map, as on the wire).
pub(super) fn summary_sql(summary: &Option<LiveGame>) -> Option<Vec<u8>> {
    rmp_serde::to_vec_named(summary.as_ref()?).ok()
}

/// A stored summary; one that does not decode is none (the game is not listed while it
/// sleeps).
pub(super) fn summary_from_sql(bytes: Option<Vec<u8>>) -> Option<LiveGame> {
    rmp_serde::from_slice(&bytes?).ok()
}

/// The wake-up row, and the game's log if given (`hibernation::encode_log`).
pub(super) fn hibernate(conn: &Connection, sleeper: &Sleeper, log: Option<&[u8]>) -> DbResult<()> {
    if let Some(steps) = log {
        conn.prepare_cached(
            "INSERT INTO sleeping_logs (game_id, steps) VALUES (?1, ?2)
             ON CONFLICT (game_id) DO UPDATE SET steps = excluded.steps",
        )?
        .execute(params![sleeper.game_id.to_string(), steps])?;
    }
    conn.prepare_cached(
        "INSERT INTO game_wakeups (game_id, due_ms, one_id, two_id, summary)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (game_id) DO UPDATE SET due_ms = excluded.due_ms, summary = excluded.summary",
    )?
    .execute(params![
        sleeper.game_id.to_string(),
        ms_sql(sleeper.due_ms),
        sleeper.seats.one,
        sleeper.seats.two,
        summary_sql(&sleeper.summary),
    ])?;
    Ok(())
}

pub(super) fn woken(conn: &Connection, game_id: &GameId) -> DbResult<()> {
    let id = game_id.to_string();
    conn.prepare_cached("DELETE FROM game_wakeups WHERE game_id = ?1")?
        .execute([&id])?;
    conn.prepare_cached("DELETE FROM sleeping_logs WHERE game_id = ?1")?
        .execute([&id])?;
    Ok(())
}

/// The moved logs of those of `games` that have one, by key.
pub(super) fn sleeping_logs(
    conn: &Connection,
    games: &[GameId],
) -> DbResult<Vec<(GameId, Vec<u8>)>> {
    let mut select = conn.prepare_cached("SELECT steps FROM sleeping_logs WHERE game_id = ?1")?;
    let mut logs = Vec::new();
    for game_id in games {
        let mut rows = select.query([game_id.to_string()])?;
        if let Some(row) = rows.next()? {
            logs.push((*game_id, row.get(0)?));
        }
    }
    Ok(logs)
}

/// Whether the game's log is in `sleeping_logs` (at startup: then the step-log file's
/// frames of the game, if any, are older or the same, and are not restored).
pub(super) fn has_sleeping_log(conn: &Connection, game_id: &GameId) -> DbResult<bool> {
    let found = conn
        .prepare_cached("SELECT 1 FROM sleeping_logs WHERE game_id = ?1")?
        .exists([game_id.to_string()])?;
    Ok(found)
}

/// At most `limit` games due by `now_ms`, earliest first, and the next due after them.
pub(super) fn due(conn: &Connection, now_ms: u64, limit: usize) -> DbResult<DueWakeups> {
    let mut games = Vec::new();
    let mut next_ms = None;
    let mut select =
        conn.prepare_cached("SELECT game_id, due_ms FROM game_wakeups ORDER BY due_ms LIMIT ?1")?;
    let mut rows = select.query([i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1)])?;
    while let Some(row) = rows.next()? {
        let due = u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0);
        if due > now_ms || games.len() == limit {
            next_ms = Some(due);
            break;
        }
        if let Ok(game_id) = row.get::<_, String>(0)?.parse::<GameId>() {
            games.push(game_id);
        }
    }
    Ok(DueWakeups { games, next_ms })
}

pub(super) fn sleepers(conn: &Connection) -> DbResult<Vec<Sleeper>> {
    let mut select =
        conn.prepare_cached("SELECT game_id, due_ms, one_id, two_id, summary FROM game_wakeups")?;
    let rows = select.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, AccountId>(2)?,
            row.get::<_, AccountId>(3)?,
            row.get::<_, Option<Vec<u8>>>(4)?,
        ))
    })?;
    let mut sleepers = Vec::new();
    for row in rows {
        let (id, due, one, two, summary) = row?;
        if let Ok(game_id) = id.parse::<GameId>() {
            sleepers.push(Sleeper {
                game_id,
                due_ms: u64::try_from(due).unwrap_or(0),
                seats: SeatPair::new(one, two),
                summary: summary_from_sql(summary),
            });
        }
    }
    Ok(sleepers)
}
