//! The game actor: one tokio task per game, owning all of its state.
//!
//! Commands arrive on the bounded channel behind [`GameHandle`]; the handling is synchronous
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
//! A panic inside the actor is caught by its supervisor task (`supervisor`), which ends the
//! game as its log says (its logged end, else `server_aborted`); other games never notice.

mod players;
mod spawn;
mod supervisor;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use elementals_protocol::messages::{GameId, GameSnapshot, SeatPair, ServerMsg};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::Seat;
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{sleep_until, Instant};

use super::state::GameState;
use super::{crash_point, GameCmd, GameServices, GameSetup, ReplyTo};
use crate::bus::{self, Bus, ConnId, Delivery};
use crate::db::{DbError, DbResult};
use crate::record::LogStep;
use crate::registry::FinishedGame;
use players::Answer;
pub(super) use spawn::{spawn, spawn_restored, timing};
use supervisor::{lock, Shared};

/// How long a finished game keeps answering `sync` and `watch` (and waits for its record to
/// be written) before its task ends.
const LINGER: Duration = Duration::from_secs(10);

/// Spectator counts go to the players at most this often.
const SPECTATOR_BATCH: Duration = Duration::from_secs(1);

/// How long events other than a round's result and the game's end may wait for the next
/// ones before going to spectators, so that a round's reveals and its result (which follow
/// each other within milliseconds) reach them as one write. Players never wait.
const SPECTATOR_COALESCE: Duration = Duration::from_millis(50);

/// How long the events that open a round's reveals (the second commit, `reveal_phase`) may
/// wait for the reveals and the result. Players' clients reveal on their own as soon as they
/// hear of the phase, so the result normally follows within one round trip of theirs; the
/// spectators then get the round's second half in one write, not two passes of writes
/// (a pass over ten thousand spectators takes tens of milliseconds, and a result that comes
/// while the commit's pass is under way waits for it).
const SPECTATOR_REVEAL_WAIT: Duration = Duration::from_millis(300);

/// Spectators' sends this task makes between two looks at the game's commands. Each is a
/// push onto the spectator's queue (its writer task writes to the socket), so a chunk
/// costs the players' next command little waiting.
const SPECTATOR_CHUNK: usize = 64;

/// The first pause before a refused append is tried again; each failure doubles it, up to
/// `RETRY_MAX`. A full disk is rarely freed within milliseconds, and every stalled game's
/// retry is a write the journal must try.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// A game whose log refused its steps (see the module).
struct Stalled {
    /// The steps to append, in order: the refused ones and any logged since.
    steps: Vec<LogStep>,
    /// The events waiting for them.
    events: Vec<ServerMsg>,
    /// When the command behind the first of them arrived.
    received: Instant,
    /// Requests answered with a snapshot, handled in order once the log has the steps.
    deferred: VecDeque<GameCmd>,
    retry_at: Instant,
    pause: Duration,
}

/// What became of a command's events and answer (`Actor::emit_answering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emitted {
    /// Published, the answer with them.
    Answered,
    /// Published; the answer is the caller's to send.
    Published,
    /// Kept for the log (the game is stalled); the caller answers `unavailable`.
    Held,
}

struct Actor {
    game_id: GameId,
    state: GameState,
    rx: mpsc::Receiver<GameCmd>,
    /// False once every handle is gone; the game then plays out on its clocks alone.
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
}

