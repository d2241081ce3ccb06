//! Startup: every game the log says is unfinished comes back where it stood. In cluster
//! mode the same happens to each game this node claims from a node whose lease lapsed.
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
//! - a game that was hibernated (it has a wake-up row) stays asleep: its players are
//!   seated again and nothing else is loaded; the sweeper or a command wakes it;
//! - a log that cannot be replayed ends its game as `server_aborted`, unrated, with the
//!   rounds the log holds: no one is blamed, and no one is left seated in a broken game.

use std::sync::Arc;

use elementals_protocol::messages::{EndReason, GameResult, SeatPair};
use tokio::time::Instant;

use super::actor::{spawn_restored, timing};
use super::state::GameState;
use super::{GameServices, GameSetup};
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
    /// Hibernated games, left asleep: only their players are seated again.
    pub hibernated: usize,
}

/// Restores every unfinished game; call before accepting connections.
pub async fn restore_games(services: &GameServices) -> DbResult<Restored> {
    // In cluster mode the sleeping games are the cluster's: every node knows them all.
    let sleepers = services.db.sleepers().await?;
    for sleeper in &sleepers {
        let summary = sleeper.summary.clone();
        services
            .registry
            .insert_dormant(sleeper.game_id, sleeper.seats, summary);
    }
    let logs = services.db.unfinished_games().await?;
    let restored = restore_logs(logs, services).await;
    Ok(Restored {
        hibernated: sleepers.len(),
        ..restored
    })
}

/// Restores the games of `logs` as at startup: in cluster mode, the games this node has
/// just claimed from a node whose lease lapsed.
pub async fn restore_logs(logs: Vec<GameLog>, services: &GameServices) -> Restored {
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
    restored
}

pub(super) enum Unrestorable {
    /// The game's end was logged: here is its record.
    Ended(Arc<GameRecord>),
    /// The log does not replay: the game ends as server-aborted with this record.
    Broken(Arc<GameRecord>, String),
    /// Not even the game's setup can be read.
    Unreadable(String),
}

fn restore(log: GameLog, services: &GameServices) -> Result<(), Unrestorable> {
    let (state, setup) = rebuild(&log, services)?;
    let game_id = setup.game_id;
    spawn_restored(state, setup, services.clone());
    tracing::info!(%game_id, steps = log.steps.len(), "game restored");
    Ok(())
}

/// The game of `log` as it stands now: after a restart (its round under way voided, held
/// for the players to return) or, if it went to sleep after its last step, as it slept
/// (`GameState::woken`: its round kept, its clocks run on since, and nothing due before a
/// grace period after the restart if it slept across one). A game that reached the
/// bound on rounds ends there, drawn: its record is returned to be stored.
pub(super) fn rebuild(
    log: &GameLog,
    services: &GameServices,
) -> Result<(GameState, GameSetup), Unrestorable> {
    let unreadable = |e: LogRecordError| Unrestorable::Unreadable(e.to_string());
    if let Some(record) = log.ended().map_err(unreadable)? {
        return Err(Unrestorable::Ended(Arc::new(record)));
    }
    let (setup, started_at) = log.start().map_err(unreadable)?;
    let setup = setup.clone();
    let broken = |e: super::state::ReplayError| {
        Unrestorable::Broken(Arc::new(aborted(&setup, started_at, log)), e.to_string())
    };
    let timing = timing(services, &setup);
    let now = Instant::now().into_std();
    let mut state = match log.steps.last() {
        Some(slept) if log.hibernated() => {
            // Replayed at the instant it went to sleep, by the server's clock.
            let base = services.clock.instant_at(slept.at).into_std();
            let mut state = GameState::replay(&log.steps, timing, base).map_err(broken)?;
            let restarted = services.restarted_ms.filter(|&ms| slept.at < ms);
            let restarted = restarted.map(|ms| services.clock.instant_at(ms).into_std());
            state.woken(slept, base, restarted);
            state
        }
        _ => {
            let mut state = GameState::replay(&log.steps, timing, now).map_err(broken)?;
            state.resume(now, services.clock.now_ms());
            state
        }
    };
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
    Ok((state, setup))
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
    setup.record(started_at, ended_at, result, log.rounds(), banks_ms)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use elementals_protocol::messages::{EndReason, GameId, GameResult, SeatPair};
    use elementals_protocol::rules::{Seat, Variant};
    use elementals_protocol::TimeControl;

    use super::{restore_games, Restored};
    use crate::db::Db;
    use crate::game::{GameServices, GameSettings, GameSetup};
    use crate::metrics::Metrics;
    use crate::record::{LogEntry, LogStep, RecordPlayer};
    use crate::registry::Registry;

    fn step(step: u64, entry: LogEntry) -> LogStep {
        LogStep {
            step,
            at: 1_700_000_000_000 + step,
            banks_us: SeatPair::new(60_000_000, 60_000_000),
            seq: step,
            entry,
        }
    }

    /// A log whose end is logged, of a game with `player` in both seats.
    fn against_itself(player: RecordPlayer) -> (GameId, Vec<LogStep>) {
        let game_id = GameId(uuid::Uuid::new_v4());
        let setup = GameSetup {
            game_id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
            players: SeatPair::new(player.clone(), player),
        };
        let steps = vec![
            step(
                0,
                LogEntry::Start {
                    setup,
                    started_at: 1_700_000_000_000,
                },
            ),
            step(
                1,
                LogEntry::End {
                    result: GameResult {
                        winner: Some(Seat::One),
                        reason: EndReason::Resignation,
                    },
                    ended_at: 1_700_000_000_001,
                    final_clocks_ms: SeatPair::new(60_000, 60_000),
                },
            ),
        ];
        (game_id, steps)
    }

    fn services(db: &Db) -> GameServices {
        GameServices::new(
            db.clone(),
            Arc::new(Registry::new()),
            Arc::new(Metrics::default()),
            GameSettings::default(),
        )
    }

    #[tokio::test]
    async fn a_logged_game_of_an_account_against_itself_is_recorded_once_not_at_every_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("elementals.db");
        let db = Db::open(&path).unwrap();
        let ann = db
            .create_account("ann".into(), "hash".into())
            .await
            .unwrap();
        let player = RecordPlayer {
            account_id: ann.id,
            name: ann.name.clone(),
            guest: false,
            rating: ann.rating,
        };
        let (game_id, steps) = against_itself(player);
        db.append_log(game_id, &steps).await.unwrap();

        let restored = restore_games(&services(&db)).await.unwrap();
        assert_eq!(
            restored,
            Restored {
                recorded: 1,
                ..Restored::default()
            }
        );
        assert!(db.game_record(game_id.to_string()).await.unwrap().is_some());
        db.shutdown().await.unwrap();

        // The next start finds nothing left to do: the log went with the record.
        let db = Db::open(&path).unwrap();
        assert!(db.unfinished_games().await.unwrap().is_empty());
        assert_eq!(
            restore_games(&services(&db)).await.unwrap(),
            Restored::default()
        );
        let ann = db.account_by_id(ann.id).await.unwrap().unwrap();
        assert_eq!((ann.rating, ann.wins, ann.losses), (1.0, 0, 0));
        db.shutdown().await.unwrap();
    }
}
