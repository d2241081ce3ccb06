//! `Bus` for `RedisBus`: this node's connections and topics through its `LocalBus`, the
//! rest across Redis.

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::wire::{self, NodeMsg, TopicMsg};
use super::{node_of, RedisBus};
use crate::bus::{notify, Bus, Delivery, GameInbox, Published, Starter, Waker};
use crate::msg::{ConnId, GameCmd, Holding, LobbyCmd, NewGame, Notice};
use crate::msg::{GAME_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY};
use crate::outbox::{Framed, Outbox, SendError};

impl RedisBus {
    /// `send` or `send_or_kill` to connection `to` of another node.
    fn send_remote(&self, to: ConnId, frame: Bytes, kill_if_full: bool) {
        let msg = NodeMsg::Send {
            conn: to,
            frame,
            kill_if_full,
        };
        self.link.node(node_of(to), &msg, None);
    }

    fn send_framed_remote(&self, to: ConnId, framed: &Framed, from: usize, kill_if_full: bool) {
        let frames = framed.frames().get(from..).unwrap_or_default().to_vec();
        let msg = NodeMsg::SendFramed {
            conn: to,
            frames,
            kill_if_full,
        };
        self.link.node(node_of(to), &msg, None);
    }
}

impl Bus for RedisBus {
    fn connect(&self, outbox: &Outbox) {
        self.local.connect(outbox);
    }

    fn disconnect(&self, conn: ConnId) {
        self.owed.remove(&conn);
        self.late.remove(&conn);
        self.local.disconnect(conn);
    }

    /// To another node's connection, `Ok` once it is on its way (whether it fits is that
    /// node's to see: `send_or_kill` says there what to do if not).
    fn send(&self, to: ConnId, frame: Bytes) -> Result<(), SendError> {
        if self.is_local(to) {
            return self.local.send(to, frame);
        }
        self.send_remote(to, frame, false);
        Ok(())
    }

    fn send_framed(&self, to: ConnId, framed: &Arc<Framed>, from: usize) -> Result<(), SendError> {
        if self.is_local(to) {
            return self.local.send_framed(to, framed, from);
        }
        self.send_framed_remote(to, framed, from, false);
        Ok(())
    }

    fn send_or_kill(&self, to: ConnId, frame: Bytes) {
        if self.is_local(to) {
            return self.local.send_or_kill(to, frame);
        }
        self.send_remote(to, frame, true);
    }

    fn send_framed_or_kill(&self, to: ConnId, framed: &Arc<Framed>, from: usize) {
        if self.is_local(to) {
            return self.local.send_framed_or_kill(to, framed, from);
        }
        self.send_framed_remote(to, framed, from, true);
    }

    fn kill(&self, to: ConnId) {
        if self.is_local(to) {
            return self.local.kill(to);
        }
        self.link
            .node(node_of(to), &NodeMsg::Kill { conn: to }, None);
    }

    fn close(&self, to: ConnId, code: u16, reason: &'static str) {
        if self.is_local(to) {
            return self.local.close(to, code, reason);
        }
        let msg = NodeMsg::Close {
            conn: to,
            code,
            reason: reason.to_owned(),
        };
        self.link.node(node_of(to), &msg, None);
    }

    /// Another node's connection is taken to be open (its node drops what comes for it
    /// after it ends) while its node is alive.
    fn is_closed(&self, to: ConnId) -> bool {
        match self.is_local(to) {
            true => self.local.is_closed(to),
            false => !self.directory.is_alive(node_of(to)),
        }
    }

    /// Called by the game's task, on its node: another node's connection is counted
    /// here, and that node's local topic takes it.
    fn subscribe(&self, topic: GameId, conn: ConnId) -> bool {
        if self.is_local(conn) {
            return self.local.subscribe(topic, conn);
        }
        let added = self
            .remote_subscribers
            .entry(topic)
            .or_default()
            .insert(conn);
        self.link
            .node(node_of(conn), &NodeMsg::Subscribe { topic, conn }, None);
        added
    }

    fn unsubscribe(&self, topic: GameId, conn: ConnId) -> bool {
        if self.is_local(conn) {
            return self.local.unsubscribe(topic, conn);
        }
        let removed = self
            .remote_subscribers
            .get_mut(&topic)
            .is_some_and(|mut s| s.remove(&conn));
        self.remote_subscribers
            .remove_if(&topic, |_, s| s.is_empty());
        if removed {
            self.link
                .node(node_of(conn), &NodeMsg::Unsubscribe { topic, conn }, None);
        }
        removed
    }

    fn subscribers(&self, topic: GameId) -> u32 {
        let remote = self.remote_subscribers.get(&topic).map_or(0, |s| s.len());
        self.local
            .subscribers(topic)
            .saturating_add(u32::try_from(remote).unwrap_or(u32::MAX))
    }

