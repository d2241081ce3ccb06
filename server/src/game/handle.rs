//! Handles to a game actor. A player's handle is bound to one seat and can only act for
//! it; a spectator's handle can only watch. Both wrap the game's two bounded command
//! channels: one for the players (and the lobby's seating), one for spectators, which the
//! game reads only when no player's command is waiting.

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, GameSnapshot, RequestId, ServerMsg};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::bus::{Bus, ConnId};
use crate::outbox::Outbox;

/// Players' commands a game may have queued. Each connection has at most one request in
/// flight (its session waits for each answer or `settle`s), and only connections signed
/// in as the two players and the lobby's seating send here, so this only fills if the
/// actor is stuck; senders then wait.
pub const GAME_CHANNEL_CAPACITY: usize = 64;

/// Spectators' commands (`watch`, a spectator's `sync`, `unwatch`) a game may have queued.
/// The game reads them only when no player's command is waiting, so however many there
/// are they never queue ahead of a move; past this, spectators' sessions wait their turn
/// (each connection has at most one request in flight, so the waiters are bounded by the
/// connections watching).
pub const SPECTATOR_CHANNEL_CAPACITY: usize = 32;

/// A refusal from the game, answered to the client as an `error` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameError {
    pub code: ErrorCode,
    pub message: String,
}

impl GameError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        GameError {
            code,
            message: message.into(),
        }
    }

    fn gone() -> Self {
        GameError::new(ErrorCode::UnknownGame, "the game has ended")
    }
}

pub type Reply<T> = oneshot::Sender<Result<T, GameError>>;

/// A seat-bound action.
#[derive(Debug)]
pub enum SeatAction {
    Commit {
        round: u32,
        commitment: Vec<u8>,
    },
    Reveal {
        round: u32,
        pick: Element,
        nonce: Vec<u8>,
    },
    Resign,
    OfferDraw,
    DeclineDraw,
    ClaimWin,
}

/// The reply a move owes: the connection that sent it (by identity, on the bus) and the
/// request's id. The game always sends it (`GameCmd::Act`); a move dropped unhandled (its
/// game ended first, or was gone already, or panicked handling it) is answered
/// `unknown_game` as it drops. Either way `done` fires once the reply is queued, and the
/// connection answers nothing else before that (`Session::settle`).
#[derive(Debug)]
pub struct AnswerTo {
    pub conn_id: ConnId,
    pub request_id: RequestId,
    /// Where a reply to `conn_id` goes.
    bus: Arc<dyn Bus>,
    done: Option<oneshot::Sender<()>>,
}

impl AnswerTo {
    /// An answer owed to connection `conn_id` for request `request_id`, and the receiver
    /// that completes once it is sent.
    fn new(
        bus: Arc<dyn Bus>,
        conn_id: ConnId,
        request_id: RequestId,
    ) -> (AnswerTo, oneshot::Receiver<()>) {
        let (done, sent) = oneshot::channel();
        let answer = AnswerTo {
            conn_id,
            request_id,
            bus,
            done: Some(done),
        };
        (answer, sent)
    }

    /// Queues `frame`, the reply, killing the connection if it does not fit, and marks the
    /// answer sent.
    pub fn reply(self, frame: Bytes) {
        self.bus.send_or_kill(self.conn_id, frame);
        self.sent();
    }

    /// The reply has been queued (with the move's events).
    pub fn sent(mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

impl Drop for AnswerTo {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let gone = GameError::gone();
            let reply = ServerMsg::error(Some(self.request_id), gone.code, gone.message);
            self.bus.send_msg_or_kill(self.conn_id, &reply);
            let _ = done.send(());
        }
    }
}