impl Actor {
    async fn run(mut self, first: Vec<ServerMsg>) {
        if self.play(first).await {
            self.after_game().await;
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
        tokio::pin!(stop, timer);
        self.emit(first, Instant::now()).await;
        // A game that ended while stalled plays on until its end is logged.
        while self.state.result().is_none() || self.stalled.is_some() {
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
                // Spectators' commands last: however many wait, a move never waits
                // behind more than the one being handled. While the game is stalled they
                // wait in their channel (a snapshot would show what the log lacks).
                cmd = self.spectators.recv(), if self.spectators_open && self.stalled.is_none() => {
                    self.on_spectator_cmd(cmd).await;
                }
            }
        }
        true
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
        let stop = self.services.stop.clone();
        while !written || self.rx_open {
            tokio::select! {
                biased;
                outcome = &mut write, if !written => {
                    written = true;
                    self.on_recorded(outcome).await;
                }
                // At shutdown, stop lingering once the record is written.
                () = stop.cancelled(), if written => break,
                cmd = self.rx.recv(), if self.rx_open => self.on_cmd(cmd).await,
                () = std::future::ready(()), if self.delivering => self.deliver_chunk().await,
                () = sleep_until_some(self.deliver_at) => self.start_delivery(),
                () = sleep_until_some(self.announce_at) => self.announce_spectators(),
                cmd = self.spectators.recv(), if self.spectators_open => {
                    self.on_spectator_cmd(cmd).await;
                }
                () = sleep_until(linger_until), if written => break,
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

    async fn on_cmd(&mut self, cmd: Option<GameCmd>) {
        let Some(cmd) = cmd else {
            self.rx_open = false;
            return;
        };
        if let Some(stalled) = &mut self.stalled {
            // A snapshot now would show steps the log does not have.
            let snapshot = match &cmd {
                GameCmd::Attach { .. } | GameCmd::Watch { .. } => true,
                #[cfg(test)]
                GameCmd::Snapshot { .. } => true,
                _ => false,
            };
            if snapshot {
                stalled.deferred.push_back(cmd);
                return;
            }
        }
        let received = Instant::now();
        // A move is judged at its arrival (see `judged`); everything else as it is handled.
        let received = match &cmd {
            GameCmd::Act { arrived, .. } => (*arrived).max(self.judged).min(received),
            _ => received,
        };
        self.judged = self.judged.max(received);
        let now = received.into_std();
        let mut out = Vec::new();
        match cmd {
            GameCmd::Attach {
                seat,
                reply,
                prelude,
            } => {
                // Answered `unknown_game` should the task die before it is answered.
                let owed = AnswerTo::new(Arc::clone(&self.bus), self.game_id, reply);
                self.state.attach(seat, now, &mut out);
                // The new connection learns of its own arrival from the snapshot it gets.
                self.emit(out, received).await;
                let snapshot = self.snapshot();
                let bus = Arc::clone(&self.bus);
                if let Some(frame) = prelude {
                    let _ = bus.send(reply.conn, frame);
                }
                queue_snapshot(&*bus, reply.conn, reply.request_id, &snapshot, Some(seat));
                lock(&self.shared).players.set(seat, Some(reply.conn));
                owed.sent();
            }
            GameCmd::Detach { seat, conn_id } => {
                {
                    let mut shared = lock(&self.shared);
                    if shared.players.conn(seat) != Some(conn_id) {
                        return;
                    }
                    shared.players.set(seat, None);
                }
                self.state.detach(seat, now, &mut out);
                let seated = 2 * self.services.registry.live_game_count();
                if let Some(since) = self.services.incidents.dropped(received, seated) {
                    self.state
                        .hold_for_incident(since.into_std(), now, &mut out);
                }
                self.emit(out, received).await;
            }
            GameCmd::Act {
                seat,
                action,
                reply,
                arrived: _,
            } => {
                let answer = AnswerTo::new(Arc::clone(&self.bus), self.game_id, reply);
                let was_over = self.state.result().is_some();
                let result = self.state.act(seat, action, now, &mut out);
                // Kept for the log, or refused only because of an end the log lacks.
                let kept = match &result {
                    Ok(()) => true,
                    Err(e) => e.code == ErrorCode::GameOver,
                };
                let id = reply.request_id.unwrap_or_default();
                let frame = Bytes::from(wire::encode(&match result {
                    Ok(()) => ServerMsg::Ok { id },
                    Err(e) => ServerMsg::error(Some(id), e.code, e.message),
                }));
                let with_events = Answer {
                    seat,
                    conn_id: reply.conn,
                    frame: frame.clone(),
                };
                let mut answer = Some(answer);
                if !was_over && self.state.result().is_some() {
                    // The game ended here: should the task die once the end is logged, the
                    // supervisor sends this reply with the end (see `Shared::owed`).
                    lock(&self.shared).owed = answer.take().map(|a| (a, frame.clone()));
                }
                let emitted = self.emit_answering(out, received, Some(with_events)).await;
                let answer = answer.or_else(|| lock(&self.shared).owed.take().map(|(a, _)| a));
                if let Some(answer) = answer {
                    let frame = match emitted {
                        Emitted::Answered => None,
                        // Not the seat's connection (one being superseded): the reply alone.
                        Emitted::Published => Some(frame),
                        // Kept until the log takes it (a move the rules refused changed
                        // nothing, and is answered as it was).
                        Emitted::Held if kept => Some(Bytes::from(wire::encode(
                            &ServerMsg::error(Some(id), ErrorCode::Unavailable, UNAVAILABLE),
                        ))),
                        Emitted::Held => Some(frame),
                    };
                    match frame {
                        Some(frame) => answer.reply(frame),
                        None => answer.sent(),
                    }
                }
            }
            GameCmd::Watch { reply } => {
                let owed = AnswerTo::new(Arc::clone(&self.bus), self.game_id, reply);
                self.state.tick(now, &mut out);
                self.emit(out, received).await;
                let added = self.bus.subscribe(self.game_id, reply.conn);
                if added {
                    self.services.metrics.spectators.fetch_add(1, Relaxed);
                    self.spectators_changed();
                }
                let snapshot = self.snapshot();
                queue_snapshot(&*self.bus, reply.conn, reply.request_id, &snapshot, None);
                owed.sent();
            }
            GameCmd::Unwatch { conn_id } => {
                if self.bus.unsubscribe(self.game_id, conn_id) {
                    spectators_left(&self.services, 1);
                    self.spectators_changed();
                }
            }
            #[cfg(test)]
            GameCmd::Snapshot { reply } => {
                self.state.tick(now, &mut out);
                self.emit(out, received).await;
                let _ = reply.send(self.snapshot());
            }
            #[cfg(any(test, feature = "test-hooks"))]
            GameCmd::Panic => panic!("game {}: forced panic (test hook)", self.game_id),
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

    /// Makes what the state logged durable, then publishes `events`. Nothing is published
    /// (and the caller answers nothing) before the steps behind it are in the log.
    async fn emit(&mut self, events: Vec<ServerMsg>, received: Instant) {
        self.emit_answering(events, received, None).await;
    }

    /// `emit`, with `answer` written to its player before the events (see
    /// `Players::send`), unless the events are held for the log.
    async fn emit_answering(
        &mut self,
        events: Vec<ServerMsg>,
        received: Instant,
        answer: Option<Answer>,
    ) -> Emitted {
        let steps = self.state.take_log();
        if let Some(stalled) = &mut self.stalled {
            // Behind the steps already waiting, in order.
            stalled.steps.extend(steps);
            stalled.events.extend(events);
            return Emitted::Held;
        }
        if !steps.is_empty() {
            let ends = steps.iter().any(|s| s.entry.is_end());
            if ends {
                crash_point("end_unlogged");
            }
            if let Err(error) = self.services.log.append(self.game_id, &steps).await {
                self.stall(steps, events, received, &error);
                return Emitted::Held;
            }
            if ends {
                // Logged: should the task die before the end is published or recorded, the
                // supervisor ends the game with this record, not as aborted.
                {
                    let mut shared = lock(&self.shared);
                    shared.ended = self.state.record().cloned();
                    shared.unpublished = Some(events.clone());
                }
                crash_point("end_logged");
            }
        }
        if self.publish(events, received, answer) {
            Emitted::Answered
        } else {
            Emitted::Published
        }
    }

    /// The log refused `steps`: hold the clocks and keep them, with `events`, for a retry.
    fn stall(
        &mut self,
        steps: Vec<LogStep>,
        events: Vec<ServerMsg>,
        received: Instant,
        error: &DbError,
    ) {
        let game_id = self.game_id;
        tracing::error!(%game_id, %error, "cannot log the game's steps: the game is held until the log takes them");
        let now = Instant::now();
        // No move is judged before the clocks stopped.
        self.judged = self.judged.max(now);
        self.state.stall(now.into_std());
        self.stalled = Some(Stalled {
            steps,
            events,
            received,
            deferred: VecDeque::new(),
            retry_at: now + RETRY_FIRST,
            pause: RETRY_FIRST,
        });
    }

    /// Appends the stalled game's steps again. Taken, they are published and the clocks
    /// run again; the requests that waited are handled.
    async fn retry_log(&mut self) {
        let Some(stalled) = &mut self.stalled else {
            return;
        };
        if let Err(error) = self.services.log.append(self.game_id, &stalled.steps).await {
            stalled.pause = (stalled.pause * 2).min(RETRY_MAX);
            stalled.retry_at = Instant::now() + stalled.pause;
            let game_id = self.game_id;
            tracing::warn!(%game_id, %error, "the game's steps still cannot be logged");
            return;
        }
        let Some(Stalled {
            steps,
            mut events,
            received,
            deferred,
            ..
        }) = self.stalled.take()
        else {
            return;
        };
        if steps.iter().any(|s| s.entry.is_end()) {
            // As in `emit_answering`: a logged end stands, whatever happens to the task.
            {
                let mut shared = lock(&self.shared);
                shared.ended = self.state.record().cloned();
                shared.unpublished = Some(events.clone());
            }
            crash_point("end_logged");
        }
        let game_id = self.game_id;
        tracing::info!(%game_id, "the game's steps are logged: the game goes on");
        let now = Instant::now();
        self.judged = self.judged.max(now);
        self.state.unstall(now.into_std(), &mut events);
        self.publish(events, received, None);
        for cmd in deferred {
            self.on_cmd(Some(cmd)).await;
        }
    }

    /// Encodes each event once and sends it to everyone (`answer` first, to its player);
    /// `received` is when the command that caused them arrived (for the result-latency
    /// histogram). Returns whether `answer` was sent.
    fn publish(
        &mut self,
        events: Vec<ServerMsg>,
        received: Instant,
        answer: Option<Answer>,
    ) -> bool {
        if events.is_empty() {
            return answer
                .is_some_and(|a| lock(&self.shared).players.send(&*self.bus, &[], Some(a)));
        }
        let frames: Vec<Bytes> = events
            .iter()
            .map(|e| Bytes::from(wire::encode(e)))
            .collect();
        let now = Instant::now().into_std();
        // (Frames are counted in `messages_out` as sent, by whoever writes them.)
        let (spectators, backlog, answered) = {
            let mut shared = lock(&self.shared);
            let answered = shared.players.send(&*self.bus, &frames, answer);
            self.bus.publish(self.game_id, &frames);
            shared.unpublished = None;
            shared.mirror(&self.state, now);
            let backlog = self.bus.has_backlog(self.game_id);
            (self.bus.subscribers(self.game_id), backlog, answered)
        };
        let metrics = Arc::clone(&self.services.metrics);
        if backlog {
            let urgent = events.iter().any(|e| {
                matches!(
                    e,
                    ServerMsg::RoundResult { .. } | ServerMsg::GameOver { .. }
                )
            });
            if urgent {
                self.start_delivery();
            } else if !self.delivering {
                let reveals_due = events
                    .iter()
                    .any(|e| matches!(e, ServerMsg::RevealPhase { .. }));
                let wait = if reveals_due {
                    SPECTATOR_REVEAL_WAIT
                } else {
                    SPECTATOR_COALESCE
                };
                let due = Instant::now() + wait;
                // A wait already running is kept, unless the reveals just began: then what
                // waits (the first commit too, if it came within the coalescing) waits on
                // for them.
                match self.deliver_at {
                    Some(at) if !reveals_due || at >= due => {}
                    _ => self.deliver_at = Some(due),
                }
            }
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
        answered
    }

    fn start_delivery(&mut self) {
        self.deliver_at = None;
        self.delivering = true;
    }

    /// Makes the next chunk of the spectators' sends, then lets other tasks run (the
    /// connections just handed frames, and the players' next moves).
    async fn deliver_chunk(&mut self) {
        let delivery = self.deliver(SPECTATOR_CHUNK);
        if delivery.done {
            self.delivering = false;
        } else {
            tokio::task::yield_now().await;
        }
    }

    /// Delivers the whole backlog at once (the game's task is ending).
    fn deliver_all(&mut self) {
        self.deliver(usize::MAX);
        self.delivering = false;
        self.deliver_at = None;
    }

    /// One delivery step of `chunk` sends, or of the whole backlog for `usize::MAX`.
    fn deliver(&mut self, chunk: usize) -> Delivery {
        let now = Instant::now().into_std();
        let delivery = {
            let (bus, topic) = (&*self.bus, self.game_id);
            let count = bus.subscribers(topic);
            let state = &self.state;
            // A spectator that fell behind gets the game as it is now, which covers every
            // frame of the backlog.
            let resync = || {
                Bytes::from(wire::encode(&ServerMsg::Snapshot {
                    id: None,
                    snapshot: state.snapshot(now, count),
                    seat: None,
                }))
            };
            if chunk == usize::MAX {
                bus::deliver_all(bus, topic, resync)
            } else {
                bus::deliver(bus, topic, chunk, resync)
            }
        };
        if delivery.removed > 0 {
            spectators_left(&self.services, delivery.removed);
            self.spectators_changed();
        }
        delivery
    }

    fn snapshot(&self) -> GameSnapshot {
        let spectators = self.bus.subscribers(self.game_id);
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
        let count = self.bus.subscribers(self.game_id);
        if count == self.announced {
            return;
        }
        self.announced = count;
        let game_id = self.game_id;
        let frame = Bytes::from(wire::encode(&ServerMsg::Spectators { game_id, count }));
        lock(&self.shared).players.send(&*self.bus, &[frame], None);
        if self.state.result().is_none() {
            let summary = self.state.summary(count);
            self.services.registry.update_summary(summary);
        }
    }
}

/// The answer a command owes while the game's task handles it: should the task die
/// before it is answered, it is answered `unknown_game` as it drops (`Bus::refuse`). It
/// stays in the game's task (or its supervisor's hands, `Shared::owed`): what crosses the
/// bus is its `ReplyTo` alone.
#[derive(Debug)]
pub(in crate::game) struct AnswerTo {
    bus: Arc<dyn Bus>,
    game_id: GameId,
    reply: Option<ReplyTo>,
}

impl AnswerTo {
    fn new(bus: Arc<dyn Bus>, game_id: GameId, reply: ReplyTo) -> AnswerTo {
        AnswerTo {
            bus,
            game_id,
            reply: Some(reply),
        }
    }

    /// Queues `frame`, the reply, killing the connection if it does not fit, and marks the
    /// answer sent.
    pub fn reply(self, frame: Bytes) {
        if let Some(reply) = &self.reply {
            self.bus.send_or_kill(reply.conn, frame);
        }
        self.sent();
    }

    /// The reply has been queued (with the move's events, or the snapshot): the session
    /// hears that it is answered.
    pub fn sent(mut self) {
        if let Some(reply) = self.reply.take() {
            self.bus.answered(self.game_id, reply, true);
        }
    }
}

impl Drop for AnswerTo {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            self.bus.refuse_reply(self.game_id, reply);
        }
    }
}

impl Drop for Actor {
    /// However the task ends (the game over, the server stopping, a panic), what is still
    /// queued for it, or was put off while it was stalled, is answered `unknown_game`, and
    /// later commands are refused by the bus.
    fn drop(&mut self) {
        self.rx.close();
        self.spectators.close();
        let mut unanswered: Vec<GameCmd> = self
            .stalled
            .take()
            .map(|s| s.deferred.into_iter().collect())
            .unwrap_or_default();
        while let Ok(cmd) = self.rx.try_recv() {
            unanswered.push(cmd);
        }
        while let Ok(cmd) = self.spectators.try_recv() {
            unanswered.push(cmd);
        }
        self.bus.close_game(self.game_id);
        for cmd in &unanswered {
            self.bus.refuse(self.game_id, cmd);
        }
    }
}

/// What a move kept for the log is answered (`ErrorCode::Unavailable`).
const UNAVAILABLE: &str =
    "the game's log cannot be written now: the move is kept and takes effect once it is";

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

/// What the registry remembers of a finished game (for rematches), and the sender that
/// tells when its record is settled (dropped unused: nothing to wait for).
fn finished_game(setup: &GameSetup) -> (FinishedGame, watch::Sender<bool>) {
    let (recorded_tx, recorded) = watch::channel(false);
    let finished = FinishedGame {
        players: SeatPair::new(setup.players.one.account_id, setup.players.two.account_id),
        ratings: SeatPair::new(setup.players.one.rating, setup.players.two.rating),
        variant: setup.variant,
        time_control: setup.time_control,
        rated: setup.rated,
        rematch_offers: SeatPair::default(),
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

/// Queue a snapshot to one connection, in order with the events already queued to it. A
/// full outbox means the client is not reading; it will be resynchronised or dropped.
fn queue_snapshot(
    bus: &dyn Bus,
    conn_id: ConnId,
    request_id: Option<elementals_protocol::messages::RequestId>,
    snapshot: &GameSnapshot,
    seat: Option<Seat>,
) {
    let _ = bus.send_msg(
        conn_id,
        &ServerMsg::Snapshot {
            id: request_id,
            snapshot: snapshot.clone(),
            seat,
        },
    );
}
