//! The node's writes to Redis, in order: one task drains a queue of commands and
//! publishes into pipelines on one connection, so that everything this node sends (a
//! reply, then the notice that it is answered; a subscription, then the events) reaches
//! every other node in the order it was sent. Nothing here waits for Redis: the bus's
//! callers never block on the network.

use std::sync::Arc;

use ::redis::aio::MultiplexedConnection;
use elementals_protocol::messages::GameId;
use tokio::sync::mpsc;

use super::wire::{self, ClusterMsg, DirEntry, NodeMsg, TopicMsg};
use crate::bus::{ConnId, ReplyTo};
use crate::record::AccountId;

/// Deletes a name's entry if it is still the one given. KEYS: the names hash; ARGV: the
/// lower-cased name, the entry.
const DEL_NAME: &str = "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then \
                        redis.call('HDEL', KEYS[1], ARGV[1]) end";

/// Commands taken into one pipeline at most.
const PIPELINE: usize = 512;

/// The names of the cluster's keys and channels, each prefixed by the cluster's name.
#[derive(Debug)]
pub struct Keys {
    prefix: String,
    node: u16,
    node_id: String,
}

impl Keys {
    pub fn new(prefix: &str, node: u16, node_id: &str) -> Keys {
        Keys {
            prefix: prefix.to_owned(),
            node,
            node_id: node_id.to_owned(),
        }
    }

    /// Who holds node number `node` (its `--node-id`); expires unless refreshed.
    pub fn number_owner(prefix: &str, node: u16) -> String {
        format!("{prefix}:node-owner:{node}")
    }

    /// The counter that numbers the nodes as they start.
    pub fn node_seq(prefix: &str) -> String {
        format!("{prefix}:node-seq")
    }

    /// Node `node`'s channel: `NodeMsg`s for its connections and games.
    pub fn node_channel(&self, node: u16) -> String {
        format!("{}:node:{node}", self.prefix)
    }

    pub fn own_channel(&self) -> String {
        self.node_channel(self.node)
    }

    /// Every node's channel: `ClusterMsg`s.
    pub fn cluster_channel(&self) -> String {
        format!("{}:cluster", self.prefix)
    }

    /// Game `game`'s topic: `TopicMsg`s from the node that runs it.
    pub fn topic_channel(&self, game: GameId) -> String {
        format!("{}:topic:{game}", self.prefix)
    }

    /// The game on a topic channel's name, if it is one.
    pub fn topic_of(&self, channel: &str) -> Option<GameId> {
        channel
            .strip_prefix(&self.prefix)?
            .strip_prefix(":topic:")?
            .parse()
            .ok()
    }

    /// The directory: game → `DirEntry` (MessagePack).
    pub fn games_hash(&self) -> String {
        format!("{}:games", self.prefix)
    }

    /// Node `node`'s users online: account → name; expires unless refreshed.
    pub fn online_hash(&self, node: u16) -> String {
        format!("{}:online:{node}", self.prefix)
    }

    /// Every node's users online by name: lower-cased name → `name_entry` (whose node
    /// may have died since: its `number_owner` key has expired then).
    pub fn names_hash(&self) -> String {
        Self::names(&self.prefix)
    }

    pub fn names(prefix: &str) -> String {
        format!("{prefix}:names")
    }

    /// `node:account:conn:name` (the name as signed up), of this node.
    fn name_entry(&self, account: AccountId, conn: ConnId, name: &str) -> String {
        format!("{}:{account}:{conn}:{name}", self.node)
    }
}

/// A command whose answer is owed by a game on another node: answered here if no node
/// hears it (`unheard`).
#[derive(Debug, Clone, Copy)]
pub struct Owed {
    pub game: GameId,
    pub node: u16,
    pub reply: ReplyTo,
    /// A spectator's fresh snapshot, asked by this node (`RedisBus::resync_topic`): asked
    /// again rather than answered, should no node hear it.
    pub resync: bool,
}

#[derive(Debug)]
enum Out {
    Cmd(::redis::Cmd),
    Publish {
        channel: String,
        payload: Vec<u8>,
        owed: Option<Owed>,
    },
}

/// The queue to the writing task, and the names it writes to.
#[derive(Debug, Clone)]
pub struct Link {
    tx: mpsc::UnboundedSender<Out>,
    pub keys: Arc<Keys>,
}

