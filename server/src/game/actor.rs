//! The game actor: one tokio task per game, owning all of its state.
//!
//! Commands arrive on the bounded channel behind [`GameHandle`]; the handling is synchronous
//! code around the pure [`GameState`], which decides everything. The actor adds only time
//! (one `sleep_until` on the game's next deadline), fan-out (each event encoded once, the
//! bytes shared by every recipient, see `fanout`) and the end of the game: the registry is
//! told at once so both players may queue again, then the record goes to the database while
//! late `sync` and `watch` requests are still answered for a short while.
//!
//! A panic inside the actor is caught by its supervisor task (`supervisor`), which ends the
//! game as `server_aborted`; other games never notice.

mod fanout;
mod supervisor;
#[cfg(test)]
mod tests;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use elementals_protocol::messages::{GameId, GameSnapshot, SeatPair, ServerMsg};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::Seat;
use elementals_protocol::wire;
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use super::state::{GameState, Timing};
use super::{GameCmd, GameHandle, GameServices, GameSetup, GAME_CHANNEL_CAPACITY};
use crate::db::DbResult;
use crate::outbox::Outbox;
use crate::registry::FinishedGame;
use supervisor::{lock, Shared};

/// How long a finished game keeps answering `sync` and `watch` (and waits for its record to
/// be written) before its task ends.
const LINGER: Duration = Duration::from_secs(10);

/// Spectator counts go to the players at most this often.
const SPECTATOR_BATCH: Duration = Duration::from_secs(1);

pub(super) fn spawn(setup: GameSetup, services: GameServices) -> GameHandle {
    // The capacity, and why it suffices, is documented at GAME_CHANNEL_CAPACITY.
    let (tx, rx) = mpsc::channel(GAME_CHANNEL_CAPACITY);
    let handle = GameHandle::new(setup.game_id, tx);
    let started_at = unix_ms();
    let timing = Timing {
        first_commit_window: services.settings.first_commit_window,
        grace: services.settings.grace(&setup.time_control),
    };
    let mut events = Vec::new();
    let now = Instant::now().into_std();
    let state = GameState::new(&setup, started_at, now, timing, &mut events);
    let seats = SeatPair::new(setup.players.one.account_id, setup.players.two.account_id);
    services
        .registry
        .insert_game(handle.clone(), state.summary(0), seats);
    services.metrics.live_games.fetch_add(1, Relaxed);
    services.metrics.games_started.fetch_add(1, Relaxed);
    let shared = Arc::new(Mutex::new(Shared::default()));
    let actor = Actor {
        game_id: setup.game_id,
        state,
        rx,
        rx_open: true,
        services: services.clone(),
        shared: Arc::clone(&shared),
        finished: finished_game(&setup),
        announce_at: None,
        announced: 0,
    };
    let task = tokio::spawn(actor.run(events));
    tokio::spawn(supervisor::supervise(
        task, setup, services, shared, started_at,
    ));
    handle
}

struct Actor {
    game_id: GameId,
    state: GameState,
    rx: mpsc::Receiver<GameCmd>,
    /// False once every handle is gone; the game then plays out on its clocks alone.
    rx_open: bool,
    services: GameServices,
    /// Recipients and what a crash would need; see `supervisor`.
    shared: Arc<Mutex<Shared>>,
    finished: FinishedGame,
    /// When the pending spectator-count announcement is due.
    announce_at: Option<Instant>,
    /// The count the players last heard.
    announced: u32,
}

impl Actor {
    async fn run(mut self, first: Vec<ServerMsg>) {
        self.publish(first, Instant::now());
        while self.state.result().is_none() {
            let deadline = self.state.next_deadline().map(Instant::from_std);
            tokio::select! {
                // Commands first: each one settles passed deadlines itself before acting,
                // judged by the clock at the moment it is handled.
                biased;
                cmd = self.rx.recv(), if self.rx_open => self.on_cmd(cmd),
                () = sleep_until_some(deadline) => self.on_deadline(),
                () = sleep_until_some(self.announce_at) => self.announce_spectators(),
            }
        }
        self.after_game().await;
    }