#[derive(Debug)]
pub enum GameCmd {
    /// A player's connection (re)attaches to its seat; replaces any earlier one. The actor
    /// queues the `snapshot` (answering `request_id`, if any) to the outbox itself, so it
    /// is ordered with the game's events; the reply carries the same snapshot.
    Attach {
        seat: Seat,
        conn_id: ConnId,
        request_id: Option<RequestId>,
        /// A frame queued just before the snapshot: the session's `authenticated`, which
        /// names this game, so that the two arrive together or not at all.
        prelude: Option<Bytes>,
        reply: Reply<GameSnapshot>,
    },
    /// A player's connection went away (ignored unless `conn_id` is the attached one).
    Detach {
        seat: Seat,
        conn_id: u64,
    },
    /// A player's move. The actor sends the reply (`ok` or `error`) itself: first in the
    /// same write as the events the move caused when `answer` is the seat's attached
    /// connection, alone otherwise.
    Act {
        seat: Seat,
        action: SeatAction,
        answer: AnswerTo,
        /// When the move's frame was read off the socket: the game judges the move (its
        /// clock) at this instant, so time spent in the game's queue is not charged.
        arrived: Instant,
    },
    /// Start (or resynchronise) watching; the snapshot is queued like `Attach`'s. Sent on
    /// the spectators' channel.
    Watch {
        conn_id: ConnId,
        request_id: Option<RequestId>,
        reply: Reply<GameSnapshot>,
    },
    /// Sent on the spectators' channel.
    Unwatch {
        conn_id: u64,
    },
    Snapshot {
        reply: Reply<GameSnapshot>,
    },
    /// Test-only: make the actor panic, to show that one game's crash harms nothing else.
    #[cfg(any(test, feature = "test-hooks"))]
    Panic,
}

/// The full handle, held by the registry and the lobby.
#[derive(Debug, Clone)]
pub struct GameHandle {
    game_id: GameId,
    tx: mpsc::Sender<GameCmd>,
    /// The spectators' channel (see `SPECTATOR_CHANNEL_CAPACITY`).
    spectators: mpsc::Sender<GameCmd>,
    /// The bus the game reaches connections through: a handle puts the connection it is
    /// given on it, and sends the game only the connection's identity.
    bus: Arc<dyn Bus>,
}

impl GameHandle {
    pub fn new(
        game_id: GameId,
        tx: mpsc::Sender<GameCmd>,
        spectators: mpsc::Sender<GameCmd>,
        bus: Arc<dyn Bus>,
    ) -> Self {
        GameHandle {
            game_id,
            tx,
            spectators,
            bus,
        }
    }

    pub fn game_id(&self) -> GameId {
        self.game_id
    }

    pub fn player(&self, seat: Seat) -> PlayerHandle {
        PlayerHandle {
            seat,
            game: self.clone(),
        }
    }

    pub fn spectator(&self) -> SpectatorHandle {
        SpectatorHandle { game: self.clone() }
    }

    pub async fn snapshot(&self) -> Result<GameSnapshot, GameError> {
        self.request(|reply| GameCmd::Snapshot { reply }).await
    }

    pub fn is_finished(&self) -> bool {
        self.tx.is_closed()
    }

    async fn request<T>(&self, cmd: impl FnOnce(Reply<T>) -> GameCmd) -> Result<T, GameError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(cmd(reply))
            .await
            .map_err(|_| GameError::gone())?;
        rx.await.map_err(|_| GameError::gone())?
    }

    /// Test-only: a raw sender to the players' channel, to fill it.
    #[cfg(test)]
    pub(crate) fn commands(&self) -> mpsc::Sender<GameCmd> {
        self.tx.clone()
    }

    /// Test-only: queues a `watch` without waiting for its answer; `Err` once the
    /// spectators' channel is full.
    #[cfg(test)]
    pub(crate) fn try_watch(
        &self,
        outbox: Outbox,
        request_id: Option<RequestId>,
    ) -> Result<oneshot::Receiver<Result<GameSnapshot, GameError>>, ()> {
        let (reply, rx) = oneshot::channel();
        self.bus.connect(&outbox);
        let cmd = GameCmd::Watch {
            conn_id: outbox.conn_id(),
            request_id,
            reply,
        };
        self.spectators.try_send(cmd).map(|()| rx).map_err(|_| ())
    }

    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn force_panic(&self) {
        let _ = self.tx.send(GameCmd::Panic).await;
    }
}

