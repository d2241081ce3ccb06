//! The handles that send commands to a game. A command (`crate::msg::GameCmd`) is plain
//! data: the game's id is where it goes (over the bus, `Bus::to_game`), and its `ReplyTo` says where
//! the answer goes (a connection, by identity) and whether that connection's session waits
//! for word that it is answered (`Notice`). A player's handle is bound to one seat and can
//! only act for it; a spectator's handle can only watch.

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, RequestId};
use elementals_protocol::rules::Seat;
use tokio::time::Instant;

use crate::bus::{Bus, ConnId, Notice, ReplyTo};
use crate::msg::{GameCmd, SeatAction};
use crate::outbox::Outbox;

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
    pub async fn snapshot(
        &self,
    ) -> Result<elementals_protocol::messages::GameSnapshot, crate::msg::GameError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.bus
            .to_game(self.game_id, GameCmd::Snapshot { reply })
            .await;
        rx.await.map_err(|_| crate::msg::GameError::gone())
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
    pub async fn snapshot(
        &self,
    ) -> Result<elementals_protocol::messages::GameSnapshot, crate::msg::GameError> {
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
