//! The bus between the socket tier and the game tier.
//!
//! The socket tier owns sockets: each connection has a reader task, a writer task and an
//! `Outbox`, through which everything sent to it goes (written at once when nothing is
//! queued, else queued for the writer, in order). The
//! game tier (the lobby and the game actors) owns games and never holds a socket, an outbox
//! or a connection: it addresses a connection by its identity (`ConnId`) and hands the bus
//! plain data (encoded frames), which the bus delivers to that connection's queue. What
//! crosses it could be serialized: an implementation over a network (a cluster of nodes)
//! fits under the same trait.
//!
//! A game is addressed by its id too: commands go to it as plain data (`GameCmd`), each
//! saying where its answer goes (`ReplyTo`), and the game answers by the bus: frames for
//! the connection, and a `Notice` for its session that the request is answered. A command
//! to a game that does not exist, or has ended, is answered `unknown_game` by the bus
//! (`Bus::refuse`).
//!
//! Each game has a topic (keyed by its id): its spectators subscribe to it, the game
//! publishes its numbered events there, each encoded once, and the topic delivers them,
//! asking the game for a snapshot only when a subscriber has fallen behind (see `topic`).
//!
//! `LocalBus` is the in-process implementation: a directory of the open connections'
//! outboxes, which the socket tier fills as connections open and empties as they end, the
//! sessions' notice queues, the games' command queues and the games' topics.

mod handle;
mod local;
pub mod redis;
mod topic;

pub use handle::{GameHandle, PlayerHandle, SpectatorHandle};
pub use local::LocalBus;

/// Wakes a sleeping game by its id (see `Bus::set_waker`).
pub type Waker = Arc<dyn Fn(GameId) -> bool + Send + Sync>;

/// Starts a game the lobby starts, on this node (see `Bus::set_starter`).
pub type Starter = Arc<dyn Fn(NewGame) + Send + Sync>;
pub use redis::RedisBus;

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, ServerMsg};
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;
use futures::future::BoxFuture;
use tokio::sync::mpsc::{self, error::TrySendError};

pub use crate::msg::{ConnId, Notice, ReplyTo};
use crate::msg::{GameCmd, GameError, Holding, LobbyCmd, NewGame};
use crate::outbox::{Framed, Outbox, SendError};
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use topic::MAX_RESYNC_ATTEMPTS;

/// What one delivery step on a topic did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Subscribers removed (gone, or dropped for lagging).
    pub removed: u32,
    /// Whether every subscriber now has every frame (the backlog is empty).
    pub done: bool,
    /// The delivery stopped at a subscriber that has fallen behind: it needs a snapshot of
    /// the game as it is now (`Bus::resync`), then a next delivery.
    pub lagging: bool,
}

/// A topic after a `publish`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// How many connections the topic has.
    pub subscribers: u32,
    /// Whether some subscriber still lacks some frame (a delivery is owed).
    pub backlog: bool,
}

/// How the game tier reaches connections. Nothing here waits: a connection whose queue is
/// full is reported (`SendError::Full`), and what to do then is the sender's choice.
pub trait Bus: Send + Sync + Debug {
    /// The socket tier: `outbox`'s connection may be addressed (again: idempotent while
    /// the connection is open). An outbox already closed is not kept.
    fn connect(&self, outbox: &Outbox);

    /// The socket tier: connection `conn` has ended; what is addressed to it is dropped.
    fn disconnect(&self, conn: ConnId);

    /// Queues one encoded frame for connection `to`.
    fn send(&self, to: ConnId, frame: Bytes) -> Result<(), SendError>;

    /// Queues `framed`'s frames from `from` on for connection `to`, as one item.
    fn send_framed(&self, to: ConnId, framed: &Arc<Framed>, from: usize) -> Result<(), SendError>;

    /// Drops connection `to` without sending what is queued (it fell behind).
    fn kill(&self, to: ConnId);

