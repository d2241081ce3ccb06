//! The registry: who is online, which games are live, and who sits where.
//!
//! Shared, concurrently readable maps (dashmap). They hold handles and summaries, never
//! game state: a game's state lives only in its actor. No lock here is held across an
//! `.await`.
//!
//! It also answers for the other nodes' games and users, from its peers (`crate::peers`: in
//! cluster mode the mirror of the cluster's directory, on a single node nobody), which it
//! keeps told of this node's own.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, PlayerInfo, SeatPair};
use elementals_protocol::rules::Seat;

use crate::bus::{Bus, ConnId, GameHandle, LocalBus};
use crate::msg::{LobbyCmd, OwedNow};

mod dormant;
mod finished;
mod owed;
use crate::record::AccountId;

pub use crate::peers::{is_live, Alone, Asleep, Here, Peers, SeatAt, SeatMap, Sleepers};
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
    /// Each account's seats in this node's games (`seats.rs`).
    seated: SeatMap,
    /// Sleeping games this node is waking (`dormant.rs`; the peers keep the sleeping games).
    dormant: DashMap<GameId, dormant::Waking>,
    online: DashMap<AccountId, OnlineUser>,
    /// Lower-cased name to account, for online users only.
    by_name: DashMap<String, AccountId>,
    finished: DashMap<GameId, FinishedGame>,
    /// The finished games in the order they finished, oldest first (ids already
    /// forgotten are skipped when they come up).
    finished_order: Mutex<VecDeque<GameId>>,
    /// How the lobby and the games reach connections (see `bus`).
    bus: Arc<dyn Bus>,
    /// The other nodes (`peers.rs`).
    peers: Arc<dyn Peers>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            games: DashMap::new(),
            owed: DashMap::new(),
            followers: DashMap::new(),
            seated: SeatMap::default(),
            dormant: DashMap::new(),
            online: DashMap::new(),
            by_name: DashMap::new(),
            finished: DashMap::new(),
            finished_order: Mutex::default(),
            bus: Arc::new(LocalBus::default()),
            peers: Arc::new(Alone::default()),
        }
    }
}

/// How many finished games a node remembers, and the lobby for rematches, before the
/// oldest are forgotten.
pub(crate) const FINISHED_MEMORY: usize = 10_000;

