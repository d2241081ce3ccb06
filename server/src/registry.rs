//! The registry: who is online, which games are live, and who sits where.
//!
//! Shared, concurrently readable maps (dashmap). They hold handles and summaries, never
//! game state: a game's state lives only in its actor. No lock here is held across an
//! `.await`.
//!
//! In cluster mode the registry also answers for the other nodes' games and users, from
//! this node's mirror of the cluster's directory (`bus::redis::Directory`), which it
//! keeps told of this node's own.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, PlayerInfo, SeatPair};
use elementals_protocol::rules::Seat;

use crate::bus::redis::Directory;
use crate::bus::{Bus, ConnId, LocalBus, RedisBus};
use crate::game::{GameHandle, OwedNow};

mod dormant;
mod finished;
mod owed;
use crate::record::AccountId;

pub use finished::FinishedGame;

/// A live game: its handle and the summary its actor last published.
#[derive(Debug, Clone)]
pub struct LiveEntry {
    pub handle: GameHandle,
    pub summary: LiveGame,
    /// Who sits where (`your_move` finds the account whose action became owed).
    pub seats: SeatPair<AccountId>,
}

/// An online, signed-in user's connection.
#[derive(Debug, Clone)]
pub struct OnlineUser {
    pub name: String,
    /// As of sign-in; the lobby re-reads ratings where they matter.
    pub info: PlayerInfo,
    /// Its connection, on the bus.
    pub conn_id: ConnId,
}

#[derive(Debug)]
pub struct Registry {
    games: DashMap<GameId, LiveEntry>,
    /// What each live game waits for, as its actor last saw it (set whenever it changes;
    /// kept apart from `games` because a game's first events may precede its entry there).
    owed: DashMap<GameId, OwedNow>,
    /// Accounts whose connection asked `my_games`, and that connection: it is sent
    /// `your_move` (`registry/owed.rs`).
    followers: DashMap<AccountId, owed::Follower>,
    seated: DashMap<AccountId, (GameId, Seat)>,
    /// Hibernated games (`dormant.rs`): their seats stay in `seated`.
    dormant: DashMap<GameId, dormant::Dormant>,
    online: DashMap<AccountId, OnlineUser>,
    /// Lower-cased name to account, for online users only.
    by_name: DashMap<String, AccountId>,
    finished: DashMap<GameId, FinishedGame>,
    /// The finished games in the order they finished, oldest first (ids already
    /// forgotten are skipped when they come up).
    finished_order: Mutex<VecDeque<GameId>>,
    /// How the lobby and the games reach connections (see `bus`).
    bus: Arc<dyn Bus>,
    /// The cluster's directory, in cluster mode.
    cluster: Option<Arc<Directory>>,
    /// The cluster's bus, in cluster mode: `my_games` asks other nodes through it.
    redis: Option<Arc<RedisBus>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            games: DashMap::new(),
            owed: DashMap::new(),
            followers: DashMap::new(),
            seated: DashMap::new(),
            dormant: DashMap::new(),
            online: DashMap::new(),
            by_name: DashMap::new(),
            finished: DashMap::new(),
            finished_order: Mutex::default(),
            bus: Arc::new(LocalBus::default()),
            cluster: None,
            redis: None,
        }
    }
}

