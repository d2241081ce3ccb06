//! Hibernated games (`game/hibernate.rs`): a small entry each, so that a command finds
//! the game (and wakes it through the bus), its players stay seated, and concurrent wakes
//! of one game make one actor. Invariant: a game is live here (`games`) or dormant, never
//! both for longer than the step that moves it from one to the other.

use std::time::Duration;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::Seat;
use tokio::sync::watch;

use super::Registry;
use crate::bus::GameInbox;
use crate::record::AccountId;

/// How long `my_games` waits for a player's game to wake before answering without it.
const WAKE_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(super) struct Dormant {
    seats: SeatPair<AccountId>,
    /// Set while it is being woken: turns true once it runs (or could not be woken).
    waking: Option<watch::Receiver<bool>>,
}

impl Registry {
    /// A hibernated game (at startup, from its wake-up row): its players are seated.
    pub fn insert_dormant(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        self.seated.insert(seats.one, (game_id, Seat::One));
        self.seated.insert(seats.two, (game_id, Seat::Two));
        self.dormant.insert(
            game_id,
            Dormant {
                seats,
                waking: None,
            },
        );
    }

    /// A live game goes to sleep: dormant first, then out of the live games, so that a
    /// look-up in between finds it one way or the other. Its actor closes its inbox next.
    pub fn go_dormant(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        self.insert_dormant(game_id, seats);
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        if let Some(cluster) = &self.cluster {
            cluster.game_moved(game_id);
        }
    }

    /// Claims the waking of a sleeping game: its inbox is opened at once (under the
    /// entry's lock, so a second waker finds it open), and the sender that says when it
    /// runs is returned. `None` if it does not sleep or is already being woken.
    pub fn begin_wake(&self, game_id: GameId) -> Option<(GameInbox, watch::Sender<bool>)> {
        let mut entry = self.dormant.get_mut(&game_id)?;
        if entry.waking.is_some() {
            return None;
        }
        let (done, waking) = watch::channel(false);
        let inbox = self.bus.open_game(game_id);
        entry.waking = Some(waking);
        Some((inbox, done))
    }

    /// Whether the game sleeps or is being woken.
    pub fn is_dormant(&self, game_id: &GameId) -> bool {
        self.dormant.contains_key(game_id)
    }

    /// The woken game runs (it is in `games` already).
    pub fn woke(&self, game_id: GameId) {
        self.dormant.remove(&game_id);
    }

    /// The game could not be woken: it sleeps on (a later command or sweep tries again),
    /// or, `gone`, it is forgotten with its seats.
    pub fn wake_failed(&self, game_id: GameId, gone: bool) {
        if gone {
            if let Some((_, dormant)) = self.dormant.remove(&game_id) {
                for account in [dormant.seats.one, dormant.seats.two] {
                    self.seated.remove_if(&account, |_, (g, _)| *g == game_id);
                }
            }
        } else if let Some(mut entry) = self.dormant.get_mut(&game_id) {
            entry.waking = None;
        }
    }

    pub fn dormant_count(&self) -> usize {
        self.dormant.len()
    }

    /// Wakes the game `account` sits in if it sleeps, and waits (a few seconds at most)
    /// until it runs: `my_games` lists what a running game says it waits for.
    pub async fn wake_seated(&self, account: AccountId) {
        let Some(game_id) = self.seated.get(&account).map(|e| e.0) else {
            return;
        };
        if !self.is_dormant(&game_id) || !self.bus.wake(game_id) {
            return;
        }
        let waking = self.dormant.get(&game_id).and_then(|e| e.waking.clone());
        if let Some(mut waking) = waking {
            let _ = tokio::time::timeout(WAKE_WAIT, waking.wait_for(|done| *done)).await;
        }
    }
}
