//! `RedisBus`: the bus across the nodes of a cluster (issue 26), over Redis pub/sub.
//!
//! It wraps a `LocalBus`, which does everything for this node's connections and topics;
//! what is addressed elsewhere crosses Redis as plain data (`wire`), in order (`link`):
//! - a connection's id carries its node's number (`NODE_SHIFT`), taken from Redis at
//!   start, so frames, closes, kills and notices for another node's connection go to
//!   that node's channel and its `LocalBus` applies them;
//! - a game is found by the directory (`directory`): a command for a game another node
//!   runs goes to that node's channel, where it is queued to the game; one for a game
//!   nobody runs is refused `unknown_game` as in one process;
//! - a game's events go to its topic channel once, encoded once; each node with
//!   spectators of it has subscribed to that channel (before its first `watch` went to
//!   the game, so it misses nothing after the snapshot) and fans it out to them through
//!   its local topic, with the local topic's lag semantics (a spectator that lags there
//!   watches again, so the game sends it a fresh snapshot, at most
//!   `MAX_RESYNC_ATTEMPTS` times in `RESYNC_WINDOW`, then it is dropped: `fan_out`);
//! - the lobby stays each node's own.
//!
//! Where one process relies on a queue's drop to answer what a dead game owed, a remote
//! game's node may die instead: a command no node heard (PUBLISH reached nobody) is
//! answered at once, and one owed by a node that then falls silent for
//! `directory::NODE_TIMEOUT` (or owed for `OWED_TIMEOUT`) is answered by `sweep`; all
//! `unknown_game` ("the game's node is gone"): the client reconnects and resumes, and
//! finds the game where another node took it over. A node that loses Redis joins again
//! by itself (`inbound`).

mod asks;
mod bus_impl;
mod directory;
mod inbound;
mod link;
mod rematch;
mod wire;

pub use directory::Directory;
pub use link::Keys;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::PubSubSink;
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::ClusterConfig;
use link::{Link, Owed};
use wire::{ClusterMsg, NodeMsg, TopicMsg, WireCmd};

/// A connection id's bits from here up to `NODE_MASK` are its node's number; 0 is a
/// connection of this process that no other node addresses (a bot's seat, whose id has
/// bit 62 set: `bots::FIRST_BOT_CONN`).
pub const NODE_SHIFT: u32 = 48;
const NODE_MASK: u64 = (1 << 14) - 1;

/// How often the node says it is alive, flushes its games' summaries and sweeps for
/// answers owed by nodes that died.
const TICK: Duration = directory::HEARTBEAT;

/// How long a command forwarded to a live node may wait for its answer before it is
/// answered here: far past any game's answer (a game answers between two commands), so
/// only an answer lost on its way waits this long.
const OWED_TIMEOUT: Duration = Duration::from_secs(15);

/// Consecutive resyncs a remote spectator may need within `RESYNC_WINDOW` before it is
/// dropped (as `MAX_RESYNC_ATTEMPTS` in one process).
const RESYNC_WINDOW: Duration = Duration::from_secs(10);

/// The node of connection `conn` (0: this process's own, see `NODE_SHIFT`).
pub fn node_of(conn: ConnId) -> u16 {
    ((conn >> NODE_SHIFT) & NODE_MASK) as u16
}

#[derive(Debug)]
pub struct RedisBus {
    local: LocalBus,
    client: ::redis::Client,
    node: u16,
    link: Link,
    pub directory: Arc<Directory>,
    /// This node's games' command queues (not the `LocalBus`'s: a command refused here
    /// is answered through this bus, which reaches other nodes' connections).
    games: DashMap<GameId, (mpsc::Sender<GameCmd>, mpsc::Sender<GameCmd>)>,
    /// Other nodes' connections subscribed to this node's games' topics.
    remote_subscribers: DashMap<GameId, HashSet<ConnId>>,
    /// Topics of other nodes' games whose channel this node has subscribed to.
    watched: DashMap<GameId, ()>,
    sink: tokio::sync::Mutex<PubSubSink>,
    /// Commands forwarded to another node whose session waits for the answer, by
    /// connection (each has at most one request in flight), and since when. An
    /// `Answered` from another node for a connection owed nothing here has been
    /// answered already (`unheard`) and is dropped, so a session hears one per request.
    owed: DashMap<ConnId, (Owed, Instant)>,
    /// Resyncs of this node's spectators of remote games: (count, first) by (game, conn).
    resyncs: DashMap<(GameId, ConnId), (u8, Instant)>,
    /// `my_games` asked of other nodes (`asks.rs`).
    asks: asks::Asks,
    /// Which node ran the games that ended elsewhere (`rematch.rs`).
    ended: rematch::Ended,
}

