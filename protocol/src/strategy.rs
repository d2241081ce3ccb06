//! How a bot picks an element each round.
//!
//! A [`Strategy`] sees a [`GameView`] (the variant, its seat, the board, the rounds so far)
//! and names an element. Because both players pick at once, a strategy that always
//! answers the same way to the same board can be read and beaten: the board-reading
//! strategies here are mixed strategies that draw from a distribution.
//!
//! All of them value a board the same way (see [`square_value`]): the *progress* of an
//! element is how far it stands towards the edge that wins for the player (`+position`
//! for player one, `-position` for player two), and a square is worth more the closer it
//! is to an edge, doubling each step, with an edge itself worth more than every other
//! square on the board together.
//!
//! - [`Random`]: uniform over the elements; the baseline.
//! - [`Greedy`]: assumes the opponent picks uniformly and prefers picks whose expected
//!   change in value is highest. A pick that could push an element near my edge home
//!   counts for a lot (in proportion to how many opponent picks it beats), and so does the
//!   risk it takes: each element that beats it may be pushed towards the opponent's edge.
//!   It draws from a softmax of those expectations, so it is usually, not always, greedy.
//! - [`Minimax`]: plays the one-round game properly: it computes the same change in value
//!   for every pair of picks and plays (an approximation of) the equilibrium mixed
//!   strategy of that matrix game, which no opponent can exploit within one round.
//! - [`Sequence`]: replays fixed picks; for tests and demonstrations.

use crate::messages::RoundRecord;
use crate::rules::outcome;
use crate::{Element, Seat, Variant};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub mod minimax;

/// What a strategy may look at.
#[derive(Debug, Clone, Copy)]
pub struct GameView<'a> {
    pub variant: Variant,
    /// The seat the strategy plays for.
    pub seat: Seat,
    /// The round being picked for.
    pub round: u32,
    /// Every element's position, index `element - 1`.
    pub positions: &'a [i16],
    /// Every round resolved so far, oldest first.
    pub history: &'a [RoundRecord],
}

impl GameView<'_> {
    /// How far `element` stands towards the edge that wins for this seat.
    pub fn progress(&self, element: Element) -> i16 {
        let position = self
            .positions
            .get(usize::from(element).wrapping_sub(1))
            .copied()
            .unwrap_or(0);
        match self.seat {
            Seat::One => position,
            Seat::Two => -position,
        }
    }

    /// The change in this seat's board value when it picks `mine` and the opponent picks
    /// `theirs`: the winning element moves one square, a tie moves nothing.
    pub fn delta(&self, mine: Element, theirs: Element) -> f64 {
        let (one, two) = match self.seat {
            Seat::One => (mine, theirs),
            Seat::Two => (theirs, mine),
        };
        let (moved, step) = match outcome(&self.variant, one, two) {
            None => return 0.0,
            Some(winner) if winner == self.seat => (mine, 1),
            Some(_) => (theirs, -1),
        };
        let progress = self.progress(moved);
        self.square_value(progress + step) - self.square_value(progress)
    }

    /// [`square_value`] in this view's variant.
    pub fn square_value(&self, progress: i16) -> f64 {
        square_value(progress, self.variant)
    }
}

/// What an element at `progress` squares towards my winning edge is worth to me: zero at
/// the centre, `±(2^|p| - 1)` on the track, and on an edge more than all the rest of the
/// board could be worth, so reaching an edge dominates every other consideration.
pub fn square_value(progress: i16, variant: Variant) -> f64 {
    let distance = i32::from(variant.distance);
    let p = i32::from(progress);
    let win = f64::from(variant.number) * 2f64.powi(distance);
    if p >= distance {
        win
    } else if p <= -distance {
        -win
    } else {
        f64::from(p.signum()) * (2f64.powi(p.abs()) - 1.0)
    }
}

/// Chooses an element each round.
pub trait Strategy: Send {
    /// An element of `view.variant` (`1..=number`) to play this round.
    fn pick(&mut self, view: &GameView<'_>) -> Element;
}

impl<S: Strategy + ?Sized> Strategy for Box<S> {
    fn pick(&mut self, view: &GameView<'_>) -> Element {
        (**self).pick(view)
    }
}

/// Draw an index with probability proportional to `weights` (uniform if they are all zero).
pub(crate) fn sample(rng: &mut StdRng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().filter(|w| w.is_finite() && **w > 0.0).sum();
    if total <= 0.0 {
        return rng.random_range(0..weights.len());
    }
    let mut left = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if w.is_finite() && *w > 0.0 {
            if left < *w {
                return i;
            }
            left -= w;
        }
    }
    weights.len() - 1
}

fn element_at(index: usize) -> Element {
    // Indexes come from `0..number`, and `number` is a u16.
    Element::try_from(index + 1).expect("element index fits u16")
}

