//! Commands to a game, and the handles that send them. A command is plain data: the
//! game's id is where it goes (over the bus, `Bus::to_game`), and its `ReplyTo` says where
//! the answer goes (a connection, by identity) and whether that connection's session waits
//! for word that it is answered (`Notice`). A player's handle is bound to one seat and can
//! only act for it; a spectator's handle can only watch.

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, RequestId};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;
use tokio::time::Instant;

use crate::bus::{Bus, ConnId, Notice, ReplyTo};
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

    /// What a command to a game that does not exist, or has ended, is answered.
    pub fn gone() -> Self {
        GameError::new(ErrorCode::UnknownGame, "the game has ended")
    }
}

/// A seat-bound action.
#[derive(Debug)]
pub enum SeatAction {
    /// With `pick` and `nonce`, the reveal is escrowed (both or neither; the state checks).
    Commit {
        round: u32,
        commitment: Vec<u8>,
        pick: Option<Element>,
        nonce: Option<Vec<u8>>,
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

/// A command to a game: plain data (connections by identity, no channel, no socket).
#[derive(Debug)]
pub enum GameCmd {
    /// A player's connection (re)attaches to its seat; replaces any earlier one. The game
    /// queues the snapshot (answering `reply.request_id`, if any), so it is ordered with
    /// the game's events.
    Attach {
        seat: Seat,
        reply: ReplyTo,
        /// A frame queued just before the snapshot: the session's `authenticated`, which
        /// names this game, so that the two arrive together or not at all.
        prelude: Option<Bytes>,
    },
    /// A player's connection went away (ignored unless `conn_id` is the attached one).
    Detach { seat: Seat, conn_id: ConnId },
    /// A player's move. The game sends the reply (`ok` or `error`) itself: first in the
    /// same write as the events the move caused when `reply.conn` is the seat's attached
    /// connection, alone otherwise.
    Act {
        seat: Seat,
        action: SeatAction,
        reply: ReplyTo,
        /// When the move's frame was read off the socket: the game judges the move (its
        /// clock) at this instant, so time spent in the game's queue is not charged. (In
        /// process; a bus between processes carries how long ago that was.)
        arrived: Instant,
    },
    /// Start (or resynchronise) watching; the snapshot is queued like `Attach`'s. On the
    /// spectators' queue.
    Watch { reply: ReplyTo },
    /// On the spectators' queue.
    Unwatch { conn_id: ConnId },
    /// Test-only: the game as it is now.
    #[cfg(any(test, feature = "test-hooks"))]
    Snapshot {
        reply: tokio::sync::oneshot::Sender<elementals_protocol::messages::GameSnapshot>,
    },
    /// Test-only: make the actor panic, to show that one game's crash harms nothing else.
    #[cfg(any(test, feature = "test-hooks"))]
    Panic,
}

impl GameCmd {
    /// Whether the command goes on the spectators' queue, which the game reads only when
    /// no player's command waits.
    pub fn is_spectators(&self) -> bool {
        matches!(self, GameCmd::Watch { .. } | GameCmd::Unwatch { .. })
    }

    /// Where its answer goes, if it is owed one.
    pub fn reply_to(&self) -> Option<ReplyTo> {
        match self {
            GameCmd::Attach { reply, .. }
            | GameCmd::Act { reply, .. }
            | GameCmd::Watch { reply } => Some(*reply),
            _ => None,
        }
    }
}

/// A game as the registry and the lobby know it: its id, and the bus its commands go by.
#[derive(Debug, Clone)]
pub struct GameHandle {
    game_id: GameId,
    bus: Arc<dyn Bus>,
}

impl GameHandle {
    pub fn new(game_id: GameId, bus: Arc<dyn Bus>) -> Self {
        GameHandle { game_id, bus }
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

    /// Whether the game's task has ended.
    pub fn is_finished(&self) -> bool {
        !self.bus.has_game(self.game_id)
    }

    /// Test-only: the game as it is now.
    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn snapshot(&self) -> Result<elementals_protocol::messages::GameSnapshot, GameError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.bus
            .to_game(self.game_id, GameCmd::Snapshot { reply })
            .await;
        rx.await.map_err(|_| GameError::gone())
    }

    /// Test-only: queues `cmd` without waiting for room; the command back once its queue
    /// is full.
    #[cfg(test)]
    pub(crate) fn try_send(&self, cmd: GameCmd) -> Result<(), GameCmd> {
        self.bus.try_to_game(self.game_id, cmd)
    }

    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn force_panic(&self) {
        self.bus.to_game(self.game_id, GameCmd::Panic).await;
    }
}

/// For a caller in this process with a connection of its own and no session (a bot, a
/// test harness): puts `outbox`'s connection on `bus`, sends what `send` makes of the
/// `ReplyTo` for request `request_id`, and waits for the answer; whether it took effect.
/// (The connection's notices go to this call: not for a connection that has a session.)
async fn ask<F: std::future::Future<Output = ()>>(
    bus: &dyn Bus,
    outbox: &Outbox,
    request_id: Option<RequestId>,
    send: impl FnOnce(ReplyTo) -> F,
) -> bool {
    bus.connect(outbox);
    let mut notices = bus.open_session(outbox.conn_id());
    let reply = ReplyTo {
        conn: outbox.conn_id(),
        request_id,
        settle: true,
    };
    send(reply).await;
    matches!(
        notices.recv().await,
        Some(Notice::Answered { ok: true, .. })
    )
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

    /// Puts `outbox`'s connection on the bus (it may be addressed by identity) and
    /// returns its identity.
    pub fn connect(&self, outbox: &Outbox) -> ConnId {
        self.game.bus.connect(outbox);
        outbox.conn_id()
    }

    /// Attaches connection `reply.conn` (on the bus) to this seat; the game queues
    /// `prelude`, if any, and the snapshot to it (see `GameCmd::Attach`). If the game is
    /// gone, neither is queued, and the answer is as `Bus::refuse` says. Returns once the
    /// game has the command, not once it is answered.
    pub async fn attach(&self, reply: ReplyTo, prelude: Option<Bytes>) {
        let seat = self.seat;
        let cmd = GameCmd::Attach {
            seat,
            reply,
            prelude,
        };
        self.game.bus.to_game(self.game.game_id, cmd).await;
    }

    /// `attach` from a connection of the caller's own (see `ask`), waiting for the answer.
    pub async fn attach_outbox(&self, outbox: &Outbox) -> bool {
        ask(&*self.game.bus, outbox, None, |reply| {
            self.attach(reply, None)
        })
        .await
    }

    /// `act` from a connection of the caller's own (see `ask`) as its request
    /// `request_id`, waiting for the answer (queued to `outbox`); whether the game took
    /// the move.
    pub async fn act_from(
        &self,
        outbox: &Outbox,
        request_id: RequestId,
        action: SeatAction,
    ) -> bool {
        let arrived = Instant::now();
        ask(&*self.game.bus, outbox, Some(request_id), |reply| {
            self.act(action, reply, arrived)
        })
        .await
    }

    /// The connection `conn_id` is gone. Never lost (`Bus::notify_game`).
    pub fn detach(&self, conn_id: ConnId) {
        let cmd = GameCmd::Detach {
            seat: self.seat,
            conn_id,
        };
        self.game.bus.notify_game(self.game.game_id, cmd);
    }

    /// Hands a move that `arrived` (its frame read off the socket) to the game, which
    /// answers it to `reply`; returns once the game has it, not once it is answered.
    pub async fn act(&self, action: SeatAction, reply: ReplyTo, arrived: Instant) {
        let cmd = GameCmd::Act {
            seat: self.seat,
            action,
            reply,
            arrived,
        };
        self.game.bus.to_game(self.game.game_id, cmd).await;
    }

    /// Test-only: the game as it is now.
    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn snapshot(&self) -> Result<elementals_protocol::messages::GameSnapshot, GameError> {
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

    /// Puts `outbox`'s connection on the bus and returns its identity.
    pub fn connect(&self, outbox: &Outbox) -> ConnId {
        self.game.bus.connect(outbox);
        outbox.conn_id()
    }

    /// Asks to watch (see `GameCmd::Watch`), on the spectators' queue; returns once the
    /// game has the command.
    pub async fn watch(&self, reply: ReplyTo) {
        let cmd = GameCmd::Watch { reply };
        self.game.bus.to_game(self.game.game_id, cmd).await;
    }

    /// `watch` from a connection of the caller's own (see `ask`), waiting for the answer.
    pub async fn watch_outbox(&self, outbox: &Outbox) -> bool {
        ask(&*self.game.bus, outbox, None, |reply| self.watch(reply)).await
    }

    /// Never lost (`Bus::notify_game`).
    pub fn unwatch(&self, conn_id: ConnId) {
        let cmd = GameCmd::Unwatch { conn_id };
        self.game.bus.notify_game(self.game.game_id, cmd);
    }
}
