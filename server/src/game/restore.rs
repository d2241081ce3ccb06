//! Startup: every game the log says is unfinished comes back where it stood.
//!
//! For each game in the log, before the server accepts connections:
//! - its end is logged: it is recorded (exactly once: `record_game` is idempotent per game
//!   id, and deleting the log is part of the same transaction), ratings and all, its record
//!   rebuilt from the log (`GameLog::ended`: the `End` step holds only the outcome);
//! - otherwise its log is replayed through the rules (`GameState::replay`), the game is
//!   `resume`d (the round under way voided, the clocks held with the banks they had at the
//!   last logged step) and its actor started, with both seats in the registry so that the
//!   players rejoin it by signing in again and spectators can watch it again;
//! - a replayed game that has reached the bound on rounds (`--max-rounds`, which may have
//!   been lowered since) ends there, drawn, and is recorded as above;
//! - a log that cannot be replayed ends its game as `server_aborted`, unrated, with the
//!   rounds the log holds: no one is blamed, and no one is left seated in a broken game.

use std::sync::Arc;

use elementals_protocol::messages::{EndReason, GameResult, SeatPair};
use tokio::time::Instant;

use super::actor::{spawn_restored, timing};
use super::state::GameState;
use super::{GameServices, GameSetup};
use crate::clock::unix_ms;
use crate::db::DbResult;
use crate::record::{GameLog, GameRecord, LogRecordError};

/// What startup did with the logged games.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    /// Games in progress, running again.
    pub resumed: usize,
    /// Games whose end was logged but not recorded, recorded now.
    pub recorded: usize,
    /// Games whose log could not be replayed, ended as `server_aborted`.
    pub aborted: usize,
}

/// Restores every unfinished game; call before accepting connections.
pub async fn restore_games(services: &GameServices) -> DbResult<Restored> {
    let logs = services.db.unfinished_games().await?;
    let mut restored = Restored::default();
    let mut to_record = Vec::new();
    for log in logs {
        let game_id = log.game_id;
        match restore(log, services) {
            Ok(()) => restored.resumed += 1,
            Err(Unrestorable::Ended(record)) => {
                restored.recorded += 1;
                to_record.push(record);
            }
            Err(Unrestorable::Broken(record, error)) => {
                tracing::error!(%game_id, %error, "cannot replay the game's log; aborting it");
                restored.aborted += 1;
                to_record.push(record);
            }
            Err(Unrestorable::Unreadable(error)) => {
                tracing::error!(%game_id, %error, "cannot read the game's log; leaving it");
            }
        }
    }
    // All at once, so that the writer stores them in one transaction.
    let writes = to_record.into_iter().map(|record| {
        let db = services.db.clone();
        async move { (record.game_id, db.record_game(record).await) }
    });
    for (game_id, written) in futures::future::join_all(writes).await {
        if let Err(error) = written {
            tracing::error!(%game_id, %error, "could not record a logged game");
        }
    }
    Ok(restored)
}

enum Unrestorable {
    /// The game's end was logged: here is its record.
    Ended(Arc<GameRecord>),
    /// The log does not replay: the game ends as server-aborted with this record.
    Broken(Arc<GameRecord>, String),
    /// Not even the game's setup can be read.
    Unreadable(String),
}

fn restore(log: GameLog, services: &GameServices) -> Result<(), Unrestorable> {
    let unreadable = |e: LogRecordError| Unrestorable::Unreadable(e.to_string());
    if let Some(record) = log.ended().map_err(unreadable)? {
        return Err(Unrestorable::Ended(Arc::new(record)));
    }
    let (setup, started_at) = log.start().map_err(unreadable)?;
    let setup = setup.clone();
    let now = Instant::now().into_std();
    let mut state = GameState::replay(&log.steps, timing(services, &setup), now).map_err(|e| {
        Unrestorable::Broken(Arc::new(aborted(&setup, started_at, &log)), e.to_string())
    })?;
    state.resume(now, unix_ms());
    let game_id = setup.game_id;
    // Nobody is attached to hear of it: the players find the game over when they return.
    if state.end_at_max_rounds(now, &mut Vec::new()) {
        let record = state.record().cloned();
        tracing::info!(%game_id, "restored game at the bound on rounds; ending it drawn");
        return record.map_or_else(
            || Err(Unrestorable::Unreadable("ended without a record".into())),
            |record| Err(Unrestorable::Ended(record)),
        );
    }
    spawn_restored(state, setup, services.clone());
    tracing::info!(%game_id, steps = log.steps.len(), "game restored");
    Ok(())
}

/// The record of a game ended by the server, from what its log holds.
fn aborted(setup: &GameSetup, started_at: u64, log: &GameLog) -> GameRecord {
    let last = log.steps.last();
    let banks_ms = last.map_or(SeatPair::default(), |s| s.banks_us.map(|us| us / 1000));
    let result = GameResult {
        winner: None,
        reason: EndReason::ServerAborted,
    };
    let ended_at = last.map_or(started_at, |s| s.at);
    GameRecord::new(setup, started_at, ended_at, result, log.rounds(), banks_ms)
}