/// Uniformly random picks.
pub struct Random {
    rng: StdRng,
}

impl Random {
    pub fn new() -> Random {
        Random {
            rng: StdRng::from_os_rng(),
        }
    }
    /// Reproducible picks, for tests.
    pub fn seeded(seed: u64) -> Random {
        Random {
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

impl Default for Random {
    fn default() -> Self {
        Random::new()
    }
}

impl Strategy for Random {
    fn pick(&mut self, view: &GameView<'_>) -> Element {
        self.rng.random_range(1..=view.variant.number)
    }
}

/// Softmax over each pick's expected change in value against a uniform opponent.
pub struct Greedy {
    rng: StdRng,
    /// How far from the best a pick may be and still be played: the best pick has weight
    /// 1 and the worst `e^(-1/temperature)`. Smaller is greedier.
    temperature: f64,
}

impl Greedy {
    pub const DEFAULT_TEMPERATURE: f64 = 0.25;

    pub fn new() -> Greedy {
        Greedy::with_rng(StdRng::from_os_rng())
    }
    pub fn seeded(seed: u64) -> Greedy {
        Greedy::with_rng(StdRng::seed_from_u64(seed))
    }
    fn with_rng(rng: StdRng) -> Greedy {
        Greedy {
            rng,
            temperature: Greedy::DEFAULT_TEMPERATURE,
        }
    }
    pub fn with_temperature(mut self, temperature: f64) -> Greedy {
        self.temperature = temperature.max(1e-6);
        self
    }

    /// Each pick's expected change in value if the opponent picks uniformly.
    pub fn expected_gains(view: &GameView<'_>) -> Vec<f64> {
        let n = f64::from(view.variant.number);
        view.variant
            .elements()
            .map(|mine| {
                let total: f64 = view
                    .variant
                    .elements()
                    .map(|theirs| view.delta(mine, theirs))
                    .sum();
                total / n
            })
            .collect()
    }

    /// The probability of each pick, index `element - 1`.
    pub fn weights(&self, view: &GameView<'_>) -> Vec<f64> {
        let gains = Greedy::expected_gains(view);
        let best = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let worst = gains.iter().copied().fold(f64::INFINITY, f64::min);
        let spread = best - worst;
        if spread <= f64::EPSILON {
            return vec![1.0 / gains.len() as f64; gains.len()];
        }
        let raw: Vec<f64> = gains
            .iter()
            .map(|g| ((g - best) / (spread * self.temperature)).exp())
            .collect();
        let total: f64 = raw.iter().sum();
        raw.into_iter().map(|w| w / total).collect()
    }
}

impl Default for Greedy {
    fn default() -> Self {
        Greedy::new()
    }
}

impl Strategy for Greedy {
    fn pick(&mut self, view: &GameView<'_>) -> Element {
        let weights = self.weights(view);
        element_at(sample(&mut self.rng, &weights))
    }
}

/// The equilibrium of the one-round matrix game of board-value changes.
pub struct Minimax {
    rng: StdRng,
}

impl Minimax {
    pub fn new() -> Minimax {
        Minimax {
            rng: StdRng::from_os_rng(),
        }
    }
    pub fn seeded(seed: u64) -> Minimax {
        Minimax {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The probability of each pick, index `element - 1`.
    pub fn weights(view: &GameView<'_>) -> Vec<f64> {
        let elements: Vec<Element> = view.variant.elements().collect();
        let payoff: Vec<Vec<f64>> = elements
            .iter()
            .map(|&mine| elements.iter().map(|&t| view.delta(mine, t)).collect())
            .collect();
        minimax::solve(&payoff).row
    }
}

impl Default for Minimax {
    fn default() -> Self {
        Minimax::new()
    }
}

impl Strategy for Minimax {
    fn pick(&mut self, view: &GameView<'_>) -> Element {
        let weights = Minimax::weights(view);
        element_at(sample(&mut self.rng, &weights))
    }
}

/// Plays the given picks in turn, starting over at the end.
pub struct Sequence {
    picks: Vec<Element>,
    next: usize,
}

impl Sequence {
    /// `picks` must not be empty.
    pub fn new(picks: Vec<Element>) -> Sequence {
        assert!(!picks.is_empty(), "a sequence needs at least one pick");
        Sequence { picks, next: 0 }
    }
}

impl Strategy for Sequence {
    fn pick(&mut self, _view: &GameView<'_>) -> Element {
        let pick = self.picks[self.next % self.picks.len()];
        self.next += 1;
        pick
    }
}

/// A strategy by its CLI name: `random`, `greedy` or `minimax`.
pub fn by_name(name: &str) -> Option<Box<dyn Strategy>> {
    match name {
        "random" => Some(Box::new(Random::new())),
        "greedy" => Some(Box::new(Greedy::new())),
        "minimax" => Some(Box::new(Minimax::new())),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