/// Why cluster mode could not start.
#[derive(Debug, thiserror::Error)]
#[error("Redis ({url}): {error}")]
pub struct RedisError {
    url: String,
    error: ::redis::RedisError,
}

impl RedisBus {
    /// Connects to the cluster's Redis, takes a node number, subscribes to this node's
    /// and the cluster's channels, loads the directory, and starts listening until
    /// `stop`.
    pub async fn start(
        config: &ClusterConfig,
        stop: CancellationToken,
    ) -> Result<Arc<RedisBus>, RedisError> {
        let fail = |error| RedisError {
            url: config.redis_url.clone(),
            error,
        };
        let client = ::redis::Client::open(config.redis_url.as_str()).map_err(fail)?;
        let mut con = client
            .get_multiplexed_async_connection()
            .await
            .map_err(fail)?;
        let node = claim_number(&mut con, &config.name, &config.node_id)
            .await
            .map_err(fail)?;
        let keys = Keys::new(&config.name, node, &config.node_id);
        let (mut sink, stream) = client.get_async_pubsub().await.map_err(fail)?.split();
        sink.subscribe(&[keys.own_channel(), keys.cluster_channel()])
            .await
            .map_err(fail)?;
        let entries: Vec<(String, Vec<u8>)> = ::redis::cmd("HGETALL")
            .arg(keys.games_hash())
            .query_async(&mut con)
            .await
            .map_err(fail)?;
        let (unheard_tx, unheard) = mpsc::unbounded_channel();
        let link = Link::start(client.clone(), con, keys, unheard_tx);
        let directory = Arc::new(Directory::new(node, link.clone()));
        directory.load(
            entries
                .into_iter()
                .filter_map(|(game, entry)| Some((game.parse().ok()?, wire::decode(&entry)?)))
                .collect(),
        );
        tracing::info!(node, node_id = %config.node_id, cluster = %config.name, "joined the cluster");
        let bus = Arc::new(RedisBus {
            local: LocalBus::default(),
            client,
            node,
            link,
            directory,
            games: DashMap::new(),
            remote_subscribers: DashMap::new(),
            watched: DashMap::new(),
            sink: tokio::sync::Mutex::new(sink),
            owed: DashMap::new(),
            resyncs: DashMap::new(),
            asks: asks::Asks::default(),
            ended: rematch::Ended::default(),
        });
        tokio::spawn(inbound::listen(bus.clone(), stream, unheard, stop));
        Ok(bus)
    }

    /// The node's number, and the name that owns it: refreshed by `tick`.
    fn refresh_number(&self) {
        self.link.claim_number();
    }

    /// This node's number in the cluster.
    pub fn node(&self) -> u16 {
        self.node
    }

    /// The first connection id of this node (see `NODE_SHIFT`).
    pub fn first_conn_id(&self) -> ConnId {
        (u64::from(self.node) << NODE_SHIFT) | 1
    }

    /// Says this node is alive with `online` users, flushes its games' summaries, and
    /// answers what nodes that died owed (`sweep`). Every `TICK`.
    pub fn tick(&self, online: usize) {
        self.link.cluster(&ClusterMsg::Alive {
            sent_ms: crate::clock::unix_ms(),
            node: self.node,
            online: u32::try_from(online).unwrap_or(u32::MAX),
        });
        self.link.expire_presence();
        self.refresh_number();
        self.directory.flush();
        self.sweep();
    }

