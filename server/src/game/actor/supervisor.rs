//! A crashed game still ends by the rules.
//!
//! The actor runs in its own task; a second task awaits it. If the actor panics, its state is
//! gone, so the actor keeps a small [`Shared`] copy of what an ending needs (who is listening,
//! the last `seq`, the clocks and rounds so far) behind a std `Mutex`: it is locked only for
//! short synchronous sections, never across an `.await`. The supervisor then sends everyone a
//! `GameOver` (no winner, `server_aborted`, unrated), frees the seats and records the game.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use elementals_protocol::messages::{Clocks, EndReason, GameResult, SeatPair, ServerMsg};
use elementals_protocol::wire;
use tokio::task::JoinHandle;

use super::fanout::Fanout;
use super::{finished_game, spectators_left, unix_ms};
use crate::game::state::GameState;
use crate::game::{GameServices, GameSetup};
use crate::record::{GameRecord, RoundLog};

#[derive(Debug, Default)]
pub(in crate::game) struct Shared {
    pub fanout: Fanout,
    pub seq: u64,
    pub clocks_ms: SeatPair<u64>,
    pub rounds: Vec<RoundLog>,
    /// The registry has been told that the game is over.
    pub finished: bool,
    /// A finished game's record while the database does not have it yet.
    pub unrecorded: Option<Arc<GameRecord>>,
}

impl Shared {
    /// Catches up with the game after a batch of events.
    pub fn mirror(&mut self, state: &GameState, now: Instant) {
        self.seq = state.seq();
        self.clocks_ms = state.clocks_ms(now);
        let known = self.rounds.len();
        if let Some(new) = state.rounds().get(known..) {
            self.rounds.extend_from_slice(new);
        }
    }
}

/// Locks the shared part; a poisoned lock (the actor panicked while holding it) is still
/// consistent enough to end the game with.
pub(in crate::game) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Awaits the actor's task; if it panicked, ends the game as `server_aborted`.
pub(in crate::game) async fn supervise(
    task: JoinHandle<()>,
    setup: GameSetup,
    services: GameServices,
    shared: Arc<Mutex<Shared>>,
    started_at: u64,
) {
    let Err(err) = task.await else { return };
    if !err.is_panic() {
        // Cancelled: the runtime is shutting down, and with it every game.
        return;
    }
    let game_id = setup.game_id;
    tracing::error!(%game_id, "game task panicked; ending the game as server-aborted");
    let result = GameResult {
        winner: None,
        reason: EndReason::ServerAborted,
    };
    let (already_finished, record, spectators) = {
        let mut shared = lock(&shared);
        let already_finished = std::mem::replace(&mut shared.finished, true);
        let record = if already_finished {
            shared.unrecorded.take()
        } else {
            shared.seq += 1;
            let over = ServerMsg::GameOver {
                game_id,
                seq: shared.seq,
                result,
                rated: false,
                clocks: Clocks {
                    one_ms: shared.clocks_ms.one,
                    two_ms: shared.clocks_ms.two,
                    running: SeatPair::new(false, false),
                },
            };
            let frame = Bytes::from(wire::encode(&over));
            // Spectators get what the game had left for them, then the end; a lagging
            // one gets the GameOver itself in place of a snapshot.
            shared.fanout.broadcast(std::slice::from_ref(&frame), None);
            shared.fanout.deliver_all(|| frame.clone());
            Some(Arc::new(GameRecord {
                game_id,
                variant: setup.variant,
                time_control: setup.time_control,
                rated: setup.rated,
                players: setup.players.clone(),
                started_at,
                ended_at: unix_ms(),
                result,
                rounds: shared.rounds.clone(),
                final_clocks_ms: shared.clocks_ms,
            }))
        };
        let spectators = std::mem::take(&mut shared.fanout).spectator_count();
        (already_finished, record, spectators)
    };
    spectators_left(&services, spectators);
    if !already_finished {
        services
            .registry
            .finish_game(game_id, finished_game(&setup).0);
        services.metrics.live_games.fetch_sub(1, Relaxed);
        services.metrics.games_finished.fetch_add(1, Relaxed);
    }
    if let Some(record) = record {
        if let Err(error) = services.db.record_game(record).await {
            tracing::error!(%game_id, %error, "could not record the aborted game");
        }
    }
}
