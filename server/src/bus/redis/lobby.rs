//! The one lobby of the cluster, as the bus sees it: which node runs it (the node that
//! holds its lease says so when it starts, `ClusterMsg::Lobby`, and in each `Alive`),
//! requests forwarded there (`NodeMsg::ToLobby`, answered back as a game's commands are),
//! and what this node's connections have open in it, given again to a lobby that starts
//! on another node or anew, or that this node was cut off from (`LobbyCmd::Restore`). Also
//! the node a game the lobby starts runs on (a player's: `home_of`), and the look-up of a
//! player online by name on any node, which challenges and rematches need.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use elementals_protocol::messages::SeatPair;
use elementals_protocol::ErrorCode;
use tokio::sync::mpsc::error::TrySendError;

use super::link::Owed;
use super::wire::{ClusterMsg, NodeMsg};
use super::{node_of, RedisBus};
use crate::bus::{lobby_stopped, notify, refused, Bus};
use crate::msg::{ConnId, Holding, LobbyCmd, Member, LOBBY_LEASE};
use crate::record::AccountId;

/// What a request for a lobby that is moving is answered (`internal`): its node is gone,
/// and the next one has not started, or not been heard of yet.
pub(super) const MOVING: &str = "the lobby is moving: ask again";

/// What a request for the lobby is answered (`internal`) while this node does not hear
/// Redis: the lobby's answer could not reach it, and the lobby may have taken its
/// connections for gone until the node gives them back as it rejoins.
pub(super) const CUT_OFF: &str = "this node is cut off from the cluster: ask again";

/// How long the look-up of a player by name may take.
const FIND_TIMEOUT: Duration = Duration::from_secs(3);

/// The entry of a user online by name, if their node is alive. KEYS: the names hash.
/// ARGV: the lower-cased name, the node owner keys' prefix.
const FIND_NAME: &str = r#"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
local node = string.match(v, '^(%d+):')
if not node or redis.call('EXISTS', ARGV[2] .. node) == 0 then return false end
return v
"#;

/// Where the lobby runs, as this node knows it.
#[derive(Debug, Default)]
pub(super) struct Whereabouts(Mutex<Seen>);

#[derive(Debug, Default)]
struct Seen {
    /// The lobby's node and generation, as last heard.
    at: Option<(u16, i64)>,
    /// The generation running here, if it does.
    here: Option<i64>,
}

