//! The log of games in progress: appended step by step, read back once at startup, and
//! deleted in the transaction that stores the finished game's record.
//!
//! Each step is one row of JSON (`record::LogStep`), encoded by the caller so that the
//! writer thread only writes. A step is durable once the transaction holding it commits;
//! the writer groups the appends of many games into one transaction (see `writer`).

use elementals_protocol::messages::GameId;
use rusqlite::Connection;

use super::{DbError, DbResult};
use crate::record::{GameLog, LogStep};

/// One encoded step: its number and its JSON.
pub(super) type Row = (u64, String);

/// Encodes steps for `append` (on the caller's thread, not the writer's).
pub(super) fn encode(steps: &[LogStep]) -> DbResult<Vec<Row>> {
    steps
        .iter()
        .map(|step| {
            serde_json::to_string(step)
                .map(|json| (step.step, json))
                .map_err(|e| DbError::Sqlite(format!("encoding a game log step: {e}")))
        })
        .collect()
}

/// Appends steps in one statement, so that they are stored all together or, if one of
/// their step numbers is already logged for the game (a bug), not at all: a failed
/// statement undoes only itself, and the transaction around it goes on.
pub(super) fn append(conn: &Connection, game_id: &GameId, rows: &[Row]) -> DbResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let values = vec!["(?, ?, ?)"; rows.len()].join(", ");
    let sql = format!("INSERT INTO game_log (game_id, step, entry) VALUES {values}");
    let game_id = game_id.to_string();
    let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(rows.len() * 3);
    let steps: Vec<i64> = rows
        .iter()
        .map(|(step, _)| i64::try_from(*step).unwrap_or(i64::MAX))
        .collect();
    for ((_, json), step) in rows.iter().zip(&steps) {
        params.push(&game_id);
        params.push(step);
        params.push(json);
    }
    conn.prepare_cached(&sql)?.execute(params.as_slice())?;
    Ok(())
}

/// Deletes a game's log (its record is being stored in the same transaction).
pub(super) fn clear(conn: &Connection, game_id: &str) -> DbResult<()> {
    conn.prepare_cached("DELETE FROM game_log WHERE game_id = ?1")?
        .execute([game_id])?;
    Ok(())
}

/// The logs of every unfinished game, in step order. First deletes the logs of games that
/// already have a record (left by nothing this server does, but harmless to mend). A game
/// whose log cannot be decoded is left in place, reported and skipped.
pub(super) fn load(conn: &mut Connection) -> DbResult<Vec<GameLog>> {
    let tx = conn.transaction()?;
    tx.execute(
        "DELETE FROM game_log WHERE game_id IN (SELECT id FROM games)",
        [],
    )?;
    tx.commit()?;
    let mut select = conn.prepare("SELECT game_id, entry FROM game_log ORDER BY game_id, step")?;
    let mut rows = select.query([])?;
    let mut logs: Vec<GameLog> = Vec::new();
    let mut broken: Option<String> = None;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let json: String = row.get(1)?;
        if broken.as_deref() == Some(id.as_str()) {
            continue;
        }
        let decoded = id
            .parse::<GameId>()
            .map_err(|e| e.to_string())
            .and_then(|game_id| {
                serde_json::from_str::<LogStep>(&json)
                    .map(|step| (game_id, step))
                    .map_err(|e| e.to_string())
            });
        match decoded {
            Ok((game_id, step)) => match logs.last_mut() {
                Some(log) if log.game_id == game_id => log.steps.push(step),
                _ => logs.push(GameLog {
                    game_id,
                    steps: vec![step],
                }),
            },
            Err(error) => {
                tracing::error!(game_id = %id, %error, "cannot decode a game's log; skipping the game");
                if logs.last().is_some_and(|l| l.game_id.to_string() == id) {
                    logs.pop();
                }
                broken = Some(id);
            }
        }
    }
    Ok(logs)
}