    /// Calls `tick` every `TICK` until `stop`.
    pub fn spawn_ticks(
        self: &Arc<Self>,
        registry: Arc<crate::registry::Registry>,
        stop: CancellationToken,
    ) {
        self.asks.answer_from(&registry);
        let bus = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(TICK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => bus.tick(registry.online_count()),
                    () = stop.cancelled() => return,
                }
            }
        });
    }

    /// The node is stopping: the others stop waiting for it at once.
    pub fn leave(&self) {
        self.link.cluster(&ClusterMsg::Gone { node: self.node });
    }

    fn is_local(&self, conn: ConnId) -> bool {
        let node = node_of(conn);
        node == 0 || node == self.node
    }

    /// Answers commands owed by nodes that have fallen silent, or owed for longer than
    /// `OWED_TIMEOUT` (an answer lost on its way: a write to Redis that failed).
    fn sweep(&self) {
        let dead: Vec<Owed> = self
            .owed
            .iter()
            .filter(|o| !self.directory.is_alive(o.0.node) || o.1.elapsed() > OWED_TIMEOUT)
            .map(|o| o.0)
            .collect();
        for o in dead {
            self.unheard(o);
        }
    }

    /// A command `o` that no node will answer: answered here, once.
    fn unheard(&self, o: Owed) {
        if o.reply.settle
            && self
                .owed
                .remove_if(&o.reply.conn, |_, w| w.0.game == o.game)
                .is_none()
        {
            return;
        }
        let gone = GameError::new(ErrorCode::UnknownGame, "the game's node is gone");
        refused(self, o.reply, gone.code, &gone.message);
    }

    fn queue_for(&self, game: GameId, cmd: &GameCmd) -> Option<mpsc::Sender<GameCmd>> {
        self.games.get(&game).map(|q| {
            if cmd.is_spectators() {
                q.1.clone()
            } else {
                q.0.clone()
            }
        })
    }

    /// This node's queue for game `game`, woken here first if it sleeps (the waker asks
    /// PostgreSQL: of several nodes waking it at once, one runs it).
    fn local_queue(&self, game: GameId, cmd: &GameCmd) -> Option<mpsc::Sender<GameCmd>> {
        if let Some(queue) = self.queue_for(game, cmd) {
            return Some(queue);
        }
        if self.directory.node_of(game).is_some() || !self.local.wake(game) {
            return None;
        }
        self.queue_for(game, cmd)
    }

    /// Sends `cmd` to game `game` on node `node`.
    fn forward(&self, node: u16, game: GameId, cmd: GameCmd) {
        let reply = cmd.reply_to();
        let cmd = match WireCmd::of(cmd) {
            Ok(cmd) => cmd,
            // The test hooks' commands carry a channel: not across nodes.
            Err(cmd) => return self.refuse(game, &cmd),
        };
        let owed = reply.map(|reply| Owed { game, node, reply });
        if let Some(o) = owed.filter(|o| o.reply.settle) {
            self.owed.insert(o.reply.conn, (o, Instant::now()));
        }
        self.link.node(node, &NodeMsg::ToGame { game, cmd }, owed);
    }

    /// Subscribes this node to game `game`'s topic channel, if it has not yet.
    async fn watch_topic(&self, game: GameId) {
        if self.watched.contains_key(&game) {
            return;
        }
        let channel = self.link.keys.topic_channel(game);
        let mut sink = self.sink.lock().await;
        if self.watched.contains_key(&game) {
            return;
        }
        match sink.subscribe(&channel).await {
            Ok(()) => {
                self.watched.insert(game, ());
            }
            Err(error) => tracing::error!(%error, %game, "subscribing to a game's topic failed"),
        }
    }

    async fn unwatch_topic(&self, game: GameId) {
        if self.watched.remove(&game).is_some() {
            let channel = self.link.keys.topic_channel(game);
            let _ = self.sink.lock().await.unsubscribe(&channel).await;
        }
    }
}

/// Takes the next free node number: `INCR` of the cluster's counter, then the number's
/// owner key, set only if no live node holds it (a Redis restarted empty starts the
/// counter over, while live nodes keep their numbers and set their keys again within a
/// `TICK`).
async fn claim_number(
    con: &mut ::redis::aio::MultiplexedConnection,
    cluster: &str,
    node_id: &str,
) -> ::redis::RedisResult<u16> {
    for _ in 0..NODE_MASK {
        let seq: u64 = ::redis::cmd("INCR")
            .arg(Keys::node_seq(cluster))
            .query_async(con)
            .await?;
        let node = (seq % NODE_MASK) as u16 + 1;
        let taken: Option<String> = ::redis::cmd("SET")
            .arg(Keys::number_owner(cluster, node))
            .arg(node_id)
            .arg("NX")
            .arg("PX")
            .arg(directory::PRESENCE_TTL.as_millis() as u64)
            .query_async(con)
            .await?;
        if taken.is_some() {
            return Ok(node);
        }
    }
    Err(::redis::RedisError::from((
        ::redis::ErrorKind::Client,
        "every node number of the cluster is taken",
    )))
}

#[cfg(test)]
mod tests;
