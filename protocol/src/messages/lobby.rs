//! What the lobby shows: an `Account`, a `LiveGame` in a listing, a `Seek`, a `Challenge`.

use serde::{Deserialize, Serialize};

use crate::rules::Variant;
use crate::time_control::TimeControl;

use super::{GameId, PlayerInfo, SeatPair};

/// A signed-in account as others see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    pub rating: f64,
    pub guest: bool,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// A live game in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveGame {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<PlayerInfo>,
    pub round: u32,
    pub positions: Vec<i16>,
    pub spectators: u32,
}

/// An open seek anyone may accept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seek {
    pub seek_id: u64,
    pub by: PlayerInfo,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// A direct challenge from one player to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Challenge {
    pub challenge_id: u64,
    pub from: PlayerInfo,
    pub to: String,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// How many wait in one quick-pairing pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolCount {
    pub variant: Variant,
    /// The preset's name (`"blitz"`, …).
    pub time_control: String,
    pub rated: bool,
    pub waiting: u32,
}
