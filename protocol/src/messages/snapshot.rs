//! `GameSnapshot` and the parts of a game it is made of: the players, the game's fixed
//! `GameInfo`, `Clocks`, each `RoundRecord`, the `Phase` and the `GameResult`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rules::{Element, Outcome, Seat, Variant};
use crate::time_control::TimeControl;

use super::{GameId, SeatPair};

/// A player in a game, with the rating as it was when the game started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlayerInfo {
    pub name: String,
    pub rating: f64,
    pub guest: bool,
    /// A computer opponent the server runs. Sent only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub bot: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a game is, fixed at its start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GameInfo {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<PlayerInfo>,
    /// Unix time in milliseconds.
    pub started_at: u64,
}

/// Both banks in milliseconds, and whose is running, as of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Clocks {
    pub one_ms: u64,
    pub two_ms: u64,
    pub running: SeatPair<bool>,
}

/// One resolved round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundRecord {
    pub round: u32,
    pub picks: SeatPair<Element>,
    pub outcome: Outcome,
    /// Every element's position after the round (index = element - 1).
    pub positions: Vec<i16>,
}

/// Where a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for commitments.
    Commit,
    /// Both committed; waiting for reveals.
    Reveal,
    /// The game has ended.
    Over,
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// An element reached an edge of the track.
    Edge,
    /// The loser's bank ran out.
    Time,
    /// The loser did not reveal (a matching pick) by the reveal deadline.
    NoReveal,
    Resignation,
    /// The loser stayed disconnected past the grace period and the win was claimed.
    Abandoned,
    /// Both agreed to a draw.
    DrawAgreed,
    /// Nobody committed in the first round in time; unrated.
    Aborted,
    /// Ended by the server (for example, a crashed game task); no one is blamed: unrated.
    ServerAborted,
    /// The game reached the server's bound on resolved rounds (`Limits::max_rounds`): a
    /// draw, unrated.
    MaxRounds,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GameResult {
    /// `None` for a draw or an abort.
    pub winner: Option<Seat>,
    pub reason: EndReason,
}

/// Everything needed to draw a game from scratch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GameSnapshot {
    pub game: GameInfo,
    /// The `seq` of the last event this snapshot includes; events after it follow.
    pub seq: u64,
    pub round: u32,
    pub phase: Phase,
    pub committed: SeatPair<bool>,
    pub revealed: SeatPair<bool>,
    pub positions: Vec<i16>,
    pub clocks: Clocks,
    pub rounds: Vec<RoundRecord>,
    pub connected: SeatPair<bool>,
    pub spectators: u32,
    pub draw_offer: Option<Seat>,
    pub result: Option<GameResult>,
}
