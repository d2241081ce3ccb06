//! `RedisBus`: the bus across the nodes of a cluster (issue 26), over Redis pub/sub.
//!
//! It wraps a `LocalBus`, which does everything for this node's connections and topics;
//! what is addressed elsewhere crosses Redis as plain data (`wire`), in order (`link`):
//! - a connection's id carries its node's number (`NODE_SHIFT`), taken with the node's
//!   row in the database at start (`node_leases.number`), so frames, closes, kills and notices for another node's connection go to
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
//! - the lobby runs on one node (`ClusterMsg::Lobby`, and each `Alive` of its node, say
//!   which): requests for it go to that node's channel, as a game's commands do, and
//!   what a connection has open in it is kept by the connection's node (`Bus::hold`),
//!   which gives it to a lobby that starts elsewhere (`lobby.rs`); a game it starts goes
//!   to one of its players' nodes (`NodeMsg::StartGame`), which runs it.
//!
//! Where one process relies on a queue's drop to answer what a dead game owed, a remote
//! game's node may die instead: a command no node heard (PUBLISH reached nobody) is
//! answered at once, and one owed by a node that then falls silent for
//! the node timeout (`--node-timeout-ms`) (or owed for `OWED_TIMEOUT`) is answered by `sweep`; all
//! `unknown_game` ("the game's node is gone"): the client reconnects and resumes, and
//! finds the game where another node took it over. A node that loses Redis joins again
//! by itself (`inbound`).

mod asks;
mod bus_impl;
mod directory;
mod inbound;
mod link;
mod lobby;
mod peers;
mod wire;

pub use directory::Directory;
pub use link::Keys;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::PubSubSink;
use dashmap::DashMap;
use elementals_protocol::messages::{GameId, RequestId};
use elementals_protocol::ErrorCode;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{refused, topic, Bus, LocalBus};
use crate::config::ClusterConfig;
use crate::msg::{ConnId, GameCmd, GameError, ReplyTo};
use link::{Link, Owed};
use wire::{ClusterMsg, NodeMsg, WireCmd};

/// A connection id's bits from here up to `NODE_MASK` are its node's number; 0 is a
/// connection of this process that no other node addresses (a bot's seat, whose id has
/// bit 62 set: `bots::FIRST_BOT_CONN`).
pub const NODE_SHIFT: u32 = 48;
const NODE_MASK: u64 = (1 << 14) - 1;
// The numbers the database gives out (`node_leases.number`) fit.
const _: () = assert!(NODE_MASK == crate::db::NODE_NUMBERS as u64);

/// How often the node says it is alive, flushes its games' summaries and sweeps for
/// answers owed by nodes that died.
const TICK: Duration = directory::HEARTBEAT;

/// How long a command forwarded to a live node may wait for its answer before it is
/// answered here: far past any game's answer (a game answers between two commands), so
/// only an answer lost on its way waits this long.
const OWED_TIMEOUT: Duration = Duration::from_secs(15);

/// How long an answer `unheard` gave is remembered, to drop the node's own should it come
/// after all (`late`): past any stall a node survives without stopping its games.
const LATE_KEPT: Duration = Duration::from_secs(300);

/// Consecutive resyncs a remote spectator may need within `RESYNC_WINDOW` before it is
/// dropped (as `MAX_RESYNC_ATTEMPTS` in one process).
const RESYNC_WINDOW: Duration = Duration::from_secs(10);

/// TCP keepalive probes on every Redis connection: the first after this long idle, then
/// `KEEPALIVE_INTERVAL` apart, `KEEPALIVE_RETRIES` unanswered and the kernel closes it; and
/// data unacknowledged for `TCP_USER_TIMEOUT` closes it too. A Redis host that vanished
/// without a word (powered off, a network cut) is then a closed connection within about
/// 20 s, idle or not, as a reset is at once: the subscription is made again (`inbound`) and
/// the writer reconnects (`link`). A stall of a connection still acknowledged is the
/// silence check's (`--redis-silence-ms`), and each request's is redis-rs's response
/// timeout (500 ms; 1 s to connect).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(20);

/// A client for the Redis at `url`, its connections set up as `KEEPALIVE_IDLE` says.
fn client(url: &str) -> ::redis::RedisResult<::redis::Client> {
    use ::redis::io::tcp::{socket2::TcpKeepalive, TcpSettings};
    use ::redis::IntoConnectionInfo;
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    let tcp = TcpSettings::default()
        .set_nodelay(true)
        .set_keepalive(keepalive)
        .set_user_timeout(TCP_USER_TIMEOUT);
    ::redis::Client::open(url.into_connection_info()?.set_tcp_settings(tcp))
}

/// The node of connection `conn` (0: this process's own, see `NODE_SHIFT`).
pub fn node_of(conn: ConnId) -> u16 {
    ((conn >> NODE_SHIFT) & NODE_MASK) as u16
}

#[derive(Debug)]
pub struct RedisBus {
    local: LocalBus,
    client: ::redis::Client,
    /// For look-ups (`find_online`); the writes go through `link`.
    query: ::redis::aio::MultiplexedConnection,
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
    /// Requests `unheard` answered here, by connection, and when: should their node answer
    /// after all, that answer (its frame, then its `Answered`) is dropped, so that a
    /// client hears one answer a request. Kept for `LATE_KEPT` at most.
    late: DashMap<ConnId, (RequestId, Instant)>,
    /// Resyncs of this node's spectators of remote games: (count, first) by (game, conn).
    resyncs: DashMap<(GameId, ConnId), (u8, Instant)>,
    /// Spectators' fresh snapshots that no node heard, to ask again (`retry_resyncs`).
    resync_later: DashMap<(GameId, ConnId), ()>,
    /// `my_games` asked of other nodes (`asks.rs`).
    asks: asks::Asks,
    /// Where the lobby runs, as this node last heard (node, generation), and whether it
    /// is here (`lobby.rs`).
    lobby: lobby::Whereabouts,
}

