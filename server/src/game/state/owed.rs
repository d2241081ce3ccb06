//! What the game waits for, seat by seat, and by when: what `my_games` shows a player.

use elementals_protocol::messages::{Owed, OwedAction, Phase};
use elementals_protocol::rules::Seat;

use super::GameState;
use crate::msg::OwedNow;

impl GameState {
    /// The actions outstanding now, seat one first, each with its deadline in Unix
    /// milliseconds (none while the clocks are held or the log is stalled).
    pub fn owed(&self) -> OwedNow {
        let action = match self.phase {
            Phase::Commit => Some(OwedAction::Commit),
            Phase::Reveal => Some(OwedAction::Reveal),
            Phase::Over => None,
        };
        let held = self.hold.is_some() || self.stalled;
        let owed = Seat::BOTH
            .into_iter()
            .filter_map(|seat| {
                let action = action?;
                let acted = match action {
                    OwedAction::Commit => self.commits.get(seat).is_some(),
                    OwedAction::Reveal => self.reveals.get(seat).is_some(),
                };
                if acted {
                    return None;
                }
                let due = if held {
                    None
                } else {
                    self.first_commit_deadline()
                        .or_else(|| self.seat_deadline(seat))
                };
                Some(Owed {
                    seat,
                    action,
                    deadline: due.map(|at| self.wall_ms(at)),
                })
            })
            .collect();
        OwedNow {
            round: self.round,
            phase: self.phase,
            owed,
        }
    }
}