/// Sends a notice that must not be lost (a seat's `Detach`, an `Unwatch`, the lobby's
/// `Gone`): at once if the channel has room, else from a task that waits for room. The
/// waiting tasks are bounded by construction: a connection sends each notice once (as it
/// ends: a detach for its seat, an unwatch for each game it watches, at most 16, a gone
/// to the lobby; or an unwatch as it asks), so there are never more than that per
/// connection that closed or unwatched while a queue was full, and each task is gone once
/// its notice is queued (or the receiver is: a closed channel has nobody to notify).
pub(crate) fn notify<T: Send + 'static>(tx: &mpsc::Sender<T>, notice: T) {
    match tx.try_send(notice) {
        Ok(()) | Err(TrySendError::Closed(_)) => {}
        Err(TrySendError::Full(notice)) => {
            let tx = tx.clone();
            // A session can be dropped outside the runtime (its last owner going away at
            // shutdown); the receivers are stopping then, and games restore their seats
            // from their logs.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = tx.send(notice).await;
                });
            }
        }
    }
}

/// Acts for one seat only.
#[derive(Debug, Clone)]
pub struct PlayerHandle {
    seat: Seat,
    game: GameHandle,
}

impl PlayerHandle {
    pub fn seat(&self) -> Seat {
        self.seat
    }

    pub fn game_id(&self) -> GameId {
        self.game.game_id
    }

    /// Attach `outbox`'s connection to this seat; the actor queues the snapshot to it (see
    /// `GameCmd::Attach`).
    pub async fn attach(
        &self,
        outbox: &Outbox,
        request_id: Option<RequestId>,
    ) -> Result<GameSnapshot, GameError> {
        self.game.bus.connect(outbox);
        self.attach_conn(outbox.conn_id(), request_id, None).await
    }

    /// `attach`, with `prelude` queued to `outbox` just before the snapshot. If the game is
    /// gone, neither is queued.
    pub async fn attach_after(
        &self,
        outbox: &Outbox,
        prelude: Bytes,
    ) -> Result<GameSnapshot, GameError> {
        self.game.bus.connect(outbox);
        self.attach_conn(outbox.conn_id(), None, Some(prelude))
            .await
    }

    /// Attach connection `conn_id`, already on the bus (the lobby seating its players).
    pub async fn attach_conn(
        &self,
        conn_id: ConnId,
        request_id: Option<RequestId>,
        prelude: Option<Bytes>,
    ) -> Result<GameSnapshot, GameError> {
        let seat = self.seat;
        self.game
            .request(|reply| GameCmd::Attach {
                seat,
                conn_id,
                request_id,
                prelude,
                reply,
            })
            .await
    }

    /// The connection `conn_id` is gone. Never lost: see `notify`.
    pub fn detach(&self, conn_id: u64) {
        let cmd = GameCmd::Detach {
            seat: self.seat,
            conn_id,
        };
        notify(&self.game.tx, cmd);
    }

    /// The answer a move from `outbox`'s connection for request `request_id` owes, to
    /// hand to `act`, and the receiver that completes once it is sent.
    pub fn answer_to(
        &self,
        outbox: &Outbox,
        request_id: RequestId,
    ) -> (AnswerTo, oneshot::Receiver<()>) {
        self.game.bus.connect(outbox);
        AnswerTo::new(self.game.bus.clone(), outbox.conn_id(), request_id)
    }

    /// Hands a move that `arrived` (its frame read off the socket) to the game, which
    /// answers it (see `AnswerTo`); returns once the game has it, not once it is answered.
    pub async fn act(&self, action: SeatAction, answer: AnswerTo, arrived: Instant) {
        let seat = self.seat;
        // A game that is gone drops the move, and with it the answer owed: `unknown_game`.
        let _ = self
            .game
            .tx
            .send(GameCmd::Act {
                seat,
                action,
                answer,
                arrived,
            })
            .await;
    }