impl Whereabouts {
    fn get(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Whereabouts {
    /// Where the lobby ran as this node joins: the key its node wrote (`node:generation`).
    pub(super) fn joined(entry: Option<String>) -> Whereabouts {
        let at = entry.and_then(|entry| {
            let (node, generation) = entry.split_once(':')?;
            Some((node.parse().ok()?, generation.parse().ok()?))
        });
        Whereabouts(Mutex::new(Seen { at, here: None }))
    }
}

impl RedisBus {
    /// The generation of the lobby that runs here, if one does.
    pub(super) fn lobby_here(&self) -> Option<i64> {
        self.lobby.get().here
    }

    /// The node the lobby runs on, if it is known and alive.
    pub(super) fn lobby_node(&self) -> Option<u16> {
        let at = self.lobby.get().at;
        at.map(|(node, _)| node)
            .filter(|node| self.directory.is_alive(*node))
    }

    /// The node the lobby ran on when last heard of, alive or not.
    pub(super) fn lobby_last_heard(&self) -> Option<u16> {
        self.lobby.get().at.map(|(node, _)| node)
    }

    /// The lobby's generation `generation` starts here: every node hears so, and this
    /// node's connections give it what they hold.
    pub(super) fn lobby_opened(&self, generation: i64) {
        {
            let mut w = self.lobby.get();
            w.at = Some((self.node, generation));
            w.here = Some(generation);
        }
        self.link.set_lobby(generation);
        self.link.cluster(&ClusterMsg::Lobby {
            node: self.node,
            generation,
        });
        self.resubmit(self.node);
    }

    pub(super) fn lobby_closed(&self) {
        let mut w = self.lobby.get();
        w.here = None;
        if w.at.is_some_and(|(node, _)| node == self.node) {
            w.at = None;
        }
    }

    /// What another node says of the lobby: one newer than the lobby known here is given
    /// what this node's connections hold.
    pub(super) fn lobby_news(&self, msg: &ClusterMsg) {
        let (node, generation) = match *msg {
            ClusterMsg::Lobby { node, generation } => (node, generation),
            ClusterMsg::Alive {
                node,
                lobby: Some(generation),
                ..
            } => (node, generation),
            _ => return,
        };
        if node == self.node {
            return;
        }
        {
            let mut w = self.lobby.get();
            // Known, and heard from all along: nothing to tell it. A lobby newer than the
            // one known, or whose node fell silent here (it may have taken this node for
            // dead, and dropped its entries), is told.
            let known = w.at.is_some_and(|(_, known)| known >= generation);
            if known && self.directory.is_alive(node) {
                return;
            }
            if known && w.at.is_some_and(|(_, known)| known > generation) {
                return;
            }
            w.at = Some((node, generation));
        }
        tracing::info!(node, generation, "the lobby runs on another node");
        self.resubmit(node);
    }

    /// Tells the lobby, on `node`, which of this node's connections are open and what
    /// they have open in it (`LobbyCmd::Restore`), in order with what this node sends it
    /// next.
    pub(super) fn resubmit(&self, node: u16) {
        let (open, holdings) = self.local.holdings();
        tracing::info!(
            holdings = holdings.len(),
            node,
            "the lobby is told what this node's connections have open in it"
        );
        let cmd = LobbyCmd::Restore {
            node: self.node,
            open,
            holdings,
        };
        if node != self.node {
            return self.link.node(node, &NodeMsg::ToLobby(cmd), None);
        }
        if let Some(lobby) = self.local.lobby() {
            notify(&lobby, cmd);
        }
    }

    /// Routes `cmd` to the lobby: forwarded to its node, or given back to go to the lobby
    /// here. One for a lobby that is moving, or sent while this node is cut off from
    /// Redis, is answered `internal` (`MOVING`, `CUT_OFF`).
    pub(super) fn route_to_lobby(&self, cmd: LobbyCmd) -> Option<LobbyCmd> {
        let node = self.lobby_node();
        if node == Some(self.node) {
            return Some(cmd);
        }
        if !self.directory.reaches_redis() {
            if let Some(reply) = cmd.reply_to() {
                refused(self, reply, ErrorCode::Internal, CUT_OFF);
            }
            return None;
        }
        let Some(node) = node else {
            if let Some(reply) = cmd.reply_to() {
                refused(self, reply, ErrorCode::Internal, MOVING);
            }
            return None;
        };
        let owed = cmd.reply_to().map(|reply| Owed {
            game: LOBBY_LEASE,
            node,
            reply,
            resync: false,
        });
        if let Some(o) = owed.filter(|o| o.reply.settle) {
            self.owe(o);
        }
        self.link.node(node, &NodeMsg::ToLobby(cmd), owed);
        None
    }

    /// A request for the lobby that runs here, from another node: queued in order
    /// (waiting for room in a task of its own only if the queue is full).
    pub(super) fn take_lobby_cmd(&self, cmd: LobbyCmd) {
        let Some(lobby) = self.local.lobby() else {
            return lobby_stopped(self, &cmd);
        };
        match lobby.try_send(cmd) {
            Ok(()) => {}
            Err(TrySendError::Closed(cmd)) => lobby_stopped(self, &cmd),
            Err(TrySendError::Full(cmd)) => {
                // A `Gone` must not be lost; a request's sender waits as one here would.
                tokio::spawn(async move {
                    let _ = lobby.send(cmd).await;
                });
            }
        }
    }

    /// The node a game of `players` runs on: the first seat's node, else the second's
    /// (a bot's seat has none yet), whichever is alive; else this one.
    pub(super) fn home_of(&self, players: &SeatPair<Member>) -> u16 {
        [players.one.conn_id, players.two.conn_id]
            .into_iter()
            .map(node_of)
            .find(|&node| node == self.node || (node != 0 && self.directory.is_alive(node)))
            .unwrap_or(self.node)
    }

    /// `holding` of connection `conn`, kept by its node.
    pub(super) fn hold_at(&self, conn: ConnId, holding: Option<Holding>) {
        if self.is_local(conn) {
            return self.local.hold(conn, holding);
        }
        self.link
            .node(node_of(conn), &NodeMsg::Hold { conn, holding }, None);
    }

    /// The user online as `name` on any live node: their account, connection and name as
    /// signed up.
    pub async fn find_online(&self, name: &str) -> Option<(AccountId, ConnId, String)> {
        let mut con = self.query.clone();
        let script = ::redis::Script::new(FIND_NAME);
        let mut call = script.prepare_invoke();
        call.key(self.link.keys.names_hash())
            .arg(name.to_lowercase())
            .arg(self.link.keys.owner_prefix());
        let found = tokio::time::timeout(FIND_TIMEOUT, call.invoke_async(&mut con)).await;
        let entry: String = match found {
            Ok(Ok(Some(entry))) => entry,
            Ok(Ok(None)) => return None,
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot look a player up by name");
                return None;
            }
            Err(_) => {
                tracing::warn!("the look-up of a player by name timed out");
                return None;
            }
        };
        let mut parts = entry.splitn(4, ':').skip(1);
        let account = parts.next()?.parse::<AccountId>().ok()?;
        let conn = parts.next()?.parse::<ConnId>().ok()?;
        Some((account, conn, parts.next()?.to_owned()))
    }
}
