//! The cluster's sleeping games in the mirror (`game/hibernate.rs`): no node runs them,
//! every node knows them (from `Slept` messages, and from storage at startup and after a
//! rejoin), so that a command for one on any node wakes it there and its players stay
//! seated.

use super::*;

impl Directory {
    /// This node's game `game` goes to sleep: it leaves the hash, and every node (this one
    /// too) takes it for a sleeping game, which a command on any node wakes there.
    pub fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>) {
        self.put_dormant(game, seats);
        self.own.remove(&game);
        lock(&self.dirty).remove(&game);
        self.link.hdel_game(game);
        self.link.cluster(&ClusterMsg::Slept {
            game,
            seats,
            node: self.node,
        });
    }

    /// A sleeping game read from storage at startup, unless a node runs it already (it woke
    /// while this node was starting).
    pub fn load_dormant(&self, game: GameId, seats: SeatPair<AccountId>) {
        if !self.remote.contains_key(&game) {
            self.put_dormant(game, seats);
        }
    }

    /// Whether `game` sleeps, as far as this node has heard; with its number here.
    pub fn dormant(&self, game: GameId) -> Option<(SeatPair<AccountId>, u64)> {
        self.dormant.get(&game).map(|e| *e)
    }

    /// A waking of `game` found it awake nowhere and asleep no more (it ended, or a
    /// message was lost): forgotten, unless it went to sleep again since (`number`).
    pub fn forget_dormant(&self, game: GameId, number: u64) {
        if self.dormant.get(&game).is_some_and(|e| e.1 == number) {
            self.drop_dormant(game);
        }
    }

    /// How often the node has rejoined Redis.
    pub fn rejoins(&self) -> u64 {
        self.rejoins.load(Ordering::SeqCst)
    }

    /// The number the next sleeping game heard of gets: taken before reading them from
    /// storage, for `sleepers_read`.
    pub fn dormant_mark(&self) -> u64 {
        self.dormant_seq.load(Ordering::SeqCst)
    }

    /// The sleeping games as storage lists them (read after `mark` was taken), once the
    /// node has rejoined Redis: those it missed going to sleep are taken in, and those it
    /// missed waking (heard of before `mark`, no longer listed) are dropped.
    pub fn sleepers_read(&self, rows: &[(GameId, SeatPair<AccountId>)], mark: u64) {
        let listed: std::collections::HashSet<GameId> = rows.iter().map(|r| r.0).collect();
        let gone: Vec<GameId> = self
            .dormant
            .iter()
            .filter(|e| e.value().1 < mark && !listed.contains(e.key()))
            .map(|e| *e.key())
            .collect();
        for game in gone {
            self.drop_dormant(game);
        }
        for (game, seats) in rows {
            if !self.dormant.contains_key(game) && !self.own.contains_key(game) {
                self.load_dormant(*game, *seats);
            }
        }
    }

    pub(super) fn put_dormant(&self, game: GameId, seats: SeatPair<AccountId>) {
        self.drop_remote(game);
        self.seats.insert(seats.one, (game, Seat::One));
        self.seats.insert(seats.two, (game, Seat::Two));
        let number = self.dormant_seq.fetch_add(1, Ordering::Relaxed);
        self.dormant.insert(game, (seats, number));
    }

    pub(super) fn drop_dormant(&self, game: GameId) {
        if let Some((_, (seats, _))) = self.dormant.remove(&game) {
            for account in [seats.one, seats.two] {
                self.seats.remove_if(&account, |_, (g, _)| *g == game);
            }
        }
    }
}