/// Why cluster mode could not start.
#[derive(Debug, thiserror::Error)]
#[error("Redis ({url}): {error}")]
pub struct RedisError {
    url: String,
    error: ::redis::RedisError,
}

impl RedisBus {
    /// Connects to the cluster's Redis as node `node` (its number, taken in the database:
    /// `Db::node_number`), subscribes to this node's and the cluster's channels, loads
    /// the directory, and starts listening until `stop`.
    pub async fn start(
        config: &ClusterConfig,
        node: u16,
        stop: CancellationToken,
    ) -> Result<Arc<RedisBus>, RedisError> {
        let fail = |error| RedisError {
            url: config.redis_url.clone(),
            error,
        };
        let client = client(&config.redis_url).map_err(fail)?;
        let mut con = client
            .get_multiplexed_async_connection()
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
        let lobby: Option<String> = ::redis::cmd("GET")
            .arg(keys.lobby())
            .query_async(&mut con)
            .await
            .map_err(fail)?;
        let query = con.clone();
        let link = Link::start(client.clone(), con, keys, unheard_tx);
        let directory = Arc::new(Directory::new(
            node,
            link.clone(),
            config.lease,
            config.node_timeout,
        ));
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
            query,
            node,
            link,
            directory,
            games: DashMap::new(),
            remote_subscribers: DashMap::new(),
            watched: DashMap::new(),
            sink: tokio::sync::Mutex::new(sink),
            owed: DashMap::new(),
            late: DashMap::new(),
            resyncs: DashMap::new(),
            resync_later: DashMap::new(),
            asks: asks::Asks::default(),
            lobby: lobby::Whereabouts::joined(lobby),
        });
        let silence = config.silence;
        tokio::spawn(inbound::listen(bus.clone(), stream, unheard, silence, stop));
        Ok(bus)
    }

    /// The node's number, and the name that runs under it, said again: by `tick`.
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
            lobby: self.lobby_here(),
        });
        self.link.expire_presence();
        self.refresh_number();
        self.directory.flush();
        self.sweep();
        self.retry_resyncs();
    }

    /// Asks again for the fresh snapshots no node heard, for the spectators still here of
    /// games still running elsewhere.
    fn retry_resyncs(&self) {
        let waiting: Vec<(GameId, ConnId)> = self.resync_later.iter().map(|e| *e.key()).collect();
        for (game, conn) in waiting {
            self.resync_later.remove(&(game, conn));
            if self.directory.node_of(game).is_some() && !self.local.is_closed(conn) {
                let reply = ReplyTo {
                    conn,
                    request_id: None,
                    settle: false,
                };
                self.notify_game(game, GameCmd::Watch { reply });
            }
        }
    }

    /// Calls `tick` every `TICK` until `stop`.
    pub fn spawn_ticks(
        self: &Arc<Self>,
        registry: Arc<dyn crate::peers::Here>,
        stop: CancellationToken,
    ) {
        self.asks.answer_from(&registry);
        let bus = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(TICK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => bus.tick(registry.online_here()),
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
        self.late.retain(|_, late| late.1.elapsed() < LATE_KEPT);
    }

    /// A command `o` that no node will answer: answered here, once. A spectator's fresh
    /// snapshot is asked again at the next tick instead (`retry_resyncs`): the game's node,
    /// rejoining Redis after a cut as this node has, may not hear its channel yet.
    fn unheard(&self, o: Owed) {
        if o.resync {
            self.resync_later.insert((o.game, o.reply.conn), ());
            return;
        }
        if o.reply.settle
            && self
                .owed
                .remove_if(&o.reply.conn, |_, w| w.0.game == o.game)
                .is_none()
        {
            return;
        }
        if let Some(request) = o.reply.request_id {
            self.late.insert(o.reply.conn, (request, Instant::now()));
        }
        if o.game == crate::msg::LOBBY_LEASE {
            return refused(self, o.reply, ErrorCode::Internal, lobby::MOVING);
        }
        let gone = GameError::new(ErrorCode::UnknownGame, "the game's node is gone");
        refused(self, o.reply, gone.code, &gone.message);
    }

    /// Notes that `o`'s session waits for another node's answer. A request that reuses
    /// the id of one answered late is no longer told from it: its answer is let through.
    fn owe(&self, o: Owed) {
        if let Some(request) = o.reply.request_id {
            self.late
                .remove_if(&o.reply.conn, |_, late| late.0 == request);
        }
        self.owed.insert(o.reply.conn, (o, Instant::now()));
    }

    /// A game's start that no node heard (its node's channel had no subscriber: the node
    /// lost Redis as the lobby chose it): the game starts here, so that its players find
    /// it when they come back, rather than be forgotten by the pool.
    fn start_unheard(&self, payload: &[u8]) {
        if let Some(NodeMsg::StartGame(game)) = wire::decode::<NodeMsg>(payload) {
            tracing::warn!(game = %game.setup.game_id, "a game's start reached no node: it starts here");
            self.local.start_game(game);
        }
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
        let resync = matches!(&cmd, GameCmd::Watch { reply } if reply.request_id.is_none());
        let cmd = match WireCmd::of(cmd) {
            Ok(cmd) => cmd,
            // The test hooks' commands carry a channel: not across nodes.
            Err(cmd) => return self.refuse(game, &cmd),
        };
        let owed = reply.map(|reply| Owed {
            game,
            node,
            reply,
            resync,
        });
        if let Some(o) = owed.filter(|o| o.reply.settle) {
            self.owe(o);
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

#[cfg(test)]
mod tests;