    /// Once to the topic's channel, if another node has subscribers (their nodes deliver
    /// to them: the backlog is this node's alone).
    fn publish(&self, topic: GameId, frames: &[Bytes]) -> Published {
        let local = self.local.publish(topic, frames);
        let remote = self.remote_subscribers.get(&topic).map_or(0, |s| s.len());
        if remote > 0 {
            let frames = frames.to_vec();
            self.link.topic(topic, &TopicMsg::Frames { frames });
        }
        Published {
            subscribers: local
                .subscribers
                .saturating_add(u32::try_from(remote).unwrap_or(u32::MAX)),
            backlog: local.backlog,
        }
    }

    fn deliver(&self, topic: GameId, chunk: usize) -> Delivery {
        self.local.deliver(topic, chunk)
    }

    fn resync(&self, topic: GameId, snapshot: Bytes) {
        self.local.resync(topic, snapshot);
    }

    fn close_topic(&self, topic: GameId) -> u32 {
        let remote = self
            .remote_subscribers
            .remove(&topic)
            .map_or(0, |(_, s)| s.len());
        if remote > 0 {
            self.link.topic(topic, &TopicMsg::Closed);
        }
        self.local
            .close_topic(topic)
            .saturating_add(u32::try_from(remote).unwrap_or(u32::MAX))
    }

    fn open_game(&self, game: GameId) -> GameInbox {
        let (players, players_rx) = mpsc::channel(GAME_CHANNEL_CAPACITY);
        let (spectators, spectators_rx) = mpsc::channel(SPECTATOR_CHANNEL_CAPACITY);
        self.games.insert(game, (players, spectators));
        GameInbox {
            players: players_rx,
            spectators: spectators_rx,
        }
    }

    fn close_game(&self, game: GameId) {
        self.games.remove(&game);
    }

    fn has_game(&self, game: GameId) -> bool {
        self.games.contains_key(&game) || self.directory.node_of(game).is_some()
    }

    fn set_waker(&self, waker: Option<Waker>) {
        self.local.set_waker(waker);
    }

    fn wake(&self, game: GameId) -> bool {
        self.local.wake(game)
    }

    /// To this node's game (a sleeping game is woken here), or the node the directory
    /// names; a `watch` of a remote game first subscribes this node to its topic. A queue
    /// that closes under the send (the game has just gone to sleep) is looked up, or
    /// woken, once more.
    fn to_game(&self, game: GameId, cmd: GameCmd) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut cmd = cmd;
            for _ in 0..2 {
                let Some(queue) = self.local_queue(game, &cmd) else {
                    break;
                };
                match queue.send(cmd).await {
                    Ok(()) => return,
                    Err(mpsc::error::SendError(back)) => cmd = back,
                }
            }
            let Some(node) = self.directory.node_of(game) else {
                return self.refuse(game, &cmd);
            };
            if matches!(cmd, GameCmd::Watch { .. }) {
                self.watch_topic(game).await;
            }
            self.forward(node, game, cmd);
        })
    }

    fn notify_game(&self, game: GameId, cmd: GameCmd) {
        if let Some(queue) = self.queue_for(game, &cmd) {
            return notify(&queue, cmd);
        }
        if let Some(node) = self.directory.node_of(game) {
            self.forward(node, game, cmd);
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
        self.local.open_session(conn)
    }

    fn notify_session(&self, to: ConnId, notice: Notice) {
        if self.is_local(to) {
            return self.local.notify_session(to, notice);
        }
        self.link.node(node_of(to), &wire::notice(to, notice), None);
    }

    fn open_lobby(&self, generation: i64) -> mpsc::Receiver<LobbyCmd> {
        let rx = self.local.open_lobby(generation);
        self.lobby_opened(generation);
        rx
    }

    fn close_lobby(&self) {
        self.local.close_lobby();
        self.lobby_closed();
    }

    fn to_lobby(&self, cmd: LobbyCmd) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(cmd) = self.route_to_lobby(cmd) {
                self.local.to_lobby(cmd).await;
            }
        })
    }

    fn notify_lobby(&self, cmd: LobbyCmd) {
        if let Some(cmd) = self.route_to_lobby(cmd) {
            self.local.notify_lobby(cmd);
        }
    }

    fn hold(&self, conn: ConnId, holding: Option<Holding>) {
        self.hold_at(conn, holding);
    }

    fn set_starter(&self, starter: Option<Starter>) {
        self.local.set_starter(starter);
    }

    fn start_game(&self, game: NewGame) {
        let node = self.home_of(&game.players);
        if node == self.node {
            return self.local.start_game(game);
        }
        self.link.start_game(node, &NodeMsg::StartGame(game));
    }
}
