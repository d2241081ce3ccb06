//! The bus between the socket tier and the game tier.
//!
//! The socket tier owns sockets: each connection has a reader task and a writer task, and
//! only the writer writes to its socket, draining the connection's bounded `Outbox`. The
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

mod topic;

use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use dashmap::DashMap;
use elementals_protocol::messages::{GameId, RequestId, ServerMsg};
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;
use futures::future::BoxFuture;
use tokio::sync::mpsc::{self, error::TrySendError};

use crate::game::{GameCmd, GameError};
use crate::game::{GAME_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY};
use crate::lobby::{LobbyCmd, LOBBY_CHANNEL_CAPACITY};
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

/// A connection's identity on the bus (unique for the server's life).
pub type ConnId = u64;

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

    /// Appends a batch of `topic`'s numbered events, each encoded once, to its stream.
    fn publish(&self, topic: GameId, frames: &[Bytes]);

    /// Whether some subscriber of `topic` still lacks some frame.
    fn has_backlog(&self, topic: GameId) -> bool;

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

    /// The game tier: the lobby takes commands; its task reads them from the receiver.
    fn open_lobby(&self) -> mpsc::Receiver<LobbyCmd>;

    /// Sends `cmd` to the lobby, waiting for room in its queue; a command it cannot take
    /// (it has stopped) is answered `internal`.
    fn to_lobby(&self, cmd: LobbyCmd) -> BoxFuture<'_, ()>;

    /// Sends the lobby a notice that must not be lost (`Gone`), without waiting.
    fn notify_lobby(&self, cmd: LobbyCmd);

    /// The answer to `reply` is queued: tells its session, if it waits for that.
    fn answered(&self, reply: ReplyTo, ok: bool) {
        if reply.settle {
            self.notify_session(reply.conn, Notice::Answered { ok });
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

/// Where the answer to a command for a game or the lobby goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTo {
    /// The connection that asked, on the bus.
    pub conn: ConnId,
    /// The request answered, if the client made one (an attach at sign-in, or the lobby's
    /// seating, answers none).
    pub request_id: Option<RequestId>,
    /// Whether the connection's session waits for `Notice::Answered` before it handles
    /// anything else (`Session::settle`).
    pub settle: bool,
}

/// Word to a connection's session (not its socket) from the game tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// A command of the connection's to a game or the lobby is answered: whatever the
    /// answer sends the client is queued before this. `ok` says whether it took effect (an
    /// attach or a watch began; a move was judged, even if refused by the rules).
    Answered { ok: bool },
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

/// The bus within one process: the open connections' outboxes by identity, and the games'
/// topics.
#[derive(Debug, Default)]
pub struct LocalBus {
    connections: DashMap<ConnId, Outbox>,
    sessions: DashMap<ConnId, mpsc::UnboundedSender<Notice>>,
    lobby: Mutex<Option<mpsc::Sender<LobbyCmd>>>,
    games: DashMap<GameId, GameQueues>,
    /// Each is used by its game's task alone (or its supervisor once that task is gone),
    /// so its lock is never contended; the map's guard is dropped before it is taken.
    topics: DashMap<GameId, Arc<Mutex<topic::Topic>>>,
}

/// A game's command queues (see `GameInbox`).
#[derive(Debug, Clone)]
struct GameQueues {
    players: mpsc::Sender<GameCmd>,
    spectators: mpsc::Sender<GameCmd>,
}

impl GameQueues {
    fn of(&self, cmd: &GameCmd) -> &mpsc::Sender<GameCmd> {
        if cmd.is_spectators() {
            &self.spectators
        } else {
            &self.players
        }
    }
}

impl LocalBus {
    /// The lobby's queue, if it takes commands.
    fn lobby(&self) -> Option<mpsc::Sender<LobbyCmd>> {
        self.lobby
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Game `game`'s queue for `cmd`, if the game takes commands (a clone: no guard of the
    /// map is held while sending).
    fn queue_for(&self, game: GameId, cmd: &GameCmd) -> Option<mpsc::Sender<GameCmd>> {
        self.games.get(&game).map(|q| q.of(cmd).clone())
    }

    /// `f` on `topic`'s state, if it has any.
    fn topic<T>(&self, topic: GameId, f: impl FnOnce(&mut topic::Topic) -> T) -> Option<T> {
        let state = self.topics.get(&topic).map(|t| Arc::clone(&t))?;
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&mut state))
    }

    /// `f` on connection `to`'s outbox, or `Closed` if it is gone. (The map's guard lives
    /// only for the call, which touches no other entry.)
    fn with<T>(
        &self,
        to: ConnId,
        f: impl FnOnce(&Outbox) -> Result<T, SendError>,
    ) -> Result<T, SendError> {
        match self.connections.get(&to) {
            Some(outbox) => f(&outbox),
            None => Err(SendError::Closed),
        }
    }
}

impl Bus for LocalBus {
    fn connect(&self, outbox: &Outbox) {
        let conn = outbox.conn_id();
        // (The guard is gone before the insert below: it holds the shard's lock.)
        let open = self.connections.get(&conn).is_some_and(|o| !o.is_closed());
        if open {
            return;
        }
        self.connections.insert(conn, outbox.clone());
        // A connection that ended meanwhile has been disconnected already (its writer is
        // gone before that): not kept, so nothing is left behind.
        if outbox.is_closed() {
            self.connections.remove(&conn);
        }
    }

