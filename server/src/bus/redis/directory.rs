//! The cluster's directory as this node sees it: which node runs each live game (with its
//! seats and summary), which nodes are alive and how many users each has online.
//!
//! The truth is in Redis (the hash `{cluster}:games`, game → `DirEntry`, and the hashes
//! `{cluster}:online:{node}`, account → name, which expire unless their node refreshes
//! them); each node keeps a mirror of the other nodes' games, filled from the hash at start
//! and kept by the cluster channel's `ClusterMsg`s, so that the registry's lookups (a
//! player's seat, a game by id, the live games list) stay synchronous and cost no round
//! trip. A node that has not said it is alive for `--node-timeout-ms` is taken for dead: its
//! games leave the live list and its users the online count, and commands still waiting
//! for its answer are answered (see `RedisBus::sweep`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
#[cfg(test)]
use elementals_protocol::rules::Seat;
use tokio::sync::watch;
use tokio::time::Instant;

use super::link::Link;
use super::wire::{ClusterMsg, DirEntry};

mod reload;
mod sleeping;
use crate::bus::ConnId;
use crate::peers::{SeatAt, SeatMap, Sleepers};
use crate::record::AccountId;

/// How often a node says it is alive (and refreshes its presence's expiry).
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a node may stay silent before the others take it for dead: the default of
/// `--node-timeout-ms`, which the mirror's tests take. Several heartbeats, so that one
/// late message is no death.
#[cfg(test)]
pub const NODE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a node's presence hash outlives its last refresh in Redis.
pub const PRESENCE_TTL: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct Directory {
    pub node: u16,
    link: Link,
    /// The other nodes' live games.
    remote: DashMap<GameId, DirEntry>,
    /// The seats of the other nodes' games.
    seats: SeatMap,
    /// Bumped as each of the other nodes' games enters the mirror (`Peers::games_opened`).
    opened: watch::Sender<u64>,
    /// The cluster's sleeping games (`game/hibernate.rs`), run by no node.
    sleepers: Sleepers,
    /// How often the node has read the hash again after rejoining Redis (`reload`): the
    /// sleeping games said meanwhile are then read from storage (`sleepers_read`).
    rejoins: AtomicU64,
    /// This node's live games, as written to the hash.
    own: DashMap<GameId, DirEntry>,
    /// Games of the mirror the hash lacked when read again (`reload`), and since when.
    unconfirmed: DashMap<GameId, Instant>,
    /// Summaries changed since the last flush (`flush`).
    dirty: Mutex<HashMap<GameId, LiveGame>>,
    /// When each other node was last heard, and its online count then.
    nodes: DashMap<u16, (Instant, u32)>,
    /// This node's users online (name, connection, when it signed in), as written to its
    /// presence hash.
    online: DashMap<AccountId, (String, ConnId, SignInAt)>,
    /// Whether the node hears Redis (its subscription is up): `/healthz`.
    reached: AtomicBool,
    /// Since when it has not: when it last heard Redis (see `set_reaches_redis`,
    /// `reload.rs`).
    cut_at: Mutex<Option<Instant>>,
    /// How late the last other node's heartbeat came, in milliseconds (`/metrics`).
    lag_ms: AtomicU64,
    /// When this node joined: until the node timeout after, a node not yet heard from is
    /// taken to be alive (it has not had the time to say so).
    joined: Instant,
    /// How long a node may stay silent before this one takes it for dead.
    node_timeout: Duration,
    /// How long a node's games stay in the mirror once it is silent (`forget_dead`).
    forget_after: Duration,
}

