//! The sleeping games (`game/hibernate.rs`), as the peers keep them (`peers.rs`): on a
//! single node `Alone`'s, in a cluster the directory's mirror, which every node keeps from
//! the others' word. No node runs a sleeping game; a command for one wakes it where it
//! lands, and its players stay seated meanwhile.

use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, SeatPair};

use super::{is_live, SeatAt, SeatMap};
use crate::record::AccountId;

/// A sleeping game's seats, and the number the peers know it by while it sleeps.
pub type Asleep = (SeatPair<AccountId>, u64);

/// A sleeping game.
#[derive(Debug)]
struct Sleeper {
    seats: SeatPair<AccountId>,
    /// The number it was put here under (`forget`).
    number: u64,
    /// How the listings show it, as it went to sleep (`None`: a row without one).
    summary: Option<LiveGame>,
}

#[derive(Debug, Default)]
pub struct Sleepers {
    games: DashMap<GameId, Sleeper>,
    seats: SeatMap,
    /// The number the next one gets.
    next: AtomicU64,
}

impl Sleepers {
    /// Game `game` sleeps (again: its entry is replaced, under a new number).
    pub fn put(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.seats.sit(game, seats, is_live(summary.as_ref()));
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let sleeper = Sleeper {
            seats,
            number,
            summary,
        };
        self.games.insert(game, sleeper);
    }

    /// Game `game` sleeps no more (it runs, or is gone).
    pub fn remove(&self, game: GameId) {
        if let Some((_, sleeper)) = self.games.remove(&game) {
            self.seats
                .leave(game, [sleeper.seats.one, sleeper.seats.two]);
        }
    }

    /// `remove`, unless it went to sleep again since it was known by `number`.
    pub fn forget(&self, game: GameId, number: u64) {
        if self.games.get(&game).is_some_and(|e| e.number == number) {
            self.remove(game);
        }
    }

    pub fn get(&self, game: GameId) -> Option<Asleep> {
        self.games.get(&game).map(|e| (e.seats, e.number))
    }

    pub fn contains(&self, game: GameId) -> bool {
        self.games.contains_key(&game)
    }

    pub fn len(&self) -> usize {
        self.games.len()
    }

    pub fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    /// Their summaries, as the listings show them.
    pub fn summaries(&self) -> Vec<LiveGame> {
        self.games
            .iter()
            .filter_map(|e| e.summary.clone())
            .collect()
    }

    /// `account`'s seats in sleeping games.
    pub fn seats_of(&self, account: AccountId) -> Vec<SeatAt> {
        self.seats.of(account)
    }

    /// The accounts seated in sleeping games.
    pub fn accounts(&self) -> Vec<AccountId> {
        self.seats.accounts()
    }

    /// The number the next one gets: taken before reading them from storage, for `read`.
    pub fn mark(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }

    /// The sleeping games as storage lists them (read after `mark` was taken): those missed
    /// going to sleep are taken in, unless `running` (known to run), and those missed waking
    /// (known before `mark`, no longer listed) are dropped.
    pub fn read(
        &self,
        rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>,
        mark: u64,
        running: impl Fn(GameId) -> bool,
    ) {
        let listed: std::collections::HashSet<GameId> = rows.iter().map(|r| r.0).collect();
        let gone: Vec<GameId> = self
            .games
            .iter()
            .filter(|e| e.value().number < mark && !listed.contains(e.key()))
            .map(|e| *e.key())
            .collect();
        for game in gone {
            self.remove(game);
        }
        for (game, seats, summary) in rows {
            if !self.contains(game) && !running(game) {
                self.put(game, seats, summary);
            }
        }
    }
}
