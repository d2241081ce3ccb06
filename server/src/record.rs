//! What is stored of a game: the full record of a finished game, as the game actor hands it
//! to the persistence writer and as `GET /api/games/{id}` returns it, and the durable log of
//! a game in progress, from which a restarted server restores it.

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Element, Outcome, Seat, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    /// Each seat's commitment.
    pub commitments: SeatPair<Hash32>,
    /// Each seat's nonce.
    pub nonces: SeatPair<Hash32>,
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
    pub fn new(
        setup: &GameSetup,
        started_at: u64,
        ended_at: u64,
        result: GameResult,
        rounds: Vec<RoundLog>,
        final_clocks_ms: SeatPair<u64>,
    ) -> GameRecord {
        GameRecord {
            game_id: setup.game_id,
            variant: setup.variant,
            time_control: setup.time_control,
            rated: setup.rated,
            players: setup.players.clone(),
            started_at,
            ended_at,
            result,
            rounds,
            final_clocks_ms,
        }
    }

    /// Whether this game changes ratings: rated, between two different accounts, neither a
    /// guest, won by someone. (An account cannot be rated against itself: the lobby never
    /// seats one in both seats, and a record that does anyway is stored unrated.)
    pub fn changes_ratings(&self) -> bool {
        self.rated_between_accounts() && self.result.winner.is_some()
    }

    /// Rated, and between two different registered accounts: a game whose result counts.
    pub fn rated_between_accounts(&self) -> bool {
        self.rated && !self.players.one.guest && !self.players.two.guest && !self.against_itself()
    }

    /// The same account in both seats.
    pub fn against_itself(&self) -> bool {
        self.players.one.account_id == self.players.two.account_id
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
    /// An accepted commitment.
    Commit {
        round: u32,
        seat: Seat,
        commitment: Hash32,
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
        Ok(Some(GameRecord::new(
            setup,
            started_at,
            ended_at,
            result,
            self.rounds(),
            final_clocks_ms,
        )))
    }
}

/// A commitment or a nonce: 32 bytes, kept as bytes from the move to the database. Formats
/// meant for people (the JSON API) write it as lowercase hex; MessagePack (the game log,
/// the stored record) as its 32 bytes (`bin`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hash32(pub [u8; 32]);

impl Hash32 {
    /// Lowercase hex, as the JSON API writes it.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hash32({})", self.hex())
    }
}

impl Serialize for Hash32 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.hex())
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Hash32 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(Hash32Visitor)
        } else {
            deserializer.deserialize_bytes(Hash32Visitor)
        }
    }
}

struct Hash32Visitor;

impl serde::de::Visitor<'_> for Hash32Visitor {
    type Value = Hash32;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("32 bytes, or their 64 hex digits")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Hash32, E> {
        bytes
            .try_into()
            .map(Hash32)
            .map_err(|_| E::invalid_length(bytes.len(), &self))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Hash32, E> {
        let mut bytes = [0; 32];
        hex::decode_to_slice(text, &mut bytes)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(text), &self))?;
        Ok(Hash32(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::Hash32;

    #[test]
    fn a_hash_is_hex_in_json_and_bytes_in_messagepack() {
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0xA5;
        }
        let hash = Hash32(bytes);
        let json = serde_json::to_string(&hash).unwrap();
        assert_eq!(json, format!("\"{}\"", hex::encode(bytes)));
        assert_eq!(serde_json::from_str::<Hash32>(&json).unwrap(), hash);
        let packed = rmp_serde::to_vec(&hash).unwrap();
        // bin 8: marker, length, then the bytes themselves.
        assert_eq!(&packed[..2], &[0xc4, 32]);
        assert_eq!(&packed[2..], &bytes);
        assert_eq!(rmp_serde::from_slice::<Hash32>(&packed).unwrap(), hash);
        // Anything but 32 bytes is refused, in either form.
        assert!(serde_json::from_str::<Hash32>("\"abcd\"").is_err());
        assert!(rmp_serde::from_slice::<Hash32>(&rmp_serde::to_vec(&[1u8; 31]).unwrap()).is_err());
    }
}