    /// The game is over: free the seats now, then record it while still answering.
    async fn after_game(mut self) {
        self.services
            .registry
            .finish_game(self.game_id, self.finished.clone());
        self.services.metrics.live_games.fetch_sub(1, Relaxed);
        self.services.metrics.games_finished.fetch_add(1, Relaxed);
        let record = self.state.record().cloned();
        {
            let mut shared = lock(&self.shared);
            shared.finished = true;
            shared.unrecorded = record.clone();
        }
        let db = self.services.db.clone();
        let write = async move {
            match record {
                Some(record) => Some(db.record_game(record).await),
                None => None,
            }
        };
        tokio::pin!(write);
        let mut written = false;
        let linger_until = Instant::now() + LINGER;
        while !written || self.rx_open {
            tokio::select! {
                biased;
                outcome = &mut write, if !written => {
                    written = true;
                    self.on_recorded(outcome);
                }
                cmd = self.rx.recv(), if self.rx_open => self.on_cmd(cmd),
                () = sleep_until_some(self.announce_at) => self.announce_spectators(),
                () = sleep_until(linger_until), if written => break,
            }
        }
        let spectators = std::mem::take(&mut lock(&self.shared).fanout).spectator_count();
        spectators_left(&self.services, spectators);
    }

    fn on_recorded(&mut self, outcome: Option<DbResult<Option<SeatPair<RatingChange>>>>) {
        lock(&self.shared).unrecorded = None;
        match outcome {
            Some(Ok(Some(ratings))) => {
                let update = self.state.rating_update(ratings);
                self.publish(vec![update], Instant::now());
            }
            Some(Ok(None)) | None => {}
            Some(Err(error)) => {
                let game_id = self.game_id;
                tracing::error!(%game_id, %error, "could not record the finished game");
            }
        }
    }

    fn on_cmd(&mut self, cmd: Option<GameCmd>) {
        let Some(cmd) = cmd else {
            self.rx_open = false;
            return;
        };
        let received = Instant::now();
        let now = received.into_std();
        let mut out = Vec::new();
        match cmd {
            GameCmd::Attach {
                seat,
                outbox,
                request_id,
                reply,
            } => {
                self.state.attach(seat, now, &mut out);
                // The new connection learns of its own arrival from the snapshot it gets.
                self.publish(out, received);
                let snapshot = self.snapshot();
                queue_snapshot(&outbox, request_id, &snapshot, Some(seat));
                lock(&self.shared).fanout.set_player(seat, Some(outbox));
                let _ = reply.send(Ok(snapshot));
            }
            GameCmd::Detach { seat, conn_id } => {
                {
                    let mut shared = lock(&self.shared);
                    if shared.fanout.player_conn(seat) != Some(conn_id) {
                        return;
                    }
                    shared.fanout.set_player(seat, None);
                }
                self.state.detach(seat, now, &mut out);
                self.publish(out, received);
            }
            GameCmd::Act {
                seat,
                action,
                reply,
            } => {
                let result = self.state.act(seat, action, now, &mut out);
                self.publish(out, received);
                let _ = reply.send(result);
            }
            GameCmd::Watch {
                outbox,
                request_id,
                reply,
            } => {
                self.state.tick(now, &mut out);
                self.publish(out, received);
                let added = lock(&self.shared).fanout.add_spectator(outbox.clone());
                if added {
                    self.services.metrics.spectators.fetch_add(1, Relaxed);
                    self.spectators_changed();
                }
                let snapshot = self.snapshot();
                queue_snapshot(&outbox, request_id, &snapshot, None);
                let _ = reply.send(Ok(snapshot));
            }
            GameCmd::Unwatch { conn_id } => {
                if lock(&self.shared).fanout.remove_spectator(conn_id) {
                    spectators_left(&self.services, 1);
                    self.spectators_changed();
                }
            }
            GameCmd::Snapshot { reply } => {
                self.state.tick(now, &mut out);
                self.publish(out, received);
                let _ = reply.send(Ok(self.snapshot()));
            }
            #[cfg(any(test, feature = "test-hooks"))]
            GameCmd::Panic => panic!("game {}: forced panic (test hook)", self.game_id),
        }
    }

