//! The cluster's directory as this node sees it: which node runs each live game (with its
//! seats and summary), which nodes are alive and how many users each has online.
//!
//! The truth is in Redis (the hash `{cluster}:games`, game → `DirEntry`, and the hashes
//! `{cluster}:online:{node}`, account → name, which expire unless their node refreshes
//! them); each node keeps a mirror of the other nodes' games, filled from the hash at start
//! and kept by the cluster channel's `ClusterMsg`s, so that the registry's lookups (a
//! player's seat, a game by id, the live games list) stay synchronous and cost no round
//! trip. A node that has not said it is alive for `NODE_TIMEOUT` is taken for dead: its
//! games leave the live list and its users the online count, and commands still waiting
//! for its answer are answered (see `RedisBus::sweep`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use elementals_protocol::rules::Seat;
use tokio::time::Instant;

use super::link::Link;
use super::wire::{ClusterMsg, DirEntry};

mod reload;
mod sleeping;
use crate::bus::ConnId;
use crate::record::AccountId;

/// How often a node says it is alive (and refreshes its presence's expiry).
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a node may stay silent before the others take it for dead. Several
/// heartbeats, so that one late message is no death.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a node's presence hash outlives its last refresh in Redis.
pub const PRESENCE_TTL: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct Directory {
    pub node: u16,
    link: Link,
    /// The other nodes' live games.
    remote: DashMap<GameId, DirEntry>,
    /// The seats of the other nodes' games and of the sleeping games.
    seats: DashMap<AccountId, (GameId, Seat)>,
    /// The cluster's sleeping games (`game/hibernate.rs`), run by no node: their seats,
    /// and the number they were put here under (`forget_dormant`).
    dormant: DashMap<GameId, (SeatPair<AccountId>, u64)>,
    dormant_seq: AtomicU64,
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
    /// How late the last other node's heartbeat came, in milliseconds (`/metrics`).
    lag_ms: AtomicU64,
    /// When this node joined: until `NODE_TIMEOUT` after, a node not yet heard from is
    /// taken to be alive (it has not had the time to say so).
    joined: Instant,
}

impl Directory {
    pub fn new(node: u16, link: Link) -> Directory {
        Directory {
            node,
            link,
            remote: DashMap::new(),
            seats: DashMap::new(),
            dormant: DashMap::new(),
            dormant_seq: AtomicU64::new(0),
            rejoins: AtomicU64::new(0),
            own: DashMap::new(),
            unconfirmed: DashMap::new(),
            dirty: Mutex::new(HashMap::new()),
            nodes: DashMap::new(),
            online: DashMap::new(),
            reached: AtomicBool::new(true),
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

    // --- what the other nodes say ---

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
            ClusterMsg::Slept { game, seats, node } => {
                if node != self.node && !self.own.contains_key(&game) {
                    self.put_dormant(game, seats);
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
                    .checked_sub(NODE_TIMEOUT)
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
            ClusterMsg::SignedIn { .. } => {}
        }
        None
    }

    /// The node's view of the cluster, in the Prometheus text format (`/metrics`).
    pub fn render_metrics(&self) -> String {
        let alive = 1 + self
            .nodes
            .iter()
            .filter(|n| n.0.elapsed() < NODE_TIMEOUT)
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
                "elementals_cluster_games_asleep",
                "Sleeping games of the cluster, as this node has heard.",
                self.dormant.len() as u64,
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

    pub fn set_reaches_redis(&self, reached: bool) {
        self.reached.store(reached, Ordering::Relaxed);
    }

    /// Whether `node` has been heard from within `NODE_TIMEOUT` (this node always is; one
    /// never heard from is, in this node's first `NODE_TIMEOUT`).
    pub fn is_alive(&self, node: u16) -> bool {
        if node == self.node {
            return true;
        }
        match self.nodes.get(&node) {
            Some(n) => n.0.elapsed() < NODE_TIMEOUT,
            None => self.joined.elapsed() < NODE_TIMEOUT,
        }
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

    pub fn seat_of(&self, account: AccountId) -> Option<(GameId, Seat)> {
        self.seats.get(&account).map(|s| *s)
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
            .filter(|n| n.0.elapsed() < NODE_TIMEOUT)
            .map(|n| n.1 as usize)
            .sum()
    }

    fn put_remote(&self, game: GameId, entry: DirEntry) {
        self.unconfirmed.remove(&game);
        self.drop_dormant(game);
        self.drop_remote(game);
        self.seats.insert(entry.seats.one, (game, Seat::One));
        self.seats.insert(entry.seats.two, (game, Seat::Two));
        self.remote.insert(game, entry);
    }

    fn drop_remote(&self, game: GameId) {
        if let Some((_, entry)) = self.remote.remove(&game) {
            for account in [entry.seats.one, entry.seats.two] {
                self.seats.remove_if(&account, |_, (g, _)| *g == game);
            }
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
