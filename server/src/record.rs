//! The full record of a finished game, as the game actor hands it to the persistence
//! writer and as `GET /api/games/{id}` returns it.

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Element, Outcome, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Serialize};

/// A database account id.
pub type AccountId = i64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordPlayer {
    pub account_id: AccountId,
    pub name: String,
    pub guest: bool,
    /// The rating shown when the game started (the writer rates from the stored rating).
    pub rating: f64,
}

/// One resolved round, with everything needed to re-verify it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundLog {
    pub round: u32,
    /// Hex of each seat's 32-byte commitment.
    pub commitments: SeatPair<String>,
    /// Hex of each seat's 32-byte nonce.
    pub nonces: SeatPair<String>,
    pub picks: SeatPair<Element>,
    pub outcome: Outcome,
    pub positions: Vec<i16>,
    /// Each bank after the round, in milliseconds.
    pub clocks_ms: SeatPair<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<RecordPlayer>,
    /// Unix milliseconds.
    pub started_at: u64,
    pub ended_at: u64,
    pub result: GameResult,
    pub rounds: Vec<RoundLog>,
    pub final_clocks_ms: SeatPair<u64>,
}

impl GameRecord {
    /// Whether this game changes ratings: rated, between two accounts, won by someone.
    pub fn changes_ratings(&self) -> bool {
        self.rated
            && !self.players.one.guest
            && !self.players.two.guest
            && self.result.winner.is_some()
    }
}