/// The longest a sign-in waits for the other nodes to be able to hear of it.
const TOLD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry on `bus`, with `peers` for the other nodes (in cluster mode both are
    /// the cluster's bus).
    pub fn with_peers(bus: Arc<dyn Bus>, peers: Arc<dyn Peers>) -> Self {
        Registry {
            bus,
            peers,
            ..Self::default()
        }
    }

    /// Whether this node is the only one (see `Peers::alone`).
    pub fn alone(&self) -> bool {
        self.peers.alone()
    }

    // --- games ---

    /// The bus between the connections and the lobby and games.
    pub fn bus(&self) -> Arc<dyn Bus> {
        self.bus.clone()
    }

    pub fn insert_game(&self, handle: GameHandle, summary: LiveGame, seats: SeatPair<AccountId>) {
        let id = handle.game_id();
        let live = !summary.time_control.is_correspondence();
        self.seated.sit(id, seats, live);
        self.peers.game_opened(id, seats, summary.clone());
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
            self.peers.summary_changed(summary.clone());
            entry.summary = summary;
        }
    }

    /// Game `game_id` of this node has ended: its end is logged, and its players are about
    /// to hear it. To them it is a finished game from now on, before they hear it ended and
    /// while its actor still records it: it owes nothing (`my_games`, here or asked from
    /// another node, leaves it out), their seats here are free for their next game, and a
    /// move in it is answered `game_over`. The lobby (wherever it runs) is told, so that it
    /// counts their seats free too and keeps its rematch offers. The rest of forgetting the
    /// game is `finish_game`'s; in a cluster the other nodes' directories hear of the end
    /// from there.
    pub fn game_over(&self, game_id: GameId, finished: &FinishedGame) {
        if !self.games.contains_key(&game_id) {
            return;
        }
        self.owed.remove(&game_id);
        self.release(game_id, finished);
    }

    /// Called by a game actor once its game has ended and it stops answering (or by its
    /// supervisor): forgets the game, and does what `game_over` does if it has not (frees
    /// both seats, tells the lobby).
    pub fn finish_game(&self, game_id: GameId, finished: FinishedGame) {
        self.release(game_id, &finished);
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        self.unfollow_remote(game_id, finished.players);
        self.peers.game_ended(game_id);
    }

    /// Remembers finished game `game_id` and frees its players' seats here; the first time,
    /// tells the lobby.
    fn release(&self, game_id: GameId, finished: &FinishedGame) {
        // Remembered before the seats go, so that a look-up in between finds one or the other.
        let first = self.remember_finished(game_id, finished);
        self.seated
            .leave(game_id, [finished.players.one, finished.players.two]);
        if first {
            self.bus
                .notify_lobby(LobbyCmd::Ended(finished.ended(game_id)));
        }
    }

    /// Remembers finished game `game_id`, forgetting the oldest beyond `FINISHED_MEMORY`;
    /// whether it was not remembered already.
    fn remember_finished(&self, game_id: GameId, finished: &FinishedGame) -> bool {
        // The oldest go first. (No guard into `finished` may be alive across its own
        // `remove`: a shard's read guard held while the same thread takes its write lock
        // deadlocks the worker thread, which once froze the server at its 10,000th game.)
        let mut order = self
            .finished_order
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.finished.contains_key(&game_id) {
            return false;
        }
        while self.finished.len() >= FINISHED_MEMORY {
            let Some(oldest) = order.pop_front() else {
                break;
            };
            self.finished.remove(&oldest);
        }
        order.push_back(game_id);
        self.finished.insert(game_id, finished.clone());
        true
    }

    /// Cluster mode: the game runs on another node now; it is forgotten here, its seats
    /// freed, and nothing is kept for a rematch.
    pub fn remove_game(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        self.unfollow_remote(game_id, seats);
        self.peers.game_moved(game_id);
        self.seated.leave(game_id, [seats.one, seats.two]);
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
        // Another node's game, or a sleeping one (a command to it wakes it here).
        (self.peers.node_of(*game_id).is_some() || self.peers.dormant(*game_id).is_some())
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

    /// The `limit` most watched games under way (of the whole cluster, in cluster mode),
    /// the most watched first (ties by game id): the live ones and the sleeping ones, which
    /// nobody watches. A game being woken is listed once, as it runs.
    pub fn most_watched(&self, limit: usize) -> Vec<LiveGame> {
        // Rank by (spectators, id) first and clone only this node's summaries kept, looked
        // up again after the iteration's guards are gone (a game that ended meanwhile is
        // left out). A game being woken is in the peers' sleepers for a moment too.
        let mut others: std::collections::HashMap<GameId, LiveGame> = (self.peers)
            .dormant_games()
            .into_iter()
            .chain(self.peers.remote_games())
            .filter(|g| !self.games.contains_key(&g.game_id))
            .map(|g| (g.game_id, g))
            .collect();
        let mut ranked: Vec<(u32, GameId)> = self
            .games
            .iter()
            .map(|e| (e.summary.spectators, *e.key()))
            .collect();
        ranked.extend(others.values().map(|g| (g.spectators, g.game_id)));
        first_by_spectators(ranked, limit)
            .into_iter()
            .filter_map(|(_, id)| match others.remove(&id) {
                Some(game) => Some(game),
                None => self.games.get(&id).map(|e| e.summary.clone()),
            })
            .collect()
    }

    pub fn live_game_count(&self) -> usize {
        self.games.len()
    }

    /// Every seat `account` holds: in this node's games, and in cluster mode in the other
    /// nodes' and the sleeping games, in the order it sat down (this node's first).
    pub fn seats_of(&self, account: AccountId) -> Vec<SeatAt> {
        let mut seats = self.seated.of(account);
        for at in self.peers.seats_of(account) {
            if !seats.iter().any(|s| s.game_id == at.game_id) {
                seats.push(at);
            }
        }
        seats
    }

    /// `account`'s seats in games that are awake (a command to a sleeping game would wake
    /// it), the live one first.
    pub fn awake_seats(&self, account: AccountId) -> Vec<(GameHandle, SeatAt)> {
        let mut seats = self.seats_of(account);
        seats.sort_by_key(|s| !s.live);
        seats
            .into_iter()
            .filter(|s| !self.is_dormant(&s.game_id))
            .filter_map(|s| self.game(&s.game_id).map(|h| (h, s)))
            .collect()
    }

    /// `account`'s seat in game `game_id`, if it holds one there.
    pub fn seat_in(&self, account: AccountId, game_id: GameId) -> Option<(GameHandle, Seat)> {
        let at = self
            .seats_of(account)
            .into_iter()
            .find(|s| s.game_id == game_id)?;
        self.game(&game_id).map(|h| (h, at.seat))
    }

    /// Whether `account` sits in any game.
    pub fn is_seated(&self, account: AccountId) -> bool {
        self.seated.contains(account) || !self.peers.seats_of(account).is_empty()
    }

    // --- users ---

    /// Mark a user online on this connection; returns the connection it replaces.
    pub fn set_online(&self, account: AccountId, user: OnlineUser) -> Option<OnlineUser> {
        self.by_name.insert(user.name.to_lowercase(), account);
        self.unfollow(account, |conn| conn != user.conn_id);
        self.peers.user_online(account, &user.name, user.conn_id);
        self.online.insert(account, user)
    }

    /// Waits (`TOLD_WAIT` at most: the others may be out of reach) until the other nodes
    /// can hear what this one has told them so far: a user just marked online is found by
    /// name from any node.
    pub async fn told_peers(&self) {
        let _ = tokio::time::timeout(TOLD_WAIT, self.peers.told()).await;
    }

    /// Mark a user offline, unless a newer connection has taken over.
    pub fn set_offline(&self, account: AccountId, conn_id: u64) {
        self.unfollow(account, |conn| conn == conn_id);
        let removed = self.online.remove_if(&account, |_, u| u.conn_id == conn_id);
        if let Some((_, user)) = removed {
            self.peers.user_offline(account, conn_id);
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

    /// The user online as `name`, on this node or (in a cluster) any other: their account,
    /// connection and name as signed up.
    pub async fn find_online(&self, name: &str) -> Option<(AccountId, ConnId, String)> {
        if let Some((account, user)) = self.online_by_name(name) {
            return Some((account, user.conn_id, user.name));
        }
        self.peers.find_online(name).await
    }

    /// The peers' gauges for `/metrics` (none on a single node).
    /// How many games sleep: this node's on a single node, the cluster's (as this node has
    /// heard) in a cluster.
    pub fn asleep_count(&self) -> usize {
        self.peers.asleep_count()
    }

    /// Bumped each time another node is heard to run a game (`Peers::games_opened`).
    pub fn games_opened(&self) -> tokio::sync::watch::Receiver<u64> {
        self.peers.games_opened()
    }

    pub fn cluster_metrics(&self) -> String {
        self.peers.render_metrics()
    }

    /// Whether this node hears the other nodes (always, on a single node).
    pub fn reaches_cluster(&self) -> bool {
        self.peers.reaches_peers()
    }

    /// How long since this node last heard the other nodes, while it does not.
    pub fn cut_off_for(&self) -> Option<std::time::Duration> {
        self.peers.cut_off_for()
    }

    /// Users online on this node (`cluster_online_count`: on every node).
    pub fn online_count(&self) -> usize {
        self.online.len()
    }

    /// Users online in the whole cluster, as the nodes last said (this node's alone
    /// outside cluster mode).
    pub fn cluster_online_count(&self) -> usize {
        self.online.len() + self.peers.remote_online()
    }

    /// Accounts that must not be pruned: online, seated, or players of a finished game
    /// still remembered (whose record may not be stored yet).
    pub fn active_accounts(&self) -> HashSet<AccountId> {
        let mut active: HashSet<AccountId> = self.online.iter().map(|e| *e.key()).collect();
        active.extend(self.seated.accounts());
        active.extend(self.peers.asleep_accounts());
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

impl Here for Registry {
    fn owed_of(&self, game: &GameId) -> Option<OwedNow> {
        Registry::owed_of(self, game)
    }

    fn follower_here(&self, account: AccountId) -> Option<ConnId> {
        Registry::follower_here(self, account)
    }

    fn follow_here(&self, game: GameId, account: AccountId, conn: ConnId, tell_owed: bool) {
        Registry::follow_here(self, game, account, conn, tell_owed);
    }

    fn online_here(&self) -> usize {
        self.online_count()
    }
}

#[cfg(test)]
mod tests;
