//! What is stored of a game: the durable log of a game in progress, from which a restarted
//! server restores it, and the finished game's record (`elementals_protocol::record`, shared
//! with the clients that check transcripts), as the game actor hands it to the persistence
//! writer.

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Serialize};

pub use elementals_protocol::record::{AccountId, GameRecord, Hash32, RecordPlayer, RoundLog};

/// Everything fixed when a game is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameSetup {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<RecordPlayer>,
}

impl GameSetup {
    /// The record of this game, finished.
    pub fn record(
        &self,
        started_at: u64,
        ended_at: u64,
        result: GameResult,
        rounds: Vec<RoundLog>,
        final_clocks_ms: SeatPair<u64>,
    ) -> GameRecord {
        GameRecord {
            game_id: self.game_id,
            variant: self.variant,
            time_control: self.time_control,
            rated: self.rated,
            players: self.players.clone(),
            started_at,
            ended_at,
            result,
            rounds,
            final_clocks_ms,
        }
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

/// A reveal escrowed with its commit: the pick and nonce the server holds for the seat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Escrow {
    pub pick: Element,
    pub nonce: Hash32,
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
    /// An accepted commitment, with the reveal escrowed with it if it was: replaying the
    /// step holds the escrow again, and the server's reveal for it is not a step of its own
    /// (it follows from the commit that opens the reveal phase).
    Commit {
        round: u32,
        seat: Seat,
        commitment: Hash32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        escrow: Option<Escrow>,
    },
    /// An accepted reveal.
    Reveal {
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: Hash32,
    },
    /// A round was played; written with the reveal that completed it.
    Result { round: RoundLog },
    /// The server restarted and restored the game; `voided` names the round whose
    /// commitments and reveals were discarded, if one was under way.
    Restarted { voided: Option<u32> },
    /// The game hibernated (`game/hibernate.rs`): its actor ended, waiting on a player
    /// whose deadline was far off. The step's `at` and `banks_us` are the moment and the
    /// banks; these are what else runs on time, so that a wake-up takes the game up exactly
    /// where it stood, its round kept. Replayed in the middle of a log it changes nothing.
    Hibernated {
        /// What was left of the reveal window, in the reveal phase.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reveal_left_ms: Option<u64>,
        /// What was left of round 1's first-commit window, while it ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_commit_left_ms: Option<u64>,
        /// How long each seat had been away.
        away_ms: SeatPair<u64>,
        /// How long the phase had been open.
        phase_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        draw_offer: Option<Seat>,
    },
    /// The game ended. Only what the other steps do not hold: the game's record is its
    /// `Start`, its `Result`s and this (`GameLog::ended`), so the step stays a few dozen
    /// bytes however long the game was.
    End {
        result: GameResult,
        /// The record's `ended_at`, Unix milliseconds.
        ended_at: u64,
        final_clocks_ms: SeatPair<u64>,
    },
}

impl LogEntry {
    pub fn is_end(&self) -> bool {
        matches!(self, LogEntry::End { .. })
    }
}

impl GameLog {
    /// Whether the game hibernated after its last step (a wake-up takes it up from there).
    pub fn hibernated(&self) -> bool {
        self.steps
            .last()
            .is_some_and(|s| matches!(s.entry, LogEntry::Hibernated { .. }))
    }
}

/// Everything logged for one unfinished game, in step order.
#[derive(Debug, Clone, PartialEq)]
pub struct GameLog {
    pub game_id: GameId,
    pub steps: Vec<LogStep>,
}

/// Why a logged game's record cannot be rebuilt from its log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogRecordError {
    #[error("the log does not begin with the game's start")]
    NoStart,
    #[error("the log's start is for game {logged}, not {game_id}")]
    OtherGame { game_id: GameId, logged: GameId },
}

impl GameLog {
    /// The game's setup and start time, from its `Start` step.
    pub fn start(&self) -> Result<(&GameSetup, u64), LogRecordError> {
        match self.steps.first().map(|s| &s.entry) {
            Some(LogEntry::Start { setup, started_at }) if setup.game_id == self.game_id => {
                Ok((setup, *started_at))
            }
            Some(LogEntry::Start { setup, .. }) => Err(LogRecordError::OtherGame {
                game_id: self.game_id,
                logged: setup.game_id,
            }),
            _ => Err(LogRecordError::NoStart),
        }
    }

    /// Every round the log holds a result of, in order.
    pub fn rounds(&self) -> Vec<RoundLog> {
        self.steps
            .iter()
            .filter_map(|s| match &s.entry {
                LogEntry::Result { round } => Some(round.clone()),
                _ => None,
            })
            .collect()
    }

    /// The finished game's record, if its end is logged: what the game's state built when
    /// it ended, rebuilt from the `Start`, the `Result`s and the `End`.
    pub fn ended(&self) -> Result<Option<GameRecord>, LogRecordError> {
        let Some((result, ended_at, final_clocks_ms)) =
            self.steps.iter().find_map(|s| match s.entry {
                LogEntry::End {
                    result,
                    ended_at,
                    final_clocks_ms,
                } => Some((result, ended_at, final_clocks_ms)),
                _ => None,
            })
        else {
            return Ok(None);
        };
        let (setup, started_at) = self.start()?;
        Ok(Some(setup.record(
            started_at,
            ended_at,
            result,
            self.rounds(),
            final_clocks_ms,
        )))
    }
}
