//! What the lobby shows: an `Account`, a `LiveGame` in a listing, a `Seek`, a `Challenge`,
//! and a player's own open games (`MyGame`) with what each owes (`Owed`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rules::{Seat, Variant};
use crate::time_control::TimeControl;

use super::{GameId, Phase, PlayerInfo, SeatPair};

/// A signed-in account as others see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Account {
    pub name: String,
    pub rating: f64,
    pub guest: bool,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// A game under way in a listing: live, or a sleeping correspondence game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiveGame {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<PlayerInfo>,
    pub round: u32,
    pub positions: Vec<i16>,
    pub spectators: u32,
    /// Whether it is played at correspondence pace (its `time_control` has
    /// `per_phase_ms`), awake or asleep. Absent from older servers' listings: false.
    #[serde(default)]
    pub correspondence: bool,
}

/// An open seek anyone may accept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Seek {
    pub seek_id: u64,
    pub by: PlayerInfo,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// A direct challenge from one player to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Challenge {
    pub challenge_id: u64,
    pub from: PlayerInfo,
    pub to: String,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// How many wait in one quick-pairing pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PoolCount {
    pub variant: Variant,
    /// The preset's name (`"blitz"`, …).
    pub time_control: String,
    pub rated: bool,
    pub waiting: u32,
}

/// One of the asker's open (unfinished) games, as `my_games` and `GET /api/me/games` list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MyGame {
    pub game_id: GameId,
    /// The asker's seat.
    pub seat: Seat,
    pub opponent: PlayerInfo,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub round: u32,
    pub phase: Phase,
    /// The seats whose action the game waits for (none, one or both), seat one first.
    pub owed: Vec<Owed>,
}

/// An action a game waits for from one seat, and by when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Owed {
    pub seat: Seat,
    pub action: OwedAction,
    /// Unix milliseconds at which the seat loses (or, in round 1, the game is aborted) if it
    /// has not acted: its bank's end, or the reveal window's if earlier. `None` while the
    /// game's clocks are held (a restart, an incident, a log that cannot be written).
    pub deadline: Option<u64>,
}

/// What a seat owes: its commitment or its reveal for the current round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OwedAction {
    Commit,
    Reveal,
}