impl Link {
    /// Starts the writing task on `con`; commands whose node did not hear them go to
    /// `unheard`.
    pub fn start(
        client: ::redis::Client,
        con: MultiplexedConnection,
        keys: Keys,
        unheard: mpsc::UnboundedSender<Owed>,
    ) -> Link {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(client, con, rx, unheard));
        Link {
            tx,
            keys: Arc::new(keys),
        }
    }

    /// Test-only: a link whose writes go nowhere.
    #[cfg(test)]
    pub fn nowhere(keys: Keys) -> Link {
        let (tx, _) = mpsc::unbounded_channel();
        Link {
            tx,
            keys: Arc::new(keys),
        }
    }

    fn out(&self, out: Out) {
        // Closed only once the writer has stopped, with the node.
        let _ = self.tx.send(out);
    }

    fn publish(&self, channel: String, payload: Vec<u8>, owed: Option<Owed>) {
        self.out(Out::Publish {
            channel,
            payload,
            owed,
        });
    }

    /// `msg` to node `node`; `owed`, if no node hears it.
    pub fn node(&self, node: u16, msg: &NodeMsg, owed: Option<Owed>) {
        self.publish(self.keys.node_channel(node), wire::encode(msg), owed);
    }

    pub fn topic(&self, game: GameId, msg: &TopicMsg) {
        self.publish(self.keys.topic_channel(game), wire::encode(msg), None);
    }

    pub fn cluster(&self, msg: &ClusterMsg) {
        self.publish(self.keys.cluster_channel(), wire::encode(msg), None);
    }

    pub fn hset_game(&self, game: GameId, entry: &DirEntry) {
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(self.keys.games_hash())
            .arg(game.to_string())
            .arg(wire::encode(entry));
        self.out(Out::Cmd(cmd));
    }

    pub fn hdel_game(&self, game: GameId) {
        let mut cmd = ::redis::cmd("HDEL");
        cmd.arg(self.keys.games_hash()).arg(game.to_string());
        self.out(Out::Cmd(cmd));
    }

    pub fn presence_set(&self, account: AccountId, name: &str, conn: ConnId) {
        let key = self.keys.online_hash(self.keys.node);
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(&key).arg(account).arg(name);
        self.out(Out::Cmd(cmd));
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(self.keys.names_hash())
            .arg(name.to_lowercase())
            .arg(self.keys.name_entry(account, conn, name));
        self.out(Out::Cmd(cmd));
        self.expire_presence();
    }

    pub fn presence_del(&self, account: AccountId, name: &str, conn: ConnId) {
        let mut cmd = ::redis::cmd("HDEL");
        cmd.arg(self.keys.online_hash(self.keys.node)).arg(account);
        self.out(Out::Cmd(cmd));
        // Only this connection's: the name may have signed in on another node since.
        let mut cmd = ::redis::cmd("EVAL");
        cmd.arg(DEL_NAME)
            .arg(1)
            .arg(self.keys.names_hash())
            .arg(name.to_lowercase())
            .arg(self.keys.name_entry(account, conn, name));
        self.out(Out::Cmd(cmd));
    }

    /// Holds this node's number (see `claim_number`) for another `PRESENCE_TTL`.
    pub fn claim_number(&self) {
        let mut cmd = ::redis::cmd("SET");
        cmd.arg(Keys::number_owner(&self.keys.prefix, self.keys.node))
            .arg(&self.keys.node_id)
            .arg("PX")
            .arg(super::directory::PRESENCE_TTL.as_millis() as u64);
        self.out(Out::Cmd(cmd));
    }

    /// Refreshes the expiry of this node's presence.
    pub fn expire_presence(&self) {
        let mut cmd = ::redis::cmd("PEXPIRE");
        cmd.arg(self.keys.online_hash(self.keys.node))
            .arg(super::directory::PRESENCE_TTL.as_millis() as u64);
        self.out(Out::Cmd(cmd));
    }
}

/// The writing task: drains the queue into pipelines, in order. A pipeline that fails
/// for a lost connection is sent again on a new one; one that fails again (or otherwise)
/// is logged and its commands dropped (answering those owed an answer: `unheard`).
async fn write(
    client: ::redis::Client,
    mut con: MultiplexedConnection,
    mut rx: mpsc::UnboundedReceiver<Out>,
    unheard: mpsc::UnboundedSender<Owed>,
) {
    let mut batch = Vec::with_capacity(PIPELINE);
    while rx.recv_many(&mut batch, PIPELINE).await > 0 {
        let mut pipe = ::redis::pipe();
        let mut owed = Vec::with_capacity(batch.len());
        for out in batch.drain(..) {
            match out {
                Out::Cmd(cmd) => {
                    pipe.add_command(cmd);
                    owed.push(None);
                }
                Out::Publish {
                    channel,
                    payload,
                    owed: o,
                } => {
                    pipe.cmd("PUBLISH").arg(channel).arg(payload);
                    owed.push(o);
                }
            }
        }
        let mut result = pipe.query_async::<Vec<::redis::Value>>(&mut con).await;
        if let Err(error) = &result {
            // A connection that was lost (Redis restarted, say) sent nothing: made again,
            // the same pipeline is sent once more.
            if error.is_connection_dropped() || error.is_io_error() {
                if let Ok(again) = client.get_multiplexed_async_connection().await {
                    con = again;
                    result = pipe.query_async(&mut con).await;
                }
            }
        }
        match result {
            Ok(values) => {
                for (o, value) in owed.into_iter().zip(values) {
                    // PUBLISH answers how many subscribers heard it: none means the
                    // node is gone.
                    if let (Some(o), ::redis::Value::Int(0)) = (o, value) {
                        let _ = unheard.send(o);
                    }
                }
            }
            Err(error) => {
                tracing::error!(%error, "a write to Redis failed; its messages are lost");
                for o in owed.into_iter().flatten() {
                    let _ = unheard.send(o);
                }
                if let Ok(again) = client.get_multiplexed_async_connection().await {
                    con = again;
                }
            }
        }
    }
}