    pub async fn snapshot(&self) -> Result<GameSnapshot, GameError> {
        self.game.snapshot().await
    }
}

/// Can only watch.
#[derive(Debug, Clone)]
pub struct SpectatorHandle {
    game: GameHandle,
}

impl SpectatorHandle {
    pub fn game_id(&self) -> GameId {
        self.game.game_id
    }

    /// Watch with `outbox`; the actor queues the snapshot to it (see `GameCmd::Watch`).
    /// Waits on the spectators' channel, never the players'.
    pub async fn watch(
        &self,
        outbox: &Outbox,
        request_id: Option<RequestId>,
    ) -> Result<GameSnapshot, GameError> {
        let (reply, rx) = oneshot::channel();
        self.game.bus.connect(outbox);
        let cmd = GameCmd::Watch {
            conn_id: outbox.conn_id(),
            request_id,
            reply,
        };
        let sent = self.game.spectators.send(cmd).await;
        sent.map_err(|_| GameError::gone())?;
        rx.await.map_err(|_| GameError::gone())?
    }

    /// Never lost: see `notify`.
    pub fn unwatch(&self, conn_id: u64) {
        notify(&self.game.spectators, GameCmd::Unwatch { conn_id });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbound;
    use elementals_protocol::wire;

    fn game() -> (GameHandle, mpsc::Receiver<GameCmd>) {
        let (tx, rx) = mpsc::channel(4);
        let (spectators, _) = mpsc::channel(1);
        let id = GameId::new_random_from([3; 16]);
        let bus = Arc::new(crate::bus::LocalBus::default());
        (GameHandle::new(id, tx, spectators, bus), rx)
    }

    /// The one frame `rx` has queued, decoded.
    fn answer(rx: &mut mpsc::Receiver<Outbound>) -> ServerMsg {
        let item = rx.try_recv().expect("an answer is queued");
        assert!(rx.try_recv().is_err(), "one item only");
        match item.frames() {
            [frame] => wire::decode_server(frame).expect("it decodes"),
            other => panic!("expected one frame, got {}", other.len()),
        }
    }

    fn assert_gone(msg: ServerMsg, request_id: RequestId) {
        match msg {
            ServerMsg::Error { id, code, .. } => {
                assert_eq!((id, code), (Some(request_id), ErrorCode::UnknownGame));
            }
            other => panic!("expected unknown_game, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_move_to_a_game_already_gone_is_answered_unknown_game() {
        let (game, commands) = game();
        drop(commands);
        let (outbox, mut rx) = Outbox::new(1, 4);
        let player = game.player(Seat::One);
        let (answer_to, sent) = player.answer_to(&outbox, 5);
        player
            .act(SeatAction::Resign, answer_to, Instant::now())
            .await;
        sent.await.expect("answered");
        assert_gone(answer(&mut rx), 5);
    }

    #[tokio::test]
    async fn a_move_the_game_drops_unhandled_is_answered_unknown_game() {
        let (game, commands) = game();
        let (outbox, mut rx) = Outbox::new(1, 4);
        let player = game.player(Seat::Two);
        let (answer_to, mut sent) = player.answer_to(&outbox, 6);
        player
            .act(SeatAction::OfferDraw, answer_to, Instant::now())
            .await;
        // Queued for the game, which has not handled it: nothing is answered yet.
        assert!(sent.try_recv().is_err());
        assert!(rx.try_recv().is_err());
        // The game ends with the move still queued.
        drop(commands);
        sent.await.expect("answered");
        assert_gone(answer(&mut rx), 6);
    }

    #[tokio::test]
    async fn an_answer_marked_sent_sends_nothing_more() {
        let (game, _commands) = game();
        let (outbox, mut rx) = Outbox::new(1, 4);
        let (answer_to, sent) = game.player(Seat::One).answer_to(&outbox, 7);
        answer_to.sent();
        sent.await.expect("answered");
        assert!(rx.try_recv().is_err());
    }
}