impl Directory {
    /// The mirror of node `node`, in a cluster whose leases last `lease` and whose nodes
    /// are taken for dead after `node_timeout` of silence.
    pub fn new(node: u16, link: Link, lease: Duration, node_timeout: Duration) -> Directory {
        Directory {
            node,
            node_timeout,
            forget_after: node_timeout + lease * 2,
            link,
            remote: DashMap::new(),
            seats: SeatMap::default(),
            opened: watch::Sender::new(0),
            sleepers: Sleepers::default(),
            rejoins: AtomicU64::new(0),
            own: DashMap::new(),
            unconfirmed: DashMap::new(),
            dirty: Mutex::new(HashMap::new()),
            nodes: DashMap::new(),
            online: DashMap::new(),
            reached: AtomicBool::new(true),
            cut_at: Mutex::new(None),
            joined: Instant::now(),
            lag_ms: AtomicU64::new(0),
        }
    }

    /// Fills the mirror from the hash (at start).
    pub fn load(&self, entries: Vec<(GameId, DirEntry)>) {
        for (game, entry) in entries {
            if entry.node != self.node {
                self.put_remote(game, entry);
            }
        }
    }

    // --- this node's games and users (called by the registry) ---

    pub fn game_opened(&self, game: GameId, seats: SeatPair<AccountId>, summary: LiveGame) {
        let entry = DirEntry {
            node: self.node,
            seats,
            summary,
        };
        self.own.insert(game, entry.clone());
        self.drop_remote(game);
        self.drop_dormant(game);
        self.link.hset_game(game, &entry);
        self.link.cluster(&ClusterMsg::Opened { game, entry });
    }

    pub fn summary_changed(&self, summary: LiveGame) {
        let game = summary.game_id;
        if let Some(mut entry) = self.own.get_mut(&game) {
            entry.summary = summary.clone();
        } else {
            return;
        }
        lock(&self.dirty).insert(game, summary);
    }

    pub fn game_ended(&self, game: GameId) {
        if self.own.remove(&game).is_none() {
            return;
        }
        lock(&self.dirty).remove(&game);
        self.link.hdel_game(game);
        self.link.cluster(&ClusterMsg::Ended {
            game,
            node: self.node,
        });
    }

    /// The game runs on another node now (its lease is that node's): this node forgets it
    /// without a word to the cluster, whose directory already names the new node, so that
    /// rejoining Redis later does not write the old entry back.
    pub fn game_moved(&self, game: GameId) {
        self.own.remove(&game);
        lock(&self.dirty).remove(&game);
    }

    /// `account` signed in on this node's connection `conn`: any other node closes its
    /// connection of the account if it signed in earlier (one connection per account,
    /// cluster-wide).
    pub fn user_online(&self, account: AccountId, name: &str, conn: ConnId) {
        let at = (crate::clock::unix_ms(), self.node);
        self.online.insert(account, (name.to_owned(), conn, at));
        self.link.presence_set(account, name, conn);
        self.link.cluster(&ClusterMsg::SignedIn {
            account,
            node: self.node,
            at_ms: at.0,
        });
    }

    /// `account`'s connection `conn` has ended (nothing changes if a newer one took over).
    pub fn user_offline(&self, account: AccountId, conn: ConnId) {
        if let Some((_, (name, _, _))) = self.online.remove_if(&account, |_, (_, c, _)| *c == conn)
        {
            self.link.presence_del(account, &name, conn);
        }
    }

    /// Writes and announces again every game and user of this node (Redis may have
    /// restarted empty).
    pub fn announce_all(&self) {
        let games: Vec<(GameId, DirEntry)> = self
            .own
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        for (game, entry) in games {
            self.link.hset_game(game, &entry);
            self.link.cluster(&ClusterMsg::Opened { game, entry });
        }
        let users: Vec<(AccountId, String, ConnId)> = self
            .online
            .iter()
            .map(|e| (*e.key(), e.value().0.clone(), e.value().1))
            .collect();
        for (account, name, conn) in users {
            self.link.presence_set(account, &name, conn);
        }
    }

    /// Writes the summaries changed since the last call, and tells the other nodes (one
    /// message for them all).
    pub fn flush(&self) {
        self.drop_unconfirmed();
        self.forget_dead();
        let changed: Vec<(GameId, LiveGame)> = lock(&self.dirty).drain().collect();
        if changed.is_empty() {
            return;
        }
        for (game, _) in &changed {
            if let Some(entry) = self.own.get(game).map(|e| e.clone()) {
                self.link.hset_game(*game, &entry);
            }
        }
        self.link.cluster(&ClusterMsg::Summaries {
            node: self.node,
            summaries: changed,
        });
    }

