//! The rating system of `RULES.md` (the FAQ's ranking): a completed game moves ratings by
//! `A = 1 / (e^D + 1)`, where `D` is the winner's rating minus the loser's before the game.
//!
//! Pure arithmetic on `f64`: no storage, no knowledge of why a game ended. Ratings are expected to be
//! finite; a drawn or aborted game simply never calls in here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A new player's rating.
pub const INITIAL_RATING: f64 = 1.0;

/// No loser falls below this.
pub const RATING_FLOOR: f64 = 1.0;

/// The adjustment `A = 1 / (e^diff + 1)`, strictly between 0 and 1 for finite `diff`.
///
/// Computed so that huge `|diff|` neither overflows into NaN nor loses the small tail: for positive
/// `diff` it uses the equal form `e^-diff / (1 + e^-diff)`, whose exponential cannot overflow.
pub fn expected_gain(diff: f64) -> f64 {
    if diff > 0.0 {
        let t = (-diff).exp();
        t / (1.0 + t)
    } else {
        1.0 / (diff.exp() + 1.0)
    }
}

/// One player's rating around a game.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RatingChange {
    pub before: f64,
    pub after: f64,
}

impl RatingChange {
    /// `after - before`: positive for the winner, negative or zero for the loser.
    pub fn delta(&self) -> f64 {
        self.after - self.before
    }
}

/// Rates a completed game: the winner gains `A`, the loser loses `A` but is floored at
/// [`RATING_FLOOR`]. Returns `(winner, loser)`.
pub fn rate_win(winner_before: f64, loser_before: f64) -> (RatingChange, RatingChange) {
    let gain = expected_gain(winner_before - loser_before);
    let winner = RatingChange {
        before: winner_before,
        after: winner_before + gain,
    };
    let loser = RatingChange {
        before: loser_before,
        after: (loser_before - gain).max(RATING_FLOOR),
    };
    (winner, loser)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_players_move_by_a_half() {
        assert_eq!(expected_gain(0.0), 0.5);
    }

    #[test]
    fn new_players_start_on_the_floor() {
        assert_eq!(INITIAL_RATING, RATING_FLOOR);
        let (winner, loser) = rate_win(INITIAL_RATING, INITIAL_RATING);
        assert_eq!(winner.after, 1.5);
        assert_eq!(loser.after, RATING_FLOOR);
        assert_eq!(winner.delta(), 0.5);
        assert_eq!(loser.delta(), 0.0);
    }

    #[test]
    fn both_branches_agree_near_zero() {
        for diff in [-1e-9, -1e-300, 0.0, 1e-300, 1e-9] {
            assert!((expected_gain(diff) - 0.5).abs() < 1e-9, "diff {diff}");
        }
    }
}
