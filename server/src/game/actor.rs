//! The game actor: one tokio task per game, owning all of its state.
//!
//! Commands arrive by the bus (`Bus::to_game`) on the game's two bounded queues
//! (`bus::GameInbox`: the players' and the spectators'); the handling is synchronous
//! code around the pure [`GameState`], which decides everything. The actor adds only time
//! (one `sleep_until` on the game's next deadline), durability, fan-out (each event encoded
//! once, the bytes shared by every recipient: the players through `players`, the spectators
//! through the game's topic on the bus) and the end of the game: the
//! registry is told at once so both players may queue again, then the record goes to the
//! database while late `sync` and `watch` requests are still answered for a short while.
//!
//! Durability: whatever the state logged while handling a command (a commitment, a reveal,
//! a result, the end) is appended to the game's log and awaited before any event is
//! published or the command answered (`emit`). The wait is one group commit of the database
//! writer, shared with every other game's steps; only this game waits for it.
//!
//! An append that fails (a full disk, say) publishes nothing: the game is stalled
//! (`Stalled`). Its clocks are held, the move is answered `unavailable`, and the steps,
//! with the events waiting for them, are kept and appended again, after a growing pause,
//! until the log takes them; later moves join them, and requests answered with a snapshot
//! wait. Then the events go out and the clocks run again, as after an incident. Each game
//! retries on its own timer, so one stalled game holds up no other beyond the shared disk.
//!
//! Cluster mode: an append refused because another node has claimed the game's lease
//! stops the game here, recording nothing; its players are told it moved (`moved`). So
//! does the lease loop's alarm, when a renewal finds the lease lost or lapsed.
//!
//! A panic inside the actor is caught by its supervisor task (`supervisor`), which ends the
//! game as its log says (its logged end, else `server_aborted`); other games never notice.

mod commands;
mod durable;
mod moved;
mod players;
mod publish;
mod sleep;
mod spawn;
mod supervisor;
#[cfg(test)]
mod tests;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use elementals_protocol::messages::{GameId, GameSnapshot, PlayerInfo, SeatPair, ServerMsg};
use elementals_protocol::rating::RatingChange;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{sleep_until, Instant};

use super::state::GameState;
use super::{GameCmd, GameServices, GameSetup};
use crate::alarms::Alarm;
use crate::bus::Bus;
use crate::db::DbResult;
use crate::db::{crash_point, hold_point};
use crate::registry::FinishedGame;
pub(in crate::game) use commands::AnswerTo;
use durable::Stalled;
pub(super) use spawn::{spawn, spawn_restored, spawn_woken, timing};
use supervisor::{lock, Shared};

struct Actor {
    game_id: GameId,
    state: GameState,
    rx: mpsc::Receiver<GameCmd>,
    /// False once the queue's senders are gone (the bus held them: it is gone); the game
    /// then plays out on its clocks alone.
    rx_open: bool,
    /// The spectators' commands, read only when no player's command waits.
    spectators: mpsc::Receiver<GameCmd>,
    spectators_open: bool,
    /// The latest instant the game has judged anything at: a move is judged at its
    /// arrival, but never earlier than this, so the clocks never run backwards.
    judged: Instant,
    /// Declarations of server-side incidents (`None` once the sender is gone).
    incidents: Option<broadcast::Receiver<Instant>>,
    services: GameServices,
    /// How the game reaches its players' and spectators' connections.
    bus: Arc<dyn Bus>,
    /// Recipients and what a crash would need; see `supervisor`.
    shared: Arc<Mutex<Shared>>,
    finished: FinishedGame,
    /// Tells rematch offers waiting on `finished.recorded` that the record is settled.
    recorded: watch::Sender<bool>,
    /// When the pending spectator-count announcement is due.
    announce_at: Option<Instant>,
    /// The count the players last heard.
    announced: u32,
    /// When the spectators' backlog is due to be delivered (see `SPECTATOR_COALESCE`).
    deliver_at: Option<Instant>,
    /// A delivery to spectators is under way (one chunk per turn of the loop).
    delivering: bool,
    /// Set while the log refuses the game's steps.
    stalled: Option<Stalled>,
    /// Cluster mode: the log refused a step for the game's lease, which another node now
    /// holds; the game stops here (`moved.rs`).
    moved: bool,
    /// When the game last handled a command (or looked whether it may sleep).
    active_at: Instant,
    /// The game has gone to sleep (`sleep.rs`): its inbox is closed, its task ends.
    asleep: bool,
    /// Cluster mode: sounded when the lease loop finds the game's lease lost, so that the
    /// game stops at once rather than at its next step (`alarms.rs`).
    lease_alarm: Alarm,
}