/// How many finished games are remembered for rematches before the oldest are forgotten.
pub(crate) const FINISHED_MEMORY: usize = 10_000;

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// A node's registry in cluster mode, on `bus`.
    pub fn clustered(bus: Arc<RedisBus>) -> Self {
        Registry {
            cluster: Some(bus.directory.clone()),
            redis: Some(bus.clone()),
            bus,
            ..Self::default()
        }
    }

    /// Whether this node is one of a cluster's.
    pub fn in_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    // --- games ---

    /// The bus between the connections and the lobby and games.
    pub fn bus(&self) -> Arc<dyn Bus> {
        self.bus.clone()
    }

    pub fn insert_game(&self, handle: GameHandle, summary: LiveGame, seats: SeatPair<AccountId>) {
        let id = handle.game_id();
        self.seated.insert(seats.one, (id, Seat::One));
        self.seated.insert(seats.two, (id, Seat::Two));
        if let Some(cluster) = &self.cluster {
            cluster.game_opened(id, seats, summary.clone());
        }
        self.games.insert(
            id,
            LiveEntry {
                handle,
                summary,
                seats,
            },
        );
    }

    pub fn update_summary(&self, summary: LiveGame) {
        if let Some(mut entry) = self.games.get_mut(&summary.game_id) {
            if let Some(cluster) = &self.cluster {
                cluster.summary_changed(summary.clone());
            }
            entry.summary = summary;
        }
    }

    /// Called by a game actor once its game has ended: frees both seats.
    pub fn finish_game(&self, game_id: GameId, finished: FinishedGame) {
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        self.unfollow_remote(finished.players);
        if let Some(cluster) = &self.cluster {
            cluster.game_ended(game_id);
        }
        for (account, _) in [
            (finished.players.one, Seat::One),
            (finished.players.two, Seat::Two),
        ] {
            self.seated.remove_if(&account, |_, (g, _)| *g == game_id);
        }
        // The oldest go first. (No guard into `finished` may be alive across its own
        // `remove`: a shard's read guard held while the same thread takes its write lock
        // deadlocks the worker thread, which once froze the server at its 10,000th game.)
        let mut order = self
            .finished_order
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while self.finished.len() >= FINISHED_MEMORY {
            let Some(oldest) = order.pop_front() else {
                break;
            };
            self.finished.remove(&oldest);
        }
        order.push_back(game_id);
        self.finished.insert(game_id, finished);
    }

    /// Cluster mode: the game runs on another node now; it is forgotten here, its seats
    /// freed, and nothing is kept for a rematch.
    pub fn remove_game(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        self.unfollow_remote(seats);
        if let Some(cluster) = &self.cluster {
            cluster.game_moved(game_id);
        }
        for account in [seats.one, seats.two] {
            self.seated.remove_if(&account, |_, (g, _)| *g == game_id);
        }
    }

    /// A live game of this node (or a hibernated one: a command to it wakes it), or of
    /// another node of the cluster.
    pub fn game(&self, game_id: &GameId) -> Option<GameHandle> {
        if let Some(entry) = self.games.get(game_id) {
            return Some(entry.handle.clone());
        }
        // Checked after `games`: a game being woken is put there before it leaves here.
        if self.dormant.contains_key(game_id) || self.games.contains_key(game_id) {
            return Some(GameHandle::new(*game_id, self.bus.clone()));
        }
        let cluster = self.cluster.as_ref()?;
        // Another node's game, or a sleeping one (a command to it wakes it here).
        (cluster.node_of(*game_id).is_some() || cluster.dormant(*game_id).is_some())
            .then(|| GameHandle::new(*game_id, self.bus.clone()))
    }

    /// Every live game of this node, the most watched first.
    pub fn live_games(&self) -> Vec<LiveGame> {
        let ranked: Vec<(u32, GameId)> = self
            .games
            .iter()
            .map(|e| (e.summary.spectators, *e.key()))
            .collect();
        first_by_spectators(ranked, usize::MAX)
            .into_iter()
            .filter_map(|(_, id)| self.games.get(&id).map(|e| e.summary.clone()))
            .collect()
    }

    /// The `limit` most watched live games (of the whole cluster, in cluster mode), the
    /// most watched first (ties by game id).
    pub fn most_watched(&self, limit: usize) -> Vec<LiveGame> {
        // Rank by (spectators, id) first and clone only the summaries kept, looked up again
        // after the iteration's guards are gone (a game that ended meanwhile is left out).
        let ranked: Vec<(u32, GameId)> = self
            .games
            .iter()
            .map(|e| (e.summary.spectators, *e.key()))
            .collect();
        let Some(cluster) = &self.cluster else {
            return first_by_spectators(ranked, limit)
                .into_iter()
                .filter_map(|(_, id)| self.games.get(&id).map(|e| e.summary.clone()))
                .collect();
        };
        let mut all: std::collections::HashMap<GameId, LiveGame> = cluster
            .remote_games()
            .into_iter()
            .map(|g| (g.game_id, g))
            .collect();
        for (_, id) in &ranked {
            if let Some(e) = self.games.get(id) {
                all.insert(*id, e.summary.clone());
            }
        }
        let ranked = all.values().map(|g| (g.spectators, g.game_id)).collect();
        first_by_spectators(ranked, limit)
            .into_iter()
            .filter_map(|(_, id)| all.remove(&id))
            .collect()
    }

    pub fn live_game_count(&self) -> usize {
        self.games.len()
    }

    /// The game and seat an account is playing, if any.
    pub fn seat_of(&self, account: AccountId) -> Option<(GameHandle, Seat)> {
        let seated = self.seated.get(&account).map(|s| *s);
        let (game_id, seat) = match seated {
            Some(seat) => seat,
            None => self.cluster.as_ref()?.seat_of(account)?,
        };
        self.game(&game_id).map(|h| (h, seat))
    }

    pub fn is_seated(&self, account: AccountId) -> bool {
        self.seated.contains_key(&account)
            || self
                .cluster
                .as_ref()
                .is_some_and(|c| c.seat_of(account).is_some())
    }

    // --- users ---

    /// Mark a user online on this connection; returns the connection it replaces.
    pub fn set_online(&self, account: AccountId, user: OnlineUser) -> Option<OnlineUser> {
        self.by_name.insert(user.name.to_lowercase(), account);
        self.unfollow(account, |conn| conn != user.conn_id);
        if let Some(cluster) = &self.cluster {
            cluster.user_online(account, &user.name, user.conn_id);
        }
        self.online.insert(account, user)
    }

    /// Mark a user offline, unless a newer connection has taken over.
    pub fn set_offline(&self, account: AccountId, conn_id: u64) {
        self.unfollow(account, |conn| conn == conn_id);
        let removed = self.online.remove_if(&account, |_, u| u.conn_id == conn_id);
        if let Some((_, user)) = removed {
            if let Some(cluster) = &self.cluster {
                cluster.user_offline(account, conn_id);
            }
            self.by_name
                .remove_if(&user.name.to_lowercase(), |_, a| *a == account);
        }
    }

    pub fn online(&self, account: AccountId) -> Option<OnlineUser> {
        self.online.get(&account).map(|u| u.clone())
    }

    pub fn online_by_name(&self, name: &str) -> Option<(AccountId, OnlineUser)> {
        let account = *self.by_name.get(&name.to_lowercase())?;
        self.online(account).map(|u| (account, u))
    }

    /// The cluster's gauges for `/metrics` (none outside cluster mode).
    pub fn cluster_metrics(&self) -> String {
        self.cluster
            .as_ref()
            .map(|c| c.render_metrics())
            .unwrap_or_default()
    }

    /// Whether this node hears the cluster's Redis (always, outside cluster mode).
    pub fn reaches_cluster(&self) -> bool {
        self.cluster.as_ref().is_none_or(|c| c.reaches_redis())
    }

    /// Users online on this node (`cluster_online_count`: on every node).
    pub fn online_count(&self) -> usize {
        self.online.len()
    }

    /// Users online in the whole cluster, as the nodes last said (this node's alone
    /// outside cluster mode).
    pub fn cluster_online_count(&self) -> usize {
        self.online.len() + self.cluster.as_ref().map_or(0, |c| c.remote_online())
    }

    /// Accounts that must not be pruned: online, seated, or players of a finished game
    /// still remembered (whose record may not be stored yet).
    pub fn active_accounts(&self) -> HashSet<AccountId> {
        let mut active: HashSet<AccountId> = self.online.iter().map(|e| *e.key()).collect();
        active.extend(self.seated.iter().map(|e| *e.key()));
        for finished in self.finished.iter() {
            active.insert(finished.players.one);
            active.insert(finished.players.two);
        }
        active
    }
}

/// (spectators, game) pairs sorted by spectators (most first, ties by game id), cut to
/// `limit`.
fn first_by_spectators(mut games: Vec<(u32, GameId)>, limit: usize) -> Vec<(u32, GameId)> {
    let order = |a: &(u32, GameId), b: &(u32, GameId)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    if limit < games.len() {
        games.select_nth_unstable_by(limit, order);
        games.truncate(limit);
    }
    games.sort_by(order);
    games
}

#[cfg(test)]
mod tests;
