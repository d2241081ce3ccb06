//! The handling of each command, and the answers owed: a command's answer goes to its
//! connection by the bus, with a notice to its session (`Bus::answered`), or, if the game's
//! task dies first, `unknown_game` (`AnswerTo`, and the actor's `Drop`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, GameSnapshot, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;
use tokio::time::Instant;

use super::durable::Emitted;
use super::players::Answer;
use super::supervisor::lock;
use super::{spectators_left, Actor};
use crate::bus::{Bus, ConnId};
use crate::game::{GameCmd, ReplyTo};

impl Actor {
    pub(super) async fn on_cmd(&mut self, cmd: Option<GameCmd>) {
        let Some(cmd) = cmd else {
            self.rx_open = false;
            return;
        };
        self.active_at = Instant::now();
        if let Some(stalled) = &mut self.stalled {
            // A snapshot now would show steps the log does not have.
            let snapshot = match &cmd {
                GameCmd::Attach { .. } | GameCmd::Watch { .. } => true,
                #[cfg(any(test, feature = "test-hooks"))]
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
            #[cfg(any(test, feature = "test-hooks"))]
            GameCmd::Snapshot { reply } => {
                self.state.tick(now, &mut out);
                self.emit(out, received).await;
                let _ = reply.send(self.snapshot());
            }
            #[cfg(any(test, feature = "test-hooks"))]
            GameCmd::Panic => panic!("game {}: forced panic (test hook)", self.game_id),
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
            self.bus.answered(reply, true);
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
        // A sleeping game's inbox was closed as it went to sleep; the bus may hold its
        // woken successor's by now.
        if !self.asleep {
            self.bus.close_game(self.game_id);
        }
        for cmd in &unanswered {
            self.bus.refuse(self.game_id, cmd);
        }
    }
}

/// What a move kept for the log is answered (`ErrorCode::Unavailable`).
const UNAVAILABLE: &str =
    "the game's log cannot be written now: the move is kept and takes effect once it is";

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
