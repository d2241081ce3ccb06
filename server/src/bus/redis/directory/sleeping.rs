//! The cluster's sleeping games in the mirror (`game/hibernate.rs`): no node runs them,
//! every node knows them (from `Slept` messages, and from storage at startup and after a
//! rejoin), so that a command for one on any node wakes it there, its players stay
//! seated, and every node lists it.

use std::sync::atomic::Ordering;

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};

use super::{lock, ClusterMsg, Directory};
use crate::peers::Asleep;
use crate::record::AccountId;

impl Directory {
    /// This node's game `game` goes to sleep: it leaves the hash, and every node (this one
    /// too) takes it for a sleeping game, which a command on any node wakes there.
    pub fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.put_dormant(game, seats, summary.clone());
        self.own.remove(&game);
        lock(&self.dirty).remove(&game);
        self.link.hdel_game(game);
        self.link.cluster(&ClusterMsg::Slept {
            game,
            seats,
            node: self.node,
            summary,
        });
    }

    /// A sleeping game read from storage at startup, unless a node runs it already (it woke
    /// while this node was starting).
    pub fn load_dormant(
        &self,
        game: GameId,
        seats: SeatPair<AccountId>,
        summary: Option<LiveGame>,
    ) {
        if !self.remote.contains_key(&game) {
            self.put_dormant(game, seats, summary);
        }
    }

    /// Whether `game` sleeps, as far as this node has heard; with its number here.
    pub fn dormant(&self, game: GameId) -> Option<Asleep> {
        self.sleepers.get(game)
    }

    /// The sleeping games' summaries, as the listings show them.
    pub fn dormant_games(&self) -> Vec<LiveGame> {
        self.sleepers.summaries()
    }

    /// A waking of `game` found it awake nowhere and asleep no more (it ended, or a
    /// message was lost): forgotten, unless it went to sleep again since (`number`).
    pub fn forget_dormant(&self, game: GameId, number: u64) {
        self.sleepers.forget(game, number);
    }

    /// How often the node has rejoined Redis.
    pub fn rejoins(&self) -> u64 {
        self.rejoins.load(Ordering::SeqCst)
    }

    /// The number the next sleeping game heard of gets: taken before reading them from
    /// storage, for `sleepers_read`.
    pub fn dormant_mark(&self) -> u64 {
        self.sleepers.mark()
    }

    /// The sleeping games as storage lists them (read after `mark` was taken), once the
    /// node has rejoined Redis: those it missed going to sleep are taken in, and those it
    /// missed waking (heard of before `mark`, no longer listed) are dropped.
    pub fn sleepers_read(
        &self,
        rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>,
        mark: u64,
    ) {
        self.sleepers.read(rows, mark, |game| {
            self.own.contains_key(&game) || self.remote.contains_key(&game)
        });
    }

    /// The accounts seated in sleeping games.
    /// The cluster's sleeping games, as this node has heard.
    pub fn asleep_count(&self) -> usize {
        self.sleepers.len()
    }

    pub fn asleep_accounts(&self) -> Vec<AccountId> {
        self.sleepers.accounts()
    }

    pub(super) fn put_dormant(
        &self,
        game: GameId,
        seats: SeatPair<AccountId>,
        summary: Option<LiveGame>,
    ) {
        self.drop_remote(game);
        self.sleepers.put(game, seats, summary);
    }

    pub(super) fn drop_dormant(&self, game: GameId) {
        self.sleepers.remove(game);
    }
}