    /// Closes connection `to` with a close code, after what is queued to it.
    fn close(&self, to: ConnId, code: u16, reason: &'static str);

    /// Whether connection `to` is gone (or going).
    fn is_closed(&self, to: ConnId) -> bool;

    /// Subscribes connection `conn` to game `topic`'s events from the next one on (it has
    /// been sent a snapshot of the game as it is now); a connection already subscribed
    /// starts over. Returns whether the count grew.
    fn subscribe(&self, topic: GameId, conn: ConnId) -> bool;

    /// Returns whether `conn` was subscribed to `topic`.
    fn unsubscribe(&self, topic: GameId, conn: ConnId) -> bool;

    /// How many connections `topic` has.
    fn subscribers(&self, topic: GameId) -> u32;

    /// Appends a batch of `topic`'s numbered events, each encoded once, to its stream,
    /// and says what the topic now has to deliver (in the same look-up: the game asks at
    /// every event).
    fn publish(&self, topic: GameId, frames: &[Bytes]) -> Published;

    /// Makes up to `chunk` more sends of `topic`'s delivery, each bringing a subscriber up
    /// to the end of the stream (one item per subscriber: its part of the frames, framed
    /// once). Never waits; see `Delivery` for what it tells the game.
    fn deliver(&self, topic: GameId, chunk: usize) -> Delivery;

    /// A snapshot of the game as it is now (after every frame published to `topic`), for
    /// the next delivery's subscribers that have fallen behind.
    fn resync(&self, topic: GameId, snapshot: Bytes);

    /// The game is over: `topic` and its subscribers are forgotten. Returns how many it had.
    fn close_topic(&self, topic: GameId) -> u32;

    /// The game tier: game `game` takes commands; its task reads them from the inbox.
    fn open_game(&self, game: GameId) -> GameInbox;

    /// The game tier: game `game`'s task has ended (its inbox is closed and drained).
    fn close_game(&self, game: GameId);

    /// Whether game `game` takes commands (its task runs).
    fn has_game(&self, game: GameId) -> bool;

    /// Hibernation: `waker` is asked to wake a game that takes no commands when a command
    /// comes for it (it opens the game's inbox and answers true if the game sleeps). In
    /// cluster mode the node a command reaches wakes the game (`RedisBus` passes the waker
    /// to its `LocalBus`).
    fn set_waker(&self, _waker: Option<Waker>) {}

    /// Wakes game `game` if it sleeps; whether it is waking now.
    fn wake(&self, _game: GameId) -> bool {
        false
    }

    /// Sends `cmd` to game `game`, waiting for room in its queue (so a game that falls
    /// behind slows its senders); a command the game cannot take is `refuse`d.
    fn to_game(&self, game: GameId, cmd: GameCmd) -> BoxFuture<'_, ()>;

    /// Sends a command that must not be lost and that nobody waits for (a seat's
    /// `Detach`, an `Unwatch`), without waiting: with the queue full, it is queued as soon
    /// as there is room.
    fn notify_game(&self, game: GameId, cmd: GameCmd);

    /// Test-only: `to_game` without waiting; the command back if the queue is full or
    /// closed.
    #[cfg(test)]
    fn try_to_game(&self, game: GameId, cmd: GameCmd) -> Result<(), GameCmd>;

    /// The socket tier: connection `conn`'s session hears the game tier's notices from the
    /// receiver returned (in place of any earlier one), until the connection ends.
    fn open_session(&self, conn: ConnId) -> mpsc::UnboundedReceiver<Notice>;

    /// Tells connection `to`'s session `notice`.
    fn notify_session(&self, to: ConnId, notice: Notice);

    /// The game tier: the lobby (its `generation`) runs here and takes commands; its task
    /// reads them from the receiver. In a cluster every node hears where it runs now.
    fn open_lobby(&self, generation: i64) -> mpsc::Receiver<LobbyCmd>;

    /// The lobby's task here has stopped (its lease lost).
    fn close_lobby(&self);

    /// Sends `cmd` to the lobby, wherever it runs, waiting for room in its queue; a
    /// command it cannot take (it has stopped, or is moving) is answered `internal`.
    fn to_lobby(&self, cmd: LobbyCmd) -> BoxFuture<'_, ()>;

    /// Sends the lobby a notice that must not be lost (`Gone`), without waiting.
    fn notify_lobby(&self, cmd: LobbyCmd);

    /// The lobby: what connection `conn` has open in it now (`None`: nothing), kept by the
    /// connection's node while it is open.
    fn hold(&self, conn: ConnId, holding: Option<Holding>);

    /// What starts a game on this node at the lobby's word (`start_game`), wherever the
    /// lobby runs.
    fn set_starter(&self, starter: Option<Starter>);

    /// The lobby: starts `game` on the node of one of its players' connections (the first
    /// seat's whose node is alive; else this node), without waiting; that node runs it
    /// and tells its players. A single node starts every game itself.
    fn start_game(&self, game: NewGame);

    /// The answer to `reply` is queued: tells its session, if it waits for that.
    fn answered(&self, reply: ReplyTo, ok: bool) {
        if reply.settle {
            self.notify_session(
                reply.conn,
                Notice::Answered {
                    ok,
                    request: reply.request_id,
                },
            );
        }
    }

    /// Answers `reply` with `msg` or the error (with the request's id), then tells its
    /// session.
    fn answer(&self, reply: ReplyTo, answer: Result<ServerMsg, (ErrorCode, String)>) {
        let ok = answer.is_ok();
        let msg = answer
            .unwrap_or_else(|(code, message)| ServerMsg::error(reply.request_id, code, message));
        self.send_msg_or_kill(reply.conn, &msg);
        self.answered(reply, ok);
    }

    /// Answers a command that game `game` will never handle (it does not exist, or has
    /// ended): `unknown_game` to its request, if it made one.
    fn refuse(&self, game: GameId, cmd: &GameCmd) {
        if let Some(reply) = cmd.reply_to() {
            self.refuse_reply(game, reply);
        }
    }

    /// `refuse`, for the command that owed `reply`.
    fn refuse_reply(&self, _game: GameId, reply: ReplyTo) {
        let gone = GameError::gone();
        refused(self, reply, gone.code, &gone.message);
    }

    /// `send`, killing the connection if its queue is full: for what a client cannot be
    /// left without (a reply, a player's events).
    fn send_or_kill(&self, to: ConnId, frame: Bytes) {
        if self.send(to, frame) == Err(SendError::Full) {
            self.kill(to);
        }
    }

    /// Encodes `msg` and `send`s it.
    fn send_msg(&self, to: ConnId, msg: &ServerMsg) -> Result<(), SendError> {
        self.send(to, Bytes::from(wire::encode(msg)))
    }

    /// Encodes `msg` and `send_or_kill`s it.
    fn send_msg_or_kill(&self, to: ConnId, msg: &ServerMsg) {
        self.send_or_kill(to, Bytes::from(wire::encode(msg)));
    }

    /// `send_framed`, killing the connection if its queue is full.
    fn send_framed_or_kill(&self, to: ConnId, framed: &Arc<Framed>, from: usize) {
        if self.send_framed(to, framed, from) == Err(SendError::Full) {
            self.kill(to);
        }
    }
}

/// Tells connection `conn` that its account signed in on another connection (of this
/// node or another node of the cluster), and closes it.
pub fn supersede(bus: &dyn Bus, conn: ConnId) {
    let notice = ServerMsg::Notice {
        code: "superseded".into(),
        message: "this account signed in on another connection".into(),
    };
    let _ = bus.send_msg(conn, &notice);
    bus.close(
        conn,
        crate::msg::close::SUPERSEDED,
        "superseded by a newer connection",
    );
}

/// Answers a command nobody will handle `code` (if it has a request), and tells its
/// session.
fn refused<B: Bus + ?Sized>(bus: &B, reply: ReplyTo, code: ErrorCode, message: &str) {
    if let Some(id) = reply.request_id {
        bus.send_msg_or_kill(reply.conn, &ServerMsg::error(Some(id), code, message));
    }
    bus.answered(reply, false);
}

/// What the lobby's command `cmd` is answered when the lobby has stopped.
fn lobby_stopped<B: Bus + ?Sized>(bus: &B, cmd: &LobbyCmd) {
    if let Some(reply) = cmd.reply_to() {
        refused(bus, reply, ErrorCode::Internal, "the lobby has stopped");
    }
}

/// What a game's task reads its commands from: the players' queue, and the spectators',
/// which it reads only when no player's command waits.
#[derive(Debug)]
pub struct GameInbox {
    pub players: mpsc::Receiver<GameCmd>,
    pub spectators: mpsc::Receiver<GameCmd>,
}

/// `chunk` sends of `topic`'s delivery, with a snapshot from `resync` (made at most once)
/// if the topic asks for one.
pub fn deliver(
    bus: &dyn Bus,
    topic: GameId,
    chunk: usize,
    resync: impl FnOnce() -> Bytes,
) -> Delivery {
    let first = bus.deliver(topic, chunk);
    if !first.lagging {
        return first;
    }
    bus.resync(topic, resync());
    let rest = bus.deliver(topic, chunk);
    Delivery {
        removed: first.removed + rest.removed,
        ..rest
    }
}

/// Delivers the whole of `topic`'s backlog now (a game that is stopping).
pub fn deliver_all(bus: &dyn Bus, topic: GameId, mut resync: impl FnMut() -> Bytes) -> Delivery {
    let mut total = Delivery::default();
    loop {
        let delivery = deliver(bus, topic, usize::MAX, &mut resync);
        total.removed += delivery.removed;
        if delivery.done {
            total.done = true;
            return total;
        }
    }
}

/// Sends a notice that must not be lost (a seat's `Detach`, an `Unwatch`, the lobby's
/// `Gone`): at once if the channel has room, else from a task that waits for room. The
/// waiting tasks are bounded by construction: a connection sends each notice once (as it
/// ends: a detach for its seat, an unwatch for each game it watches, at most 16, a gone
/// to the lobby; or an unwatch as it asks; a game's end, told to the lobby once, and its
/// ratings once), so there are never more than that per connection that closed or
/// unwatched, or game that ended, while a queue was full, and each task is gone once
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

#[cfg(test)]
mod tests;