impl Actor {
    async fn run(mut self, first: Vec<ServerMsg>) {
        if self.play(first).await {
            self.after_game().await;
        } else if self.moved {
            self.move_away().await;
        } else if self.asleep {
            self.hand_over().await;
        }
    }

    /// Plays until the game is over (true) or the server stops (false). The waits below
    /// end with it: a timer left registered would, on tokio's paused clock, be a point
    /// the clock jumps to.
    async fn play(&mut self, first: Vec<ServerMsg>) -> bool {
        // Armed once for the game's life, on a token of the game's own: the shutdown
        // token is the server's, and polling it (its lock, and a place in its waiter list
        // taken and given back) at every wake-up of every game made the cores contend for
        // it.
        let stop = self.services.stop.child_token().cancelled_owned();
        // The game's next deadline, moved only when it changes (each move costs the
        // timer wheel's lock; a timer made anew at every wake-up cost it twice).
        let timer = sleep_until(Instant::now());
        let mut armed: Option<Instant> = None;
        // When the game next looks whether it may sleep (`sleep.rs`): moved on only when
        // it fires (a command since then puts it off), not at every command.
        let napping = self.sleep_at().is_some();
        let nap = sleep_until(self.sleep_at().unwrap_or_else(Instant::now));
        tokio::pin!(stop, timer, nap);
        self.emit(first, Instant::now()).await;
        // A game that ended while stalled plays on until its end is logged.
        while self.state.result().is_none() || self.stalled.is_some() {
            if self.moved {
                return false;
            }
            let deadline = self.state.next_deadline().map(Instant::from_std);
            if deadline != armed {
                if let Some(at) = deadline {
                    timer.as_mut().reset(at);
                }
                armed = deadline;
            }
            tokio::select! {
                // Shutdown first: the game stops between commands, each step it answered
                // already logged, and is restored at the next start.
                biased;
                () = &mut stop => return false,
                // The lease lost next: nothing more of the game is this node's to judge.
                () = self.lease_alarm.sounded() => self.moved = true,
                // An incident next: the game is held before it acts on anything else.
                since = incident(&mut self.incidents) => self.on_incident(since).await,
                () = sleep_until_some(self.stalled.as_ref().map(|s| s.retry_at)) => {
                    self.retry_log().await;
                }
                // Then the players' commands: each one settles passed deadlines itself
                // before acting, judged at its arrival (a move) or as it is handled. A
                // move already queued when a deadline passes is judged (at its arrival)
                // before the timer's verdict.
                cmd = self.rx.recv(), if self.rx_open => self.on_cmd(cmd).await,
                () = &mut timer, if armed.is_some() => self.on_deadline().await,
                // Spectators when nothing above is waiting, a chunk at a time.
                () = std::future::ready(()), if self.delivering => self.deliver_chunk().await,
                () = sleep_until_some(self.deliver_at) => self.start_delivery(),
                () = sleep_until_some(self.announce_at) => self.announce_spectators(),
                () = &mut nap, if napping => {
                    let put_off = self.sleep_at().filter(|at| *at > Instant::now());
                    if let Some(at) = put_off {
                        nap.as_mut().reset(at);
                    } else if self.try_sleep().await {
                        return false;
                    } else {
                        nap.as_mut().reset(self.sleep_at().unwrap_or_else(Instant::now));
                    }
                }
                // Spectators' commands last: however many wait, a move never waits
                // behind more than the one being handled. While the game is stalled they
                // wait in their channel (a snapshot would show what the log lacks).
                cmd = self.spectators.recv(), if self.spectators_open && self.stalled.is_none() => {
                    self.on_spectator_cmd(cmd).await;
                }
            }
        }
        // An end refused for the lease is not this node's to record.
        !self.moved
    }

