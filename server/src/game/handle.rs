//! Handles to a game actor. A player's handle is bound to one seat and can only act for
//! it; a spectator's handle can only watch. Both wrap the same bounded command channel.

use bytes::Bytes;
use elementals_protocol::messages::{GameId, GameSnapshot, RequestId};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;
use tokio::sync::{mpsc, oneshot};

use crate::outbox::Outbox;

/// Commands a game may have queued. Each player sends at most a few per round, so this
/// only fills if the actor is stuck; senders then wait (players) or give up (spectators).
pub const GAME_CHANNEL_CAPACITY: usize = 64;

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

/// The request a move answers, and the connection that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerTo {
    pub conn_id: u64,
    pub request_id: RequestId,
}

/// Who sends the reply to a move that was made (or refused, for `Sent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The game wrote it, with the move's events: the caller sends nothing.
    Sent,
    /// The move was made; the caller sends the `ok`.
    ToSend,
}

#[derive(Debug)]
pub enum GameCmd {
    /// A player's connection (re)attaches to its seat; replaces any earlier one. The actor
    /// queues the `snapshot` (answering `request_id`, if any) to the outbox itself, so it
    /// is ordered with the game's events; the reply carries the same snapshot.
    Attach {
        seat: Seat,
        outbox: Outbox,
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
    /// A player's move. When `answer` names the seat's attached connection, the actor
    /// writes the reply (`ok` or `error`) itself, in the same write as the events the move
    /// caused, and answers `Answered::Sent`; otherwise the caller replies.
    Act {
        seat: Seat,
        action: SeatAction,
        answer: Option<AnswerTo>,
        reply: Reply<Answered>,
    },
    /// Start (or resynchronise) watching; the snapshot is queued like `Attach`'s.
    Watch {
        outbox: Outbox,
        request_id: Option<RequestId>,
        reply: Reply<GameSnapshot>,
    },
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
}

impl GameHandle {
    pub fn new(game_id: GameId, tx: mpsc::Sender<GameCmd>) -> Self {
        GameHandle { game_id, tx }
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

    fn notify(&self, cmd: GameCmd) {
        // Detach and unwatch are best effort: a full or closed game has nothing to update.
        let _ = self.tx.try_send(cmd);
    }

    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn force_panic(&self) {
        let _ = self.tx.send(GameCmd::Panic).await;
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

    /// Attach `outbox` to this seat; the actor queues the snapshot to it (see `GameCmd::Attach`).
    pub async fn attach(
        &self,
        outbox: Outbox,
        request_id: Option<RequestId>,
    ) -> Result<GameSnapshot, GameError> {
        self.attach_with(outbox, request_id, None).await
    }

    /// `attach`, with `prelude` queued to `outbox` just before the snapshot. If the game is
    /// gone, neither is queued.
    pub async fn attach_after(
        &self,
        outbox: Outbox,
        prelude: Bytes,
    ) -> Result<GameSnapshot, GameError> {
        self.attach_with(outbox, None, Some(prelude)).await
    }

    async fn attach_with(
        &self,
        outbox: Outbox,
        request_id: Option<RequestId>,
        prelude: Option<Bytes>,
    ) -> Result<GameSnapshot, GameError> {
        let seat = self.seat;
        self.game
            .request(|reply| GameCmd::Attach {
                seat,
                outbox,
                request_id,
                prelude,
                reply,
            })
            .await
    }

    pub fn detach(&self, conn_id: u64) {
        self.game.notify(GameCmd::Detach {
            seat: self.seat,
            conn_id,
        });
    }

    /// Makes a move. With `answer`, the game may send the reply itself (see `GameCmd::Act`);
    /// an error is then returned only when it did not.
    pub async fn act(
        &self,
        action: SeatAction,
        answer: Option<AnswerTo>,
    ) -> Result<Answered, GameError> {
        let seat = self.seat;
        self.game
            .request(|reply| GameCmd::Act {
                seat,
                action,
                answer,
                reply,
            })
            .await
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
    pub async fn watch(
        &self,
        outbox: Outbox,
        request_id: Option<RequestId>,
    ) -> Result<GameSnapshot, GameError> {
        self.game
            .request(|reply| GameCmd::Watch {
                outbox,
                request_id,
                reply,
            })
            .await
    }

    pub fn unwatch(&self, conn_id: u64) {
        self.game.notify(GameCmd::Unwatch { conn_id });
    }
}