    /// Drops the games of nodes silent for `forget_after`: by then a game that still runs
    /// has been claimed by a live node, which said so (`Opened`); the others ended with
    /// their node, before it could say so (`Ended`), and their seats would otherwise hold
    /// their players (`already_in_game`) for good. A node silent only to this one (it was
    /// cut off) announces its games again as it rejoins.
    fn forget_dead(&self) {
        let gone: Vec<GameId> = self
            .remote
            .iter()
            .filter(|e| self.silent_for(e.value().node) >= self.forget_after)
            .map(|e| *e.key())
            .collect();
        for game in gone {
            tracing::info!(%game, "the game's node is long silent: it is forgotten");
            self.drop_remote(game);
        }
    }

    /// How long `node` has not been heard from (a node not yet heard: since this one
    /// joined).
    fn silent_for(&self, node: u16) -> Duration {
        if node == self.node {
            return Duration::ZERO;
        }
        match self.nodes.get(&node) {
            Some(n) => n.0.elapsed(),
            None => self.joined.elapsed(),
        }
    }

    // --- what the other nodes say ---

    /// `node` is heard from (other than by its `Alive`): alive from now, its count of
    /// users online as last said.
    pub fn heard_from(&self, node: u16) {
        if node != self.node {
            let online = self.nodes.get(&node).map_or(0, |n| n.1);
            self.nodes.insert(node, (Instant::now(), online));
        }
    }

    /// Takes in what another node says; returns a connection of this node to supersede
    /// (its account signed in on another node).
    pub fn heard(&self, msg: ClusterMsg) -> Option<ConnId> {
        match msg {
            ClusterMsg::Opened { game, entry } => {
                if entry.node == self.node {
                    return None;
                }
                // A game another node took over is no longer this node's to announce.
                self.own.remove(&game);
                self.put_remote(game, entry);
            }
            // This node's own word (taken when said), or news older than its waking here.
            ClusterMsg::Slept {
                game,
                seats,
                node,
                summary,
            } => {
                if node != self.node && !self.own.contains_key(&game) {
                    self.put_dormant(game, seats, summary);
                }
            }
            ClusterMsg::Ended { game, node } => {
                if self.remote.get(&game).is_some_and(|e| e.node == node) {
                    self.drop_remote(game);
                }
            }
            ClusterMsg::Summaries { node, summaries } => {
                for (game, summary) in summaries {
                    if let Some(mut entry) = self.remote.get_mut(&game) {
                        if entry.node == node {
                            entry.summary = summary;
                        }
                    }
                }
            }
            ClusterMsg::Alive {
                node,
                online,
                sent_ms,
                ..
            } => {
                if node != self.node {
                    self.nodes.insert(node, (Instant::now(), online));
                    let lag = crate::clock::unix_ms().saturating_sub(sent_ms);
                    self.lag_ms.store(lag, Ordering::Relaxed);
                }
            }
            ClusterMsg::Gone { node } => {
                // Heard from long ago: dead from now on.
                let long_ago = Instant::now()
                    .checked_sub(self.node_timeout)
                    .unwrap_or_else(Instant::now);
                self.nodes.insert(node, (long_ago, 0));
            }
            ClusterMsg::SignedIn {
                account,
                node,
                at_ms,
            } if node != self.node => {
                // Only an earlier sign-in here gives way: a later one (the message was
                // slow to come) stands, and the other node's will be superseded by
                // this node's own message. Its presence goes with it; the registry's
                // entry goes when the connection ends.
                let (_, (name, conn, _)) = self
                    .online
                    .remove_if(&account, |_, (_, _, here)| *here < (at_ms, node))?;
                self.link.presence_del(account, &name, conn);
                return Some(conn);
            }
            ClusterMsg::SignedIn { .. } | ClusterMsg::Lobby { .. } => {}
        }
        None
    }