    /// The game is over (its players' seats were freed as its end went out,
    /// `Registry::game_over`): have the registry forget it now, then record it while still
    /// answering, and end once it is recorded and nothing waits in its queues.
    ///
    /// It need not wait longer: the registry forgot the game as it ended, so no session
    /// sends it anything new (`sync` and `watch` of an ended game are answered by the
    /// session, `seat` finds no seat), and a command that raced the end and comes after the
    /// task is answered `unknown_game` by the bus, or by the actor's `Drop` if queued
    /// meanwhile; an attach at sign-in so answered makes the session say `game_id: nil`.
    async fn after_game(mut self) {
        hold_point("game_over_published").await;
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
        while !written || self.rx_open {
            tokio::select! {
                biased;
                outcome = &mut write, if !written => {
                    written = true;
                    self.on_recorded(outcome).await;
                }
                cmd = self.rx.recv(), if self.rx_open => self.on_cmd(cmd).await,
                () = std::future::ready(()), if self.delivering => self.deliver_chunk().await,
                () = sleep_until_some(self.deliver_at) => self.start_delivery(),
                () = sleep_until_some(self.announce_at) => self.announce_spectators(),
                cmd = self.spectators.recv(), if self.spectators_open => {
                    self.on_spectator_cmd(cmd).await;
                }
                // Recorded, and nothing above is ready: the spectators' last delivery
                // goes below, at once.
                () = std::future::ready(()), if written => break,
            }
        }
        self.deliver_all();
        let spectators = self.bus.close_topic(self.game_id);
        spectators_left(&self.services, spectators);
    }

    async fn on_recorded(&mut self, outcome: Option<DbResult<Option<SeatPair<RatingChange>>>>) {
        self.settle_ratings(&outcome);
        lock(&self.shared).unrecorded = None;
        if matches!(outcome, Some(Ok(_))) {
            crash_point("recorded");
        }
        match outcome {
            Some(Ok(Some(ratings))) => {
                let update = self.state.rating_update(ratings);
                self.emit(vec![update], Instant::now()).await;
            }
            Some(Ok(None)) | None => {}
            Some(Err(error)) => {
                let game_id = self.game_id;
                tracing::error!(%game_id, %error, "could not record the finished game");
            }
        }
    }

    async fn on_spectator_cmd(&mut self, cmd: Option<GameCmd>) {
        match cmd {
            Some(cmd) => self.on_cmd(Some(cmd)).await,
            None => self.spectators_open = false,
        }
    }

    /// The game's record is settled: a rematch offered now carries the ratings it left.
    fn settle_ratings(&self, outcome: &Option<DbResult<Option<SeatPair<RatingChange>>>>) {
        if let Some(Ok(Some(ratings))) = outcome {
            let after = SeatPair::new(ratings.one.after, ratings.two.after);
            let registry = &self.services.registry;
            registry.set_finished_ratings(&self.game_id, after);
        }
        self.recorded.send_replace(true);
    }

    async fn on_deadline(&mut self) {
        let now = Instant::now();
        self.judged = now;
        let mut out = Vec::new();
        self.state.tick(now.into_std(), &mut out);
        self.emit(out, now).await;
    }

    /// A server-side incident was declared: hold the game if it lost a seat in it.
    async fn on_incident(&mut self, since: Instant) {
        let now = Instant::now();
        self.judged = now;
        let mut out = Vec::new();
        self.state
            .hold_for_incident(since.into_std(), now.into_std(), &mut out);
        self.emit(out, now).await;
    }

    fn snapshot(&self) -> GameSnapshot {
        let spectators = self.bus.subscribers(self.game_id);
        self.state.snapshot(Instant::now().into_std(), spectators)
    }
}

/// The next incident declaration: from when drops count as part of it. A receiver that fell
/// behind treats that as a declaration; once the sender is gone it waits forever.
async fn incident(notices: &mut Option<broadcast::Receiver<Instant>>) -> Instant {
    let Some(rx) = notices else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(since) => since,
        Err(broadcast::error::RecvError::Lagged(_)) => {
            let now = Instant::now();
            now.checked_sub(super::incident::WINDOW).unwrap_or(now)
        }
        Err(broadcast::error::RecvError::Closed) => {
            *notices = None;
            std::future::pending().await
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

/// What the registry remembers of a finished game (and tells the lobby), and the sender that
/// tells when its record is settled (dropped unused: nothing to wait for).
fn finished_game(setup: &GameSetup) -> (FinishedGame, watch::Sender<bool>) {
    let (recorded_tx, recorded) = watch::channel(false);
    let finished = FinishedGame {
        players: SeatPair::new(setup.players.one.account_id, setup.players.two.account_id),
        infos: setup.players.clone().map(|p| PlayerInfo {
            bot: crate::bots::is_bot_name(&p.name),
            name: p.name,
            rating: p.rating,
            guest: p.guest,
        }),
        ratings: SeatPair::new(setup.players.one.rating, setup.players.two.rating),
        variant: setup.variant,
        time_control: setup.time_control,
        rated: setup.rated,
        recorded,
    };
    (finished, recorded_tx)
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
