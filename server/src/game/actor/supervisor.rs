//! A crashed game still ends by the rules.
//!
//! The actor runs in its own task; a second task awaits it. If the actor panics, its state is
//! gone, so the actor keeps a small [`Shared`] copy of what an ending needs (who is listening,
//! the last `seq`, the clocks and rounds so far) behind a std `Mutex`: it is locked only for
//! short synchronous sections, never across an `.await`. The supervisor then frees the seats
//! and records the game. A game whose end is already in its log ended that way: the players
//! saw (or now get) its `game_over`, and its record, ratings and all, is what is stored.
//! Otherwise it sends everyone a `GameOver` (no winner, `server_aborted`, unrated) and
//! records that.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use elementals_protocol::messages::{Clocks, EndReason, GameId, GameResult, SeatPair, ServerMsg};
use elementals_protocol::wire;
use tokio::task::JoinHandle;

use super::players::Players;
use super::AnswerTo;
use super::{finished_game, spectators_left, unix_ms};
use crate::bus::{self, Bus};
use crate::game::state::GameState;
use crate::game::{GameServices, GameSetup};
use crate::record::{GameRecord, RoundLog};

#[derive(Debug, Default)]
pub(in crate::game) struct Shared {
    /// The seats' connections (the spectators are the game's topic's, on the bus).
    pub players: Players,
    pub seq: u64,
    pub clocks_ms: SeatPair<u64>,
    pub rounds: Vec<RoundLog>,
    /// The registry has been told that the game is over.
    pub finished: bool,
    /// A finished game's record while the database does not have it yet.
    pub unrecorded: Option<Arc<GameRecord>>,
    /// The game's record once its `End` step is logged: from then on that is how the game
    /// ended, whatever happens to the task.
    pub ended: Option<Arc<GameRecord>>,
    /// The events that came with the logged end, until they are published.
    pub unpublished: Option<Vec<ServerMsg>>,
    /// The reply owed to the move that ended the game, and its frame, while the end is
    /// logged and published. Held here rather than on the task's stack, whose unwinding
    /// would answer it `unknown_game` (`AnswerTo`'s drop): a move whose end is logged was
    /// handled, and is answered as such.
    pub owed: Option<(AnswerTo, Bytes)>,
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

/// Awaits the actor's task; if it panicked, ends the game: by its logged end if it had one
/// (what its players saw, or were about to see, in `game_over`), else as `server_aborted`.
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
    let bus = services.registry.bus();
    let (already_finished, record, players, mut seq) = {
        let mut shared = lock(&shared);
        let already_finished = std::mem::replace(&mut shared.finished, true);
        let record = if already_finished {
            tracing::error!(%game_id, "game task panicked after the game ended");
            shared.unrecorded.take()
        } else if let Some(record) = shared.ended.take() {
            // The end is in the log: it stands. Its events go out if the panic
            // came before they did.
            tracing::error!(%game_id, "game task panicked after its end was logged; recording that end");
            // (Once the events are out, the actor has its reply back: `owed` is then empty.)
            let owed = shared.owed.take();
            if let Some(events) = shared.unpublished.take() {
                if let Some((answer, frame)) = owed {
                    // First, as the game sends a move's reply before its events.
                    answer.reply(frame);
                }
                publish_end(&*bus, game_id, &mut shared, &events);
            }
            Some(record)
        } else {
            tracing::error!(%game_id, "game task panicked; ending the game as server-aborted");
            Some(Arc::new(server_aborted(
                &*bus,
                &mut shared,
                &setup,
                started_at,
            )))
        };
        let players = std::mem::take(&mut shared.players);
        (already_finished, record, players, shared.seq)
    };
    if !already_finished {
        services
            .registry
            .finish_game(game_id, finished_game(&setup).0);
        services.metrics.live_games.fetch_sub(1, Relaxed);
        services.metrics.games_finished.fetch_add(1, Relaxed);
    }
    if let Some(record) = record {
        match services.db.record_game(record).await {
            Ok(Some(ratings)) => {
                // `game_over.rated` promised this event once the ratings are stored.
                seq += 1;
                let update = ServerMsg::RatingUpdate {
                    game_id,
                    seq,
                    ratings,
                };
                let frame = Bytes::from(wire::encode(&update));
                let frames = std::slice::from_ref(&frame);
                players.send(&*bus, frames, None);
                bus.publish(game_id, frames);
                bus::deliver_all(&*bus, game_id, || frame.clone());
            }
            Ok(None) => {}
            Err(error) => tracing::error!(%game_id, %error, "could not record the game"),
        }
    }
    spectators_left(&services, bus.close_topic(game_id));
}

/// Sends the logged end's events (the last is its `game_over`) to everyone.
fn publish_end(bus: &dyn Bus, game_id: GameId, shared: &mut Shared, events: &[ServerMsg]) {
    let frames: Vec<Bytes> = events
        .iter()
        .map(|e| Bytes::from(wire::encode(e)))
        .collect();
    if let Some(seq) = events.iter().filter_map(ServerMsg::seq).max() {
        shared.seq = shared.seq.max(seq);
    }
    shared.players.send(bus, &frames, None);
    bus.publish(game_id, &frames);
    if let Some(last) = frames.last() {
        bus::deliver_all(bus, game_id, || last.clone());
    }
}

/// Sends everyone a `game_over` (no winner, `server_aborted`, unrated) and returns the
/// game's record from what `shared` knows of it.
fn server_aborted(
    bus: &dyn Bus,
    shared: &mut Shared,
    setup: &GameSetup,
    started_at: u64,
) -> GameRecord {
    let result = GameResult {
        winner: None,
        reason: EndReason::ServerAborted,
    };
    shared.seq += 1;
    let over = ServerMsg::GameOver {
        game_id: setup.game_id,
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
    // Spectators get what the game had left for them, then the end; a lagging one gets the
    // GameOver itself in place of a snapshot.
    let frames = std::slice::from_ref(&frame);
    shared.players.send(bus, frames, None);
    bus.publish(setup.game_id, frames);
    bus::deliver_all(bus, setup.game_id, || frame.clone());
    setup.record(
        started_at,
        unix_ms(),
        result,
        shared.rounds.clone(),
        shared.clocks_ms,
    )
}