    fn on_deadline(&mut self) {
        let now = Instant::now();
        let mut out = Vec::new();
        self.state.tick(now.into_std(), &mut out);
        self.publish(out, now);
    }

    /// Encodes each event once and queues it to everyone; `received` is when the command
    /// that caused them arrived (for the result-latency histogram).
    fn publish(&mut self, events: Vec<ServerMsg>, received: Instant) {
        if events.is_empty() {
            return;
        }
        let frames: Vec<Bytes> = events
            .iter()
            .map(|e| Bytes::from(wire::encode(e)))
            .collect();
        let now = Instant::now().into_std();
        let (delivery, spectators) = {
            let mut shared = lock(&self.shared);
            let count = shared.fanout.spectator_count();
            let state = &self.state;
            let resync = || {
                Bytes::from(wire::encode(&ServerMsg::Snapshot {
                    id: None,
                    snapshot: state.snapshot(now, count),
                    seat: None,
                }))
            };
            let delivery = shared.fanout.broadcast(&frames, resync);
            shared.mirror(state, now);
            (delivery, shared.fanout.spectator_count())
        };
        let metrics = Arc::clone(&self.services.metrics);
        metrics.messages_out.fetch_add(delivery.queued, Relaxed);
        if delivery.removed > 0 {
            spectators_left(&self.services, delivery.removed);
            self.spectators_changed();
        }
        let resolved = events
            .iter()
            .filter(|e| matches!(e, ServerMsg::RoundResult { .. }))
            .count() as u64;
        if resolved > 0 {
            metrics.rounds_resolved.fetch_add(resolved, Relaxed);
            metrics.observe_result_latency(received.elapsed());
            if self.state.result().is_none() {
                let summary = self.state.summary(spectators);
                self.services.registry.update_summary(summary);
            }
        }
    }

    fn snapshot(&self) -> GameSnapshot {
        let spectators = lock(&self.shared).fanout.spectator_count();
        self.state.snapshot(Instant::now().into_std(), spectators)
    }

    /// Schedules a spectator-count announcement, batching changes for a second.
    fn spectators_changed(&mut self) {
        if self.announce_at.is_none() {
            self.announce_at = Some(Instant::now() + SPECTATOR_BATCH);
        }
    }

    fn announce_spectators(&mut self) {
        self.announce_at = None;
        let shared = lock(&self.shared);
        let count = shared.fanout.spectator_count();
        if count == self.announced {
            return;
        }
        self.announced = count;
        let game_id = self.game_id;
        let frame = Bytes::from(wire::encode(&ServerMsg::Spectators { game_id, count }));
        let queued = shared.fanout.to_players(&frame);
        drop(shared);
        self.services
            .metrics
            .messages_out
            .fetch_add(queued, Relaxed);
        if self.state.result().is_none() {
            let summary = self.state.summary(count);
            self.services.registry.update_summary(summary);
        }
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the registry remembers of a finished game (for rematches).
fn finished_game(setup: &GameSetup) -> FinishedGame {
    FinishedGame {
        players: SeatPair::new(setup.players.one.account_id, setup.players.two.account_id),
        variant: setup.variant,
        time_control: setup.time_control,
        rated: setup.rated,
        rematch_offers: SeatPair::default(),
    }
}

/// Lowers the spectator gauge for spectators this game no longer has.
fn spectators_left(services: &GameServices, count: u32) {
    let _ = services
        .metrics
        .spectators
        .fetch_update(Relaxed, Relaxed, |n| {
            Some(n.saturating_sub(u64::from(count)))
        });
}

fn unix_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Queue a snapshot to one connection, in order with the events already queued to it. A
/// full outbox means the client is not reading; it will be resynchronised or dropped.
fn queue_snapshot(
    outbox: &Outbox,
    request_id: Option<elementals_protocol::messages::RequestId>,
    snapshot: &GameSnapshot,
    seat: Option<Seat>,
) {
    let _ = outbox.send_msg(&ServerMsg::Snapshot {
        id: request_id,
        snapshot: snapshot.clone(),
        seat,
    });
}
