//! What is stored of a game: the full record of a finished game, as the game actor hands it
//! to the persistence writer and as `GET /api/games/{id}` returns it, and the durable log of
//! a game in progress, from which a restarted server restores it.

use std::sync::Arc;

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Element, Outcome, Seat, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Serialize};

use crate::game::GameSetup;

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

/// One step of a live game's durable log. A game appends its steps before it acknowledges
/// them to anyone; at startup the log of every unfinished game is replayed to restore it,
/// and it is deleted in the transaction that stores the game's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogStep {
    /// Counted from 0 (the game's start), one per step, per game.
    pub step: u64,
    /// When the step happened, Unix milliseconds.
    pub at: u64,
    /// Both banks right after the step, in microseconds rounded up (a bank with time left
    /// never comes back as zero).
    pub banks_us: SeatPair<u64>,
    /// The `seq` of the game's last event after the step.
    pub seq: u64,
    pub entry: LogEntry,
}

/// What a step did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEntry {
    /// The game was created: always step 0.
    Start {
        setup: GameSetup,
        /// `GameInfo.started_at`, Unix milliseconds.
        started_at: u64,
    },
    /// An accepted commitment (hex of its 32 bytes).
    Commit {
        round: u32,
        seat: Seat,
        commitment: String,
    },
    /// An accepted reveal (the nonce in hex).
    Reveal {
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: String,
    },
    /// A round was played; written with the reveal that completed it.
    Result { round: RoundLog },
    /// The server restarted and restored the game; `voided` names the round whose
    /// commitments and reveals were discarded, if one was under way.
    Restarted { voided: Option<u32> },
    /// The game ended; the record is what the database stores for it (shared with the
    /// game's state and the database's request, not copied: it holds every round).
    End { record: Arc<GameRecord> },
}

impl LogEntry {
    pub fn is_end(&self) -> bool {
        matches!(self, LogEntry::End { .. })
    }
}

/// Everything logged for one unfinished game, in step order.
#[derive(Debug, Clone, PartialEq)]
pub struct GameLog {
    pub game_id: GameId,
    pub steps: Vec<LogStep>,
}
