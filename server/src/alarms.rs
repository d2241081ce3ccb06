//! Cluster mode: a game whose lease this node has lost stops at once. The lease loop
//! (`cluster/lease.rs`) finds the loss (a renewal that no longer matches the row, or no renewal
//! before the lease's expiry) and sounds the game's alarm; the game's actor waits on it
//! beside its commands and timers and stops as if its log had refused a step (`moved`).
//! Without the alarm the game would stop only at its next step, which a quiet game may
//! not take for minutes, its players stuck on a node that no longer runs it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use elementals_protocol::messages::GameId;
use tokio_util::sync::CancellationToken;

/// The alarms of the node's running games.
#[derive(Debug, Default)]
pub struct LeaseAlarms {
    /// Each running game's alarm, with the number it was armed under: a game stopped and
    /// then claimed back by this node has a new alarm, which the old one's drop leaves.
    games: Mutex<HashMap<GameId, (u64, CancellationToken)>>,
    armed: AtomicU64,
}

impl LeaseAlarms {
    fn games(&self) -> MutexGuard<'_, HashMap<GameId, (u64, CancellationToken)>> {
        self.games.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The alarm of a game starting on this node, until the returned guard drops.
    pub fn arm(self: &Arc<Self>, game_id: GameId) -> Alarm {
        let number = self.armed.fetch_add(1, Relaxed);
        let token = CancellationToken::new();
        self.games().insert(game_id, (number, token.clone()));
        Alarm {
            token,
            owner: Some((Arc::clone(self), game_id, number)),
        }
    }

    /// The node lost these games' leases: they stop. Returns how many were running.
    pub fn sound(&self, lost: &[GameId]) -> usize {
        let games = self.games();
        lost.iter()
            .filter_map(|game_id| games.get(game_id))
            .map(|(_, token)| token.cancel())
            .count()
    }

    /// The node's leases have lapsed unrenewed: every game running here stops.
    pub fn sound_all(&self) -> usize {
        let games = self.games();
        games.values().for_each(|(_, token)| token.cancel());
        games.len()
    }
}

/// What a game's actor waits on: sounded when this node loses the game's lease.
#[derive(Debug)]
pub struct Alarm {
    token: CancellationToken,
    owner: Option<(Arc<LeaseAlarms>, GameId, u64)>,
}

impl Alarm {
    /// The alarm of a game that holds no lease (outside cluster mode): never sounded.
    pub fn never() -> Alarm {
        Alarm {
            token: CancellationToken::new(),
            owner: None,
        }
    }

    /// Waits until the alarm sounds.
    pub fn sounded(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        if let Some((alarms, game_id, number)) = self.owner.take() {
            let mut games = alarms.games();
            if games.get(&game_id).is_some_and(|(n, _)| *n == number) {
                games.remove(&game_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game() -> GameId {
        GameId(uuid::Uuid::new_v4())
    }

    #[test]
    fn only_the_lost_games_alarms_sound_and_a_dropped_alarm_is_forgotten() {
        let alarms = Arc::new(LeaseAlarms::default());
        let (a, b) = (game(), game());
        let alarm_a = alarms.arm(a);
        let alarm_b = alarms.arm(b);
        assert_eq!(alarms.sound(&[a, game()]), 1);
        assert!(alarm_a.token.is_cancelled());
        assert!(!alarm_b.token.is_cancelled());
        drop(alarm_a);
        assert_eq!(alarms.sound(&[a]), 0);
        assert_eq!(alarms.sound_all(), 1);
        assert!(alarm_b.token.is_cancelled());
    }

    #[test]
    fn a_stopped_games_old_alarm_leaves_the_alarm_of_its_next_run_here() {
        let alarms = Arc::new(LeaseAlarms::default());
        let id = game();
        let old = alarms.arm(id);
        let new = alarms.arm(id);
        drop(old);
        assert_eq!(alarms.sound(&[id]), 1);
        assert!(new.token.is_cancelled());
        assert!(!Alarm::never().token.is_cancelled());
    }
}