    /// The node's view of the cluster, in the Prometheus text format (`/metrics`).
    pub fn render_metrics(&self) -> String {
        let alive = 1 + self
            .nodes
            .iter()
            .filter(|n| n.0.elapsed() < self.node_timeout)
            .count();
        let gauges = [
            (
                "elementals_cluster_node",
                "This node's number.",
                u64::from(self.node),
            ),
            (
                "elementals_cluster_nodes_alive",
                "Nodes heard from lately, this one too.",
                alive as u64,
            ),
            (
                "elementals_cluster_games_owned",
                "Games this node runs.",
                self.own.len() as u64,
            ),
            (
                "elementals_cluster_remote_games",
                "Games other nodes run.",
                self.remote.len() as u64,
            ),
            (
                "elementals_cluster_bus_lag_ms",
                "How late the last heartbeat of another node came.",
                self.lag_ms.load(Ordering::Relaxed),
            ),
            (
                "elementals_cluster_redis_up",
                "Whether this node hears Redis.",
                u64::from(self.reaches_redis()),
            ),
        ];
        let mut out = String::new();
        for (name, help, value) in gauges {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        out
    }

    /// Whether this node hears Redis (its subscription is up).
    pub fn reaches_redis(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    /// Whether `node` has been heard from within the node timeout (this node always is; one
    /// never heard from is, in this node's first node timeout).
    pub fn is_alive(&self, node: u16) -> bool {
        self.silent_for(node) < self.node_timeout
    }

    // --- lookups (the registry's, for games of other nodes) ---

    /// The node running `game`, if another node does.
    pub fn node_of(&self, game: GameId) -> Option<u16> {
        self.remote.get(&game).map(|e| e.node)
    }

    /// The node running `game` (another node) and the game's summary.
    pub fn entry_of(&self, game: GameId) -> Option<(u16, LiveGame)> {
        self.remote.get(&game).map(|e| (e.node, e.summary.clone()))
    }

    /// `account`'s seats in the other nodes' games and in the sleeping games.
    pub fn seats_of(&self, account: AccountId) -> Vec<SeatAt> {
        let mut seats = self.seats.of(account);
        seats.extend(self.sleepers.seats_of(account));
        seats
    }

    /// `account`'s first seat (the mirror's tests seat each account once).
    #[cfg(test)]
    pub fn seat_of(&self, account: AccountId) -> Option<(GameId, Seat)> {
        self.seats_of(account).first().map(|s| (s.game_id, s.seat))
    }

    /// The other nodes' live games, on nodes alive.
    pub fn remote_games(&self) -> Vec<LiveGame> {
        self.remote
            .iter()
            .filter(|e| self.is_alive(e.node))
            .map(|e| e.summary.clone())
            .collect()
    }

    /// Users online on the other nodes alive.
    pub fn remote_online(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.0.elapsed() < self.node_timeout)
            .map(|n| n.1 as usize)
            .sum()
    }

    fn put_remote(&self, game: GameId, entry: DirEntry) {
        self.unconfirmed.remove(&game);
        self.drop_dormant(game);
        self.drop_remote(game);
        let live = !entry.summary.time_control.is_correspondence();
        self.seats.sit(game, entry.seats, live);
        self.remote.insert(game, entry);
        self.opened.send_modify(|n| *n += 1);
    }

    /// Bumped as each of the other nodes' games enters the mirror.
    pub fn games_opened(&self) -> watch::Receiver<u64> {
        self.opened.subscribe()
    }

    fn drop_remote(&self, game: GameId) {
        if let Some((_, entry)) = self.remote.remove(&game) {
            self.seats.leave(game, [entry.seats.one, entry.seats.two]);
        }
    }
}

/// When an account signed in, in a cluster-wide order: Unix milliseconds (the nodes'
/// clocks, kept in step by NTP: two sign-ins of one account on two nodes closer than
/// their skew may both stand until one ends), then the node's number.
type SignInAt = (u64, u16);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
