//! The other nodes, as the registry knows them: chosen once at start. A single node is a
//! cluster of one, whose peers are nobody (`Alone`: the defaults below) and who keeps the
//! sleeping games itself; a cluster's node has the directory's mirror of the others
//! (`bus::redis::Directory`, through `RedisBus`). The registry asks the same questions
//! either way and tells the same news: where a game runs, who sits where, who is online,
//! which games sleep. The other way, the peers answer the others from this node's own
//! state (`Here`, which the registry is).
//!
//! Below the registry and beside the bus: it knows seats and summaries, not games or
//! connections' sockets.

mod seats;
mod sleepers;

pub use seats::{is_live, SeatAt, SeatMap};
pub use sleepers::{Asleep, Sleepers};

use std::time::Duration;

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::msg::{ConnId, OwedNow};
use crate::record::AccountId;

/// What this node knows of its own games and players, as the peers answer other nodes
/// from it: the registry.
pub trait Here: Send + Sync + std::fmt::Debug {
    /// What this node's game `game` waits for now.
    fn owed_of(&self, game: &GameId) -> Option<OwedNow>;

    /// `account`'s connection here that follows its moves (it asked `my_games`).
    fn follower_here(&self, account: AccountId) -> Option<ConnId>;

    /// `account`, seated in this node's game `game`, follows its moves on another node's
    /// connection `conn`, and is told there what its seat owes now if `tell_owed`.
    fn follow_here(&self, game: GameId, account: AccountId, conn: ConnId, tell_owed: bool);

    /// Users online on this node.
    fn online_here(&self) -> usize;
}

pub trait Peers: Send + Sync + std::fmt::Debug {
    // --- this node's news, for the others ---

    /// This node runs game `game` now.
    fn game_opened(&self, _game: GameId, _seats: SeatPair<AccountId>, _summary: LiveGame) {}

    /// A game of this node's: how the listings show it now.
    fn summary_changed(&self, _summary: LiveGame) {}

    /// A game of this node's has ended.
    fn game_ended(&self, _game: GameId) {}

    /// A game of this node's runs elsewhere now (its lease moved).
    fn game_moved(&self, _game: GameId) {}

    fn user_online(&self, _account: AccountId, _name: &str, _conn: ConnId) {}

    fn user_offline(&self, _account: AccountId, _conn: ConnId) {}

    /// Resolves once the others can hear what this node has told them so far (a user
    /// online: another node looking them up by name finds them).
    fn told(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }

    // --- what the others run and who sits there ---

    /// The node that runs `game`, if another one does.
    fn node_of(&self, _game: GameId) -> Option<u16> {
        None
    }

    /// `account`'s seats in the other nodes' games and in the sleeping ones the peers keep.
    fn seats_of(&self, _account: AccountId) -> Vec<SeatAt> {
        Vec::new()
    }

    /// Bumped each time another node is heard to run a game (it opened, or moved, there):
    /// a node that lost a wake waits on it for the winner (`game/hibernate.rs`). A single
    /// node hears of none: its sender is gone.
    fn games_opened(&self) -> watch::Receiver<u64> {
        watch::channel(0).1
    }

    /// The other nodes' games, as the listings show them.
    fn remote_games(&self) -> Vec<LiveGame> {
        Vec::new()
    }

    /// Users online on the other nodes.
    fn remote_online(&self) -> usize {
        0
    }

    /// Whether connection `conn` is this node's.
    fn is_local(&self, _conn: ConnId) -> bool {
        true
    }

    /// What another node's game `game` waits for, and how the listings show it, as that
    /// node answers; `follower`, `account`'s connection here that asked `my_games`, is
    /// pushed `your_move` from there from now on.
    fn owed_elsewhere(
        &self,
        _game: GameId,
        _account: AccountId,
        _follower: Option<ConnId>,
    ) -> BoxFuture<'_, Option<(LiveGame, OwedNow)>> {
        Box::pin(std::future::ready(None))
    }

    /// The user online as `name` on another node: their account, connection and name.
    fn find_online<'a>(
        &'a self,
        _name: &'a str,
    ) -> BoxFuture<'a, Option<(AccountId, ConnId, String)>> {
        Box::pin(std::future::ready(None))
    }

    // --- sleeping games: the peers keep them (`sleepers.rs`), and any node wakes one ---

    /// A game of this node's goes to sleep, listed as `summary`.
    fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>);

    /// A sleeping game read from storage at startup.
    fn load_dormant(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>);

    /// Whether `game` sleeps, as far as the peers know.
    fn dormant(&self, game: GameId) -> Option<Asleep>;

    /// The sleeping games, as the listings show them.
    fn dormant_games(&self) -> Vec<LiveGame>;

    /// A wake found `game` awake nowhere and asleep no more: forgotten, unless it went to
    /// sleep again since it was known by `number`.
    fn forget_dormant(&self, game: GameId, number: u64);

    /// The number the next sleeping game gets (taken before reading the sleeping games
    /// from storage, for `sleepers_read`).
    fn dormant_mark(&self) -> u64;

    /// The sleeping games as storage lists them (read after `mark`): those missed going
    /// to sleep taken in, those missed waking dropped.
    fn sleepers_read(&self, rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>, mark: u64);

    /// The accounts seated in sleeping games.
    fn asleep_accounts(&self) -> Vec<AccountId>;

    /// How many games sleep, as far as the peers know (in a cluster, the cluster's).
    fn asleep_count(&self) -> usize;

    /// Whether this node is the only one: nobody else puts games to sleep or wakes them,
    /// and nothing said by another node can be missed.
    fn alone(&self) -> bool {
        false
    }

    /// How often this node has rejoined the others (`None`: there are none to rejoin).
    fn rejoins(&self) -> Option<u64> {
        None
    }

    // --- health ---

    /// The peers' gauges for `/metrics`.
    fn render_metrics(&self) -> String {
        String::new()
    }

    /// Whether this node hears the others.
    fn reaches_peers(&self) -> bool {
        true
    }

    /// How long since this node last heard the others, while it does not.
    fn cut_off_for(&self) -> Option<Duration> {
        None
    }
}

/// A single node's peers: nobody, and the sleeping games, which only this node wakes.
#[derive(Debug, Default)]
pub struct Alone {
    sleepers: Sleepers,
}

impl Peers for Alone {
    /// A woken game sleeps no more.
    fn game_opened(&self, game: GameId, _seats: SeatPair<AccountId>, _summary: LiveGame) {
        self.sleepers.remove(game);
    }

    fn seats_of(&self, account: AccountId) -> Vec<SeatAt> {
        self.sleepers.seats_of(account)
    }

    fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.sleepers.put(game, seats, summary);
    }

    fn load_dormant(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.sleepers.put(game, seats, summary);
    }

    fn dormant(&self, game: GameId) -> Option<Asleep> {
        self.sleepers.get(game)
    }

    fn dormant_games(&self) -> Vec<LiveGame> {
        self.sleepers.summaries()
    }

    fn forget_dormant(&self, game: GameId, number: u64) {
        self.sleepers.forget(game, number);
    }

    fn dormant_mark(&self) -> u64 {
        self.sleepers.mark()
    }

    fn sleepers_read(&self, rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>, mark: u64) {
        self.sleepers.read(rows, mark, |_| false);
    }

    fn asleep_accounts(&self) -> Vec<AccountId> {
        self.sleepers.accounts()
    }

    fn asleep_count(&self) -> usize {
        self.sleepers.len()
    }

    fn alone(&self) -> bool {
        true
    }
}
