//! `SeatPair`: one value per seat.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rules::Seat;

/// One value per seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SeatPair_of_{T}")]
pub struct SeatPair<T> {
    pub one: T,
    pub two: T,
}

impl<T> SeatPair<T> {
    pub fn new(one: T, two: T) -> Self {
        SeatPair { one, two }
    }
    pub fn get(&self, seat: Seat) -> &T {
        match seat {
            Seat::One => &self.one,
            Seat::Two => &self.two,
        }
    }
    pub fn get_mut(&mut self, seat: Seat) -> &mut T {
        match seat {
            Seat::One => &mut self.one,
            Seat::Two => &mut self.two,
        }
    }
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> SeatPair<U> {
        SeatPair {
            one: f(self.one),
            two: f(self.two),
        }
    }
}
