//! The `game_log` table, where earlier versions of the server kept the logs of games in
//! progress (one row of JSON, a `record::LogStep`, per step). The journal (`journal.rs`)
//! holds them now; at open, whatever the table still holds is read here, carried into the
//! journal and the table emptied, so that a game in progress survives the upgrade.

use elementals_protocol::messages::GameId;
use rusqlite::Connection;

use super::DbResult;
use crate::record::{GameLog, LogStep};

/// Deletes these games' logs (they are in the journal now). A log that could not be
/// decoded stays, as it always did, for an operator to look at.
pub(super) fn clear(conn: &Connection, logs: &[GameLog]) -> DbResult<()> {
    let mut delete = conn.prepare_cached("DELETE FROM game_log WHERE game_id = ?1")?;
    for log in logs {
        delete.execute([log.game_id.to_string()])?;
    }
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