    fn disconnect(&self, conn: ConnId) {
        self.connections.remove(&conn);
        self.sessions.remove(&conn);
    }

    fn send(&self, to: ConnId, frame: Bytes) -> Result<(), SendError> {
        self.with(to, |outbox| outbox.send(frame))
    }

    fn send_framed(&self, to: ConnId, framed: &Arc<Framed>, from: usize) -> Result<(), SendError> {
        self.with(to, |outbox| outbox.send_framed(framed, from))
    }

    fn kill(&self, to: ConnId) {
        let _ = self.with(to, |outbox| {
            outbox.kill();
            Ok(())
        });
    }

    fn close(&self, to: ConnId, code: u16, reason: &'static str) {
        let _ = self.with(to, |outbox| {
            outbox.close(code, reason);
            Ok(())
        });
    }

    fn is_closed(&self, to: ConnId) -> bool {
        self.with(to, |outbox| Ok(outbox.is_closed()))
            .unwrap_or(true)
    }

    fn subscribe(&self, topic: GameId, conn: ConnId) -> bool {
        let state = Arc::clone(&self.topics.entry(topic).or_default());
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.subscribe(conn)
    }

    fn unsubscribe(&self, topic: GameId, conn: ConnId) -> bool {
        self.topic(topic, |t| t.unsubscribe(conn)).unwrap_or(false)
    }

    fn subscribers(&self, topic: GameId) -> u32 {
        self.topic(topic, |t| t.count()).unwrap_or(0)
    }

    fn publish(&self, topic: GameId, frames: &[Bytes]) {
        self.topic(topic, |t| t.publish(frames));
    }

    fn has_backlog(&self, topic: GameId) -> bool {
        self.topic(topic, |t| t.has_backlog()).unwrap_or(false)
    }

    fn deliver(&self, topic: GameId, chunk: usize) -> Delivery {
        self.topic(topic, |t| t.deliver(self, chunk))
            .unwrap_or(Delivery {
                done: true,
                ..Delivery::default()
            })
    }

    fn resync(&self, topic: GameId, snapshot: Bytes) {
        self.topic(topic, |t| t.resync(snapshot));
    }

    fn close_topic(&self, topic: GameId) -> u32 {
        self.topics.remove(&topic).map_or(0, |(_, state)| {
            state.lock().unwrap_or_else(PoisonError::into_inner).count()
        })
    }

    fn open_game(&self, game: GameId) -> GameInbox {
        // The capacities, and why they suffice, are documented at their constants.
        let (players, players_rx) = mpsc::channel(GAME_CHANNEL_CAPACITY);
        let (spectators, spectators_rx) = mpsc::channel(SPECTATOR_CHANNEL_CAPACITY);
        self.games.insert(
            game,
            GameQueues {
                players,
                spectators,
            },
        );
        GameInbox {
            players: players_rx,
            spectators: spectators_rx,
        }
    }

    fn close_game(&self, game: GameId) {
        self.games.remove(&game);
    }

    fn has_game(&self, game: GameId) -> bool {
        self.games.contains_key(&game)
    }

    fn to_game(&self, game: GameId, cmd: GameCmd) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(queue) = self.queue_for(game, &cmd) else {
                return self.refuse(game, &cmd);
            };
            if let Err(mpsc::error::SendError(cmd)) = queue.send(cmd).await {
                self.refuse(game, &cmd);
            }
        })
    }

    fn notify_game(&self, game: GameId, cmd: GameCmd) {
        if let Some(queue) = self.queue_for(game, &cmd) {
            notify(&queue, cmd);
        }
    }

    #[cfg(test)]
    fn try_to_game(&self, game: GameId, cmd: GameCmd) -> Result<(), GameCmd> {
        let Some(queue) = self.queue_for(game, &cmd) else {
            return Err(cmd);
        };
        queue.try_send(cmd).map_err(|e| match e {
            TrySendError::Full(cmd) | TrySendError::Closed(cmd) => cmd,
        })
    }

    fn open_session(&self, conn: ConnId) -> mpsc::UnboundedReceiver<Notice> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.sessions.insert(conn, tx);
        rx
    }

    fn notify_session(&self, to: ConnId, notice: Notice) {
        if let Some(session) = self.sessions.get(&to) {
            let _ = session.send(notice);
        }
    }

    fn open_lobby(&self) -> mpsc::Receiver<LobbyCmd> {
        // The capacity, and why it suffices, is documented at its constant.
        let (tx, rx) = mpsc::channel(LOBBY_CHANNEL_CAPACITY);
        *self.lobby.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    fn to_lobby(&self, cmd: LobbyCmd) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(lobby) = self.lobby() else {
                return lobby_stopped(self, &cmd);
            };
            if let Err(mpsc::error::SendError(cmd)) = lobby.send(cmd).await {
                lobby_stopped(self, &cmd);
            }
        })
    }

    fn notify_lobby(&self, cmd: LobbyCmd) {
        if let Some(lobby) = self.lobby() {
            notify(&lobby, cmd);
        }
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

#[cfg(test)]
mod tests;
