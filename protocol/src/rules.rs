//! The rules engine: variants, who beats whom, and the shared board.
//!
//! This module owns everything `RULES.md` calls "the game": a [`Variant`] (number, range, distance),
//! the cyclic [`Variant::beats`] relation, and a [`Board`] that plays rounds of simultaneous picks and
//! knows when an element has reached an edge. It is pure: no clocks, no I/O, no randomness, so the
//! game actor only adds channels and time around it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An element, identified by number in `1..=number` (display names belong to a theme, not to the rules).
pub type Element = u16;

/// Largest `number` the server accepts: bigger games are absurd to play and to display.
pub const MAX_NUMBER: u16 = 99;

/// Largest `distance` the server accepts; the usual range is 3 to 5.
pub const MAX_DISTANCE: u16 = 20;

/// Most resolved rounds a game may last; a game reaching its server's bound (this or less,
/// announced in `welcome.limits.max_rounds`) ends drawn, unrated, with reason `max_rounds`.
/// The variant bounds allow games of tens of thousands of rounds (99 elements, range 1):
/// this keeps every game's log, record and snapshot bounded.
pub const MAX_ROUNDS: u32 = 1_000;

/// The three numbers a game is played under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Variant {
    /// How many elements exist, numbered `1..=number`.
    pub number: u16,
    /// How far down (cyclically) an element beats.
    pub range: u16,
    /// How many squares an element travels from the centre to win.
    pub distance: u16,
}

/// Why a [`Variant`] is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    #[error("number must be at least 3, got {number}")]
    NumberTooSmall { number: u16 },
    #[error("number must be at most {max}, got {number}")]
    NumberTooLarge { number: u16, max: u16 },
    #[error("range must be at least 1")]
    RangeTooSmall,
    #[error("range must be at most {max} for this number, got {range}")]
    RangeTooLarge { range: u16, max: u16 },
    #[error("distance must be at least 1")]
    DistanceTooSmall,
    #[error("distance must be at most {max}, got {distance}")]
    DistanceTooLarge { distance: u16, max: u16 },
}

impl Variant {
    /// The seed's example game: five elements, range two, distance three.
    pub const CLASSIC: Variant = Variant {
        number: 5,
        range: 2,
        distance: 3,
    };

    /// A checked variant.
    pub fn new(number: u16, range: u16, distance: u16) -> Result<Variant, VariantError> {
        let variant = Variant {
            number,
            range,
            distance,
        };
        variant.validate().map(|()| variant)
    }

    /// Checks the bounds of `RULES.md` plus the server's upper bounds. The fields are public (so a
    /// variant can arrive from the wire), so anything built without [`Variant::new`] must pass here.
    pub fn validate(&self) -> Result<(), VariantError> {
        let Variant {
            number,
            range,
            distance,
        } = *self;
        if number < 3 {
            return Err(VariantError::NumberTooSmall { number });
        }
        if number > MAX_NUMBER {
            return Err(VariantError::NumberTooLarge {
                number,
                max: MAX_NUMBER,
            });
        }
        if range < 1 {
            return Err(VariantError::RangeTooSmall);
        }
        let max = Self::max_range(number);
        if range > max {
            return Err(VariantError::RangeTooLarge { range, max });
        }
        if distance < 1 {
            return Err(VariantError::DistanceTooSmall);
        }
        if distance > MAX_DISTANCE {
            return Err(VariantError::DistanceTooLarge {
                distance,
                max: MAX_DISTANCE,
            });
        }
        Ok(())
    }

    /// The largest range for `number` elements: `floor((number - 1) / 2)`, so that no two elements
    /// beat each other.
    pub fn max_range(number: u16) -> u16 {
        number.saturating_sub(1) / 2
    }

    /// Whether `e` names an element of this variant.
    pub fn is_element(&self, e: Element) -> bool {
        (1..=self.number).contains(&e)
    }

    /// Whether `a` beats `b`: `1 <= (a - b) mod number <= range`. False when either is not an element.
    pub fn beats(&self, a: Element, b: Element) -> bool {
        if !self.is_element(a) || !self.is_element(b) {
            return false;
        }
        // u32 so that `a + number` cannot overflow; `number > 0` here since `a` is an element.
        let n = u32::from(self.number);
        let down = (u32::from(a) + n - u32::from(b)) % n;
        (1..=u32::from(self.range)).contains(&down)
    }

    /// Every element, `1..=number`.
    pub fn elements(&self) -> impl Iterator<Item = Element> {
        1..=self.number
    }
}

/// Who wins the pairing of player one's `one` against player two's `two`; `None` is a tie.
pub fn outcome(variant: &Variant, one: Element, two: Element) -> Option<Seat> {
    if variant.beats(one, two) {
        Some(Seat::One)
    } else if variant.beats(two, one) {
        Some(Seat::Two)
    } else {
        None
    }
}

