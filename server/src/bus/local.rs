//! `LocalBus`: the bus within one process.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use dashmap::DashMap;
use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{lobby_stopped, notify, topic};
use super::{Bus, Delivery, GameInbox, Published, Starter, Waker};
use crate::msg::{ConnId, GameCmd, Holding, LobbyCmd, NewGame, Notice};
use crate::msg::{GAME_CHANNEL_CAPACITY, LOBBY_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY};
use crate::outbox::{Framed, Outbox, SendError};

/// The bus within one process: the open connections' outboxes by identity, and the games'
/// topics.
#[derive(Debug, Default)]
pub struct LocalBus {
    pub(super) connections: DashMap<ConnId, Outbox>,
    sessions: DashMap<ConnId, mpsc::UnboundedSender<Notice>>,
    lobby: Mutex<Option<mpsc::Sender<LobbyCmd>>>,
    /// What each open connection has open in the lobby, as the lobby last said.
    held: DashMap<ConnId, Holding>,
    games: DashMap<GameId, GameQueues>,
    /// Each is used by its game's task alone (or its supervisor once that task is gone),
    /// so its lock is never contended; the map's guard is dropped before it is taken.
    topics: DashMap<GameId, Arc<Mutex<topic::Topic>>>,
    /// Wakes a hibernated game that a command comes for (`Bus::set_waker`).
    waker: Installed<Waker>,
    /// Starts the games the lobby starts here (`Bus::set_starter`).
    starter: Installed<Starter>,
}

/// A callback the server installs once its services run (the waker, the starter).
struct Installed<T>(std::sync::RwLock<Option<T>>);

impl<T> Default for Installed<T> {
    fn default() -> Self {
        Installed(std::sync::RwLock::new(None))
    }
}

impl<T: Clone> Installed<T> {
    fn set(&self, value: Option<T>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = value;
    }

    fn get(&self) -> Option<T> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<T> std::fmt::Debug for Installed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Installed")
    }
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
    /// The open connections here, and what they have open in the lobby.
    pub(super) fn holdings(&self) -> (Vec<ConnId>, Vec<Holding>) {
        let open = self
            .connections
            .iter()
            .filter(|o| !o.is_closed())
            .map(|o| *o.key())
            .collect();
        let held = self
            .held
            .iter()
            .filter(|h| !self.is_closed(*h.key()))
            .map(|h| h.value().clone())
            .collect();
        (open, held)
    }

    pub(super) fn lobby(&self) -> Option<mpsc::Sender<LobbyCmd>> {
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

    /// The subscribers of `topic`.
    pub(super) fn subscribed(&self, topic: GameId) -> Vec<ConnId> {
        self.topic(topic, |t| t.subscribed()).unwrap_or_default()
    }

    /// The subscribers of `topic` that have fallen behind (for a node that fans out
    /// another node's game: `RedisBus`).
    pub(super) fn lagging(&self, topic: GameId) -> Vec<ConnId> {
        self.topic(topic, |t| t.lagging()).unwrap_or_default()
    }

    /// Test-only: whether some subscriber of `topic` still lacks some frame.
    #[cfg(test)]
    pub(super) fn has_backlog(&self, topic: GameId) -> bool {
        self.topic(topic, |t| t.has_backlog()).unwrap_or(false)
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
        self.held.remove(&conn);
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

    fn publish(&self, topic: GameId, frames: &[Bytes]) -> Published {
        self.topic(topic, |t| {
            t.publish(frames);
            Published {
                subscribers: t.count(),
                backlog: t.has_backlog(),
            }
        })
        .unwrap_or_default()
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

    fn set_waker(&self, waker: Option<Waker>) {
        self.waker.set(waker);
    }

    fn wake(&self, game: GameId) -> bool {
        self.waker.get().is_some_and(|wake| wake(game))
    }

    /// A game that takes no commands but sleeps is woken, its inbox opened at once, so the
    /// command waits there while the game is restored. A queue that closes under the send
    /// (the game has just gone to sleep) is looked up, or woken, once more.
    fn to_game(&self, game: GameId, cmd: GameCmd) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut cmd = cmd;
            for _ in 0..2 {
                let queue = match self.queue_for(game, &cmd) {
                    Some(queue) => queue,
                    None if self.wake(game) => match self.queue_for(game, &cmd) {
                        Some(queue) => queue,
                        None => break,
                    },
                    None => break,
                };
                match queue.send(cmd).await {
                    Ok(()) => return,
                    Err(mpsc::error::SendError(back)) => cmd = back,
                }
            }
            self.refuse(game, &cmd);
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
            mpsc::error::TrySendError::Full(cmd) | mpsc::error::TrySendError::Closed(cmd) => cmd,
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

    fn open_lobby(&self, _generation: i64) -> mpsc::Receiver<LobbyCmd> {
        // The capacity, and why it suffices, is documented at its constant.
        let (tx, rx) = mpsc::channel(LOBBY_CHANNEL_CAPACITY);
        *self.lobby.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    fn close_lobby(&self) {
        *self.lobby.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Kept only while the connection is open here.
    fn hold(&self, conn: ConnId, holding: Option<Holding>) {
        match holding {
            Some(holding) if !self.is_closed(conn) => {
                self.held.insert(conn, holding);
            }
            _ => {
                self.held.remove(&conn);
            }
        }
    }

    fn set_starter(&self, starter: Option<Starter>) {
        self.starter.set(starter);
    }

    /// Here: every connection is this node's.
    fn start_game(&self, game: NewGame) {
        match self.starter.get() {
            Some(start) => start(game),
            None => tracing::warn!(game = %game.setup.game_id, "no game starts here now"),
        }
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
