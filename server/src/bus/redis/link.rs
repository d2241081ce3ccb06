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

    /// Who runs as node number `node` (its `--node-id`), while it is alive: expires
    /// unless refreshed. The number itself is the database's to give (`node_leases`).
    pub fn number_owner(prefix: &str, node: u16) -> String {
        format!("{prefix}:node-owner:{node}")
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

    /// Where the lobby runs: `node:generation`, written by its node as it starts (read by
    /// a node as it joins; every node hears it move on the cluster's channel).
    pub fn lobby(&self) -> String {
        format!("{}:lobby", self.prefix)
    }

    /// Every node's users online by name: lower-cased name → `name_entry` (whose node
    /// may have died since: its `number_owner` key has expired then).
    pub fn names_hash(&self) -> String {
        Self::names(&self.prefix)
    }

    pub fn names(prefix: &str) -> String {
        format!("{prefix}:names")
    }

    /// What a node's `number_owner` key is named, but for its number.
    pub fn owner_prefix(&self) -> String {
        format!("{}:node-owner:", self.prefix)
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

/// What no node heard, handed back to the bus (`RedisBus::unheard`).
#[derive(Debug)]
pub enum Unheard {
    /// A command whose answer is owed: answered here.
    Owed(Owed),
    /// A game's start (an encoded `NodeMsg::StartGame`) that reached no subscriber of its
    /// node's channel: started here instead. Only a PUBLISH that answered none: one whose
    /// answer was lost may have started it there.
    Start(Vec<u8>),
}

/// What a PUBLISH is to bring back if no node hears it.
#[derive(Debug)]
enum Heed {
    Owed(Owed),
    Start,
}

#[derive(Debug)]
enum Out {
    Cmd(::redis::Cmd),
    Publish {
        channel: String,
        payload: Vec<u8>,
        heed: Option<Heed>,
    },
    /// Told once everything queued before it has been written (or has failed).
    Written(tokio::sync::oneshot::Sender<()>),
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
        unheard: mpsc::UnboundedSender<Unheard>,
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

    /// Resolves once everything queued before this call has been written to Redis, or
    /// has failed (the writer goes on to what follows either way).
    pub fn written(&self) -> impl std::future::Future<Output = ()> + use<> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.out(Out::Written(tx));
        async move {
            let _ = rx.await;
        }
    }

    fn publish(&self, channel: String, payload: Vec<u8>, heed: Option<Heed>) {
        self.out(Out::Publish {
            channel,
            payload,
            heed,
        });
    }

    /// `msg` to node `node`; `owed`, if no node hears it.
    pub fn node(&self, node: u16, msg: &NodeMsg, owed: Option<Owed>) {
        self.publish(
            self.keys.node_channel(node),
            wire::encode(msg),
            owed.map(Heed::Owed),
        );
    }

    /// `NodeMsg::StartGame` to node `node`; back (`Unheard::Start`) if no node hears it.
    pub fn start_game(&self, node: u16, msg: &NodeMsg) {
        #[cfg(feature = "test-hooks")]
        if lose_a_start() {
            return;
        }
        self.publish(
            self.keys.node_channel(node),
            wire::encode(msg),
            Some(Heed::Start),
        );
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

    /// The lobby's generation `generation` runs on this node.
    pub fn set_lobby(&self, generation: i64) {
        let mut cmd = ::redis::cmd("SET");
        cmd.arg(self.keys.lobby())
            .arg(format!("{}:{generation}", self.keys.node));
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

    /// Says this node is alive under its number (`number_owner`) for another
    /// `PRESENCE_TTL`: a look-up of a player by name checks it.
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
    unheard: mpsc::UnboundedSender<Unheard>,
) {
    let mut batch = Vec::with_capacity(PIPELINE);
    while rx.recv_many(&mut batch, PIPELINE).await > 0 {
        #[cfg(feature = "test-hooks")]
        if let Some(delay) = write_delay() {
            tokio::time::sleep(delay).await;
        }
        let mut pipe = ::redis::pipe();
        let mut owed = Vec::with_capacity(batch.len());
        // Told once this pipeline is written (a marker's predecessors are in it, or in
        // one written before).
        let mut written = Vec::new();
        for out in batch.drain(..) {
            match out {
                Out::Written(tx) => written.push(tx),
                Out::Cmd(cmd) => {
                    pipe.add_command(cmd);
                    owed.push(None);
                }
                Out::Publish {
                    channel,
                    payload,
                    heed,
                } => {
                    let back = heed.map(|heed| match heed {
                        Heed::Owed(o) => Unheard::Owed(o),
                        Heed::Start => Unheard::Start(payload.clone()),
                    });
                    pipe.cmd("PUBLISH").arg(channel).arg(payload);
                    owed.push(back);
                }
            }
        }
        if owed.is_empty() {
            for tx in written {
                let _ = tx.send(());
            }
            continue;
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
                for back in owed.into_iter().flatten() {
                    match back {
                        Unheard::Owed(o) => {
                            let _ = unheard.send(Unheard::Owed(o));
                        }
                        // It may have been heard (a reply lost, not the request): the
                        // lobby sends it again if the game does not show, and a node
                        // running it already ignores that (`lobby/actor/starting.rs`).
                        Unheard::Start(_) => {
                            tracing::warn!("a game's start may be lost with the write");
                        }
                    }
                }
                if let Ok(again) = client.get_multiplexed_async_connection().await {
                    con = again;
                }
            }
        }
        for tx in written {
            let _ = tx.send(());
        }
    }
}

/// A test hook: the first `ELEMENTALS_LOSE_GAME_STARTS` starts this node sends another node
/// are lost, as with a write to Redis that failed after reaching it or not.
#[cfg(feature = "test-hooks")]
fn lose_a_start() -> bool {
    use std::sync::atomic::{AtomicU32, Ordering};
    static LEFT: std::sync::OnceLock<AtomicU32> = std::sync::OnceLock::new();
    let left = LEFT.get_or_init(|| {
        let n = std::env::var("ELEMENTALS_LOSE_GAME_STARTS").ok();
        AtomicU32::new(n.and_then(|n| n.parse().ok()).unwrap_or(0))
    });
    let lost = left
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok();
    if lost {
        tracing::warn!("ELEMENTALS_LOSE_GAME_STARTS: a game's start is lost");
    }
    lost
}

/// A test hook: every write to Redis waits `ELEMENTALS_REDIS_WRITE_DELAY_MS` first, as on a
/// slow link.
#[cfg(feature = "test-hooks")]
fn write_delay() -> Option<std::time::Duration> {
    static DELAY: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        let ms = std::env::var("ELEMENTALS_REDIS_WRITE_DELAY_MS").ok()?;
        Some(std::time::Duration::from_millis(ms.parse().ok()?))
    })
}