/// A player's side of the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Seat {
    /// Player one: the left edge `-distance`; its winning elements move right (`+1`).
    One,
    /// Player two: the right edge `+distance`; its winning elements move left (`-1`).
    Two,
}

impl Seat {
    /// Both seats, player one first.
    pub const BOTH: [Seat; 2] = [Seat::One, Seat::Two];

    /// The opponent.
    pub fn other(self) -> Seat {
        match self {
            Seat::One => Seat::Two,
            Seat::Two => Seat::One,
        }
    }

    /// `0` for player one, `1` for player two: an index into per-seat arrays.
    pub fn index(self) -> usize {
        match self {
            Seat::One => 0,
            Seat::Two => 1,
        }
    }

    /// `1` or `2`, as the rules and the commitment preimage number players.
    pub fn number(self) -> u8 {
        match self {
            Seat::One => 1,
            Seat::Two => 2,
        }
    }

    /// The direction an element this seat wins with moves: `+1` for one, `-1` for two.
    fn step(self) -> i16 {
        match self {
            Seat::One => 1,
            Seat::Two => -1,
        }
    }
}

/// One element moving one square after winning a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Move {
    pub element: Element,
    /// The seat whose pick won, and so the direction of travel.
    pub by: Seat,
    pub from: i16,
    pub to: i16,
}

/// The result of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// Who won the round; `None` is a tie, and then `moved` is `None` too.
    pub winner: Option<Seat>,
    pub moved: Option<Move>,
}

/// Why [`Board::play`] refused a round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    #[error("player {} picked {pick}, which is not an element of this game", seat.number())]
    InvalidPick { seat: Seat, pick: Element },
    #[error("the game is over")]
    GameOver,
}

/// The shared track: one position per element, from `-distance` to `+distance`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    variant: Variant,
    /// Index `element - 1`. Invariant: each in `[-distance, distance]`, at most one on an edge.
    positions: Vec<i16>,
}

impl Board {
    /// A fresh board with every element at the centre. The variant should have passed
    /// [`Variant::validate`]; an unchecked one never panics here, but may play nonsense.
    pub fn new(variant: Variant) -> Board {
        Board {
            variant,
            positions: vec![0; usize::from(variant.number)],
        }
    }

    /// A board in a given position (e.g. restored from a snapshot). `None` when the variant is
    /// invalid, the length is not `number`, a position is off the track, or more than one element
    /// stands on an edge (play stops at the first, so that cannot be reached).
    pub fn from_positions(variant: Variant, positions: Vec<i16>) -> Option<Board> {
        variant.validate().ok()?;
        if positions.len() != usize::from(variant.number) {
            return None;
        }
        let edge = i32::from(variant.distance);
        if positions.iter().any(|&p| i32::from(p).abs() > edge) {
            return None;
        }
        let on_edge = positions
            .iter()
            .filter(|&&p| i32::from(p).abs() == edge)
            .count();
        if on_edge > 1 {
            return None;
        }
        Some(Board { variant, positions })
    }

    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Every element's position; index `element - 1`.
    pub fn positions(&self) -> &[i16] {
        &self.positions
    }

    /// Where `e` stands, or `None` when it is not an element.
    pub fn position(&self, e: Element) -> Option<i16> {
        if !self.variant.is_element(e) {
            return None;
        }
        self.positions.get(usize::from(e) - 1).copied()
    }

    /// Plays one round of player one's `one` against player two's `two`, moving the winning
    /// element one square towards the loser's edge.
    pub fn play(&mut self, one: Element, two: Element) -> Result<Outcome, PlayError> {
        if self.is_over() {
            return Err(PlayError::GameOver);
        }
        for (seat, pick) in [(Seat::One, one), (Seat::Two, two)] {
            if !self.variant.is_element(pick) {
                return Err(PlayError::InvalidPick { seat, pick });
            }
        }
        let winner = outcome(&self.variant, one, two);
        let moved = winner.map(|by| {
            let element = match by {
                Seat::One => one,
                Seat::Two => two,
            };
            let slot = &mut self.positions[usize::from(element) - 1];
            let from = *slot;
            // Saturating only matters for unchecked variants whose edge lies beyond i16.
            *slot = from.saturating_add(by.step());
            Move {
                element,
                by,
                from,
                to: *slot,
            }
        });
        Ok(Outcome { winner, moved })
    }

    /// The winner once an element has reached an edge: `+distance` for player one, `-distance`
    /// for player two.
    pub fn winner(&self) -> Option<Seat> {
        let edge = i32::from(self.variant.distance);
        self.positions.iter().find_map(|&p| {
            let p = i32::from(p);
            if p >= edge {
                Some(Seat::One)
            } else if p <= -edge {
                Some(Seat::Two)
            } else {
                None
            }
        })
    }

    pub fn is_over(&self) -> bool {
        self.winner().is_some()
    }
}

#[cfg(test)]
mod tests;
