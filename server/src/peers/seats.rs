//! Every account's seats: a player sits in up to `MAX_CORRESPONDENCE_GAMES` unfinished
//! correspondence games plus at most one live game (the lobby keeps those limits,
//! `lobby/actor.rs`, `ready_for_new_game`), so an account holds a small set of seats.

use dashmap::DashMap;
use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use elementals_protocol::rules::Seat;

use crate::record::AccountId;

/// One of an account's seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatAt {
    pub game_id: GameId,
    pub seat: Seat,
    /// A live game (a bank clock: blitz, rapid, live or custom), not a correspondence one.
    pub live: bool,
}

/// Whether a game summarised as `summary` is live. A sleeping game known without its
/// summary (slept before summaries were kept) counts as correspondence: only those sleep
/// in practice, a live game always having a deadline within minutes.
pub fn is_live(summary: Option<&LiveGame>) -> bool {
    summary.is_some_and(|s| !s.time_control.is_correspondence())
}

/// Accounts to their seats, in the order they sat down.
#[derive(Debug, Default)]
pub struct SeatMap(DashMap<AccountId, Vec<SeatAt>>);

impl SeatMap {
    /// Both players of game `game_id` sit down (again: a seat already held is replaced).
    pub fn sit(&self, game_id: GameId, seats: SeatPair<AccountId>, live: bool) {
        for (account, seat) in [(seats.one, Seat::One), (seats.two, Seat::Two)] {
            let mut held = self.0.entry(account).or_default();
            let at = SeatAt {
                game_id,
                seat,
                live,
            };
            match held.iter_mut().find(|s| s.game_id == game_id) {
                Some(s) => *s = at,
                None => held.push(at),
            }
        }
    }

    /// `accounts` leave game `game_id`.
    pub fn leave(&self, game_id: GameId, accounts: [AccountId; 2]) {
        for account in accounts {
            if let Some(mut held) = self.0.get_mut(&account) {
                held.retain(|s| s.game_id != game_id);
            }
            self.0.remove_if(&account, |_, held| held.is_empty());
        }
    }

    /// `account`'s seats.
    pub fn of(&self, account: AccountId) -> Vec<SeatAt> {
        self.0.get(&account).map(|s| s.clone()).unwrap_or_default()
    }

    pub fn contains(&self, account: AccountId) -> bool {
        self.0.contains_key(&account)
    }

    pub fn accounts(&self) -> Vec<AccountId> {
        self.0.iter().map(|e| *e.key()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_holds_several_seats_and_leaves_each_alone() {
        let map = SeatMap::default();
        let (a, b) = (
            GameId::new_random_from([1; 16]),
            GameId::new_random_from([2; 16]),
        );
        map.sit(a, SeatPair::new(1, 2), true);
        map.sit(b, SeatPair::new(3, 1), false);
        let of_1: Vec<(GameId, Seat, bool)> = map
            .of(1)
            .iter()
            .map(|s| (s.game_id, s.seat, s.live))
            .collect();
        assert_eq!(of_1, vec![(a, Seat::One, true), (b, Seat::Two, false)]);
        map.leave(a, [1, 2]);
        assert_eq!(map.of(1).len(), 1);
        assert!(!map.contains(2));
        map.leave(b, [3, 1]);
        assert!(!map.contains(1) && !map.contains(3));
    }
}
