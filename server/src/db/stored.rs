//! How a finished game's record is stored in `games.record`.
//!
//! A record is written once and read rarely (`GET /api/games/{id}`), but every game writes
//! one, so its size is most of what the writer writes. Stored as JSON it was ~13 KB for
//! 30 rounds, mostly the hex of four 32-byte values per round (two commitments, two
//! nonces). It is now a BLOB: one format-version byte, then MessagePack (`rmp_serde`,
//! structs as arrays) of [`Stored`], whose commitments and nonces are the raw 32 bytes
//! (about 4.5 KB for 30 rounds).
//!
//! The record reads back as exactly the JSON `serde_json::to_value(&record)` gives. Both
//! backends store these same bytes (a SQLite BLOB, a PostgreSQL `bytea`).
//!
//! To change the format, add a version: keep decoding every version ever written.

use std::borrow::Cow;

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Element, Outcome, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{DbError, DbResult};
use crate::record::{GameRecord, RecordPlayer, RoundLog};

/// The first byte of every stored BLOB: the format of what follows.
const FORMAT_V1: u8 = 1;

/// A record as stored, done by the caller, off the writer's thread.
pub(super) fn encode(record: &GameRecord) -> DbResult<Vec<u8>> {
    let mut bytes = Vec::with_capacity(256 + record.rounds.len() * 160);
    bytes.push(FORMAT_V1);
    rmp_serde::encode::write(&mut bytes, &Stored::from(record))
        .map_err(|e| DbError::Sqlite(format!("encoding the game record: {e}")))?;
    Ok(bytes)
}

/// A stored record (a `games.record` value) as the JSON the API returns. `game_id` only
/// names the game in errors.
pub(super) fn to_json(game_id: &GameId, bytes: &[u8]) -> DbResult<serde_json::Value> {
    let record = decode(bytes).map_err(|what| stored_error(game_id, what))?;
    serde_json::to_value(&record).map_err(|e| stored_error(game_id, e.to_string()))
}

/// A stored record that cannot be read back.
pub(super) fn stored_error(game_id: &GameId, what: String) -> DbError {
    DbError::Sqlite(format!("stored record of game {game_id}: {what}"))
}

/// A stored BLOB back into the record it was made from.
pub(super) fn decode(bytes: &[u8]) -> Result<GameRecord, String> {
    let Some((&version, mut body)) = bytes.split_first() else {
        return Err("empty record".into());
    };
    match version {
        FORMAT_V1 => {
            let stored = Stored::deserialize(&mut rmp_serde::Deserializer::new(&mut body))
                .map_err(|e| format!("corrupt record (format {version}): {e}"))?;
            if !body.is_empty() {
                return Err(format!(
                    "corrupt record (format {version}): {} bytes after its end",
                    body.len()
                ));
            }
            Ok(stored.into())
        }
        _ => Err(format!(
            "record format {version} is unknown to this server (it knows {FORMAT_V1})"
        )),
    }
}

/// A record's fields before and after its rounds: what a player's list of games shows.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RecordHead {
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<RecordPlayer>,
    pub started_at: u64,
    pub ended_at: u64,
    pub result: GameResult,
}

/// A stored BLOB's [`RecordHead`], its rounds skipped unread.
pub(super) fn decode_head(bytes: &[u8]) -> Result<RecordHead, String> {
    /// `Stored` with its rounds ignored: the same fields in the same order.
    #[derive(Deserialize)]
    struct Head {
        _game_id: GameId,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
        players: SeatPair<RecordPlayer>,
        started_at: u64,
        ended_at: u64,
        result: GameResult,
        _rounds: serde::de::IgnoredAny,
        _final_clocks_ms: SeatPair<u64>,
    }
    let Some((&version, mut body)) = bytes.split_first() else {
        return Err("empty record".into());
    };
    if version != FORMAT_V1 {
        return Err(format!(
            "record format {version} is unknown to this server (it knows {FORMAT_V1})"
        ));
    }
    let head = Head::deserialize(&mut rmp_serde::Deserializer::new(&mut body))
        .map_err(|e| format!("corrupt record (format {version}): {e}"))?;
    Ok(RecordHead {
        variant: head.variant,
        time_control: head.time_control,
        rated: head.rated,
        players: head.players,
        started_at: head.started_at,
        ended_at: head.ended_at,
        result: head.result,
    })
}

/// Format 1: `GameRecord`, field for field, with its rounds' hashes in raw bytes.
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    game_id: GameId,
    variant: Variant,
    time_control: TimeControl,
    rated: bool,
    players: Cow<'a, SeatPair<RecordPlayer>>,
    started_at: u64,
    ended_at: u64,
    result: GameResult,
    rounds: Vec<StoredRound<'a>>,
    final_clocks_ms: SeatPair<u64>,
}

#[derive(Serialize, Deserialize)]
struct StoredRound<'a> {
    round: u32,
    commitments: SeatPair<Hash32<'a>>,
    nonces: SeatPair<Hash32<'a>>,
    picks: SeatPair<Element>,
    outcome: Outcome,
    positions: Cow<'a, [i16]>,
    clocks_ms: SeatPair<u64>,
}

impl<'a> From<&'a GameRecord> for Stored<'a> {
    fn from(record: &'a GameRecord) -> Stored<'a> {
        Stored {
            game_id: record.game_id,
            variant: record.variant,
            time_control: record.time_control,
            rated: record.rated,
            players: Cow::Borrowed(&record.players),
            started_at: record.started_at,
            ended_at: record.ended_at,
            result: record.result,
            rounds: record.rounds.iter().map(StoredRound::from).collect(),
            final_clocks_ms: record.final_clocks_ms,
        }
    }
}

impl<'a> From<&'a RoundLog> for StoredRound<'a> {
    fn from(round: &'a RoundLog) -> StoredRound<'a> {
        let hash = |hex: &'a String| Hash32::from(hex.as_str());
        StoredRound {
            round: round.round,
            commitments: SeatPair::new(hash(&round.commitments.one), hash(&round.commitments.two)),
            nonces: SeatPair::new(hash(&round.nonces.one), hash(&round.nonces.two)),
            picks: round.picks,
            outcome: round.outcome,
            positions: Cow::Borrowed(&round.positions),
            clocks_ms: round.clocks_ms,
        }
    }
}

impl From<Stored<'_>> for GameRecord {
    fn from(stored: Stored<'_>) -> GameRecord {
        GameRecord {
            game_id: stored.game_id,
            variant: stored.variant,
            time_control: stored.time_control,
            rated: stored.rated,
            players: stored.players.into_owned(),
            started_at: stored.started_at,
            ended_at: stored.ended_at,
            result: stored.result,
            rounds: stored.rounds.into_iter().map(RoundLog::from).collect(),
            final_clocks_ms: stored.final_clocks_ms,
        }
    }
}

impl From<StoredRound<'_>> for RoundLog {
    fn from(round: StoredRound<'_>) -> RoundLog {
        RoundLog {
            round: round.round,
            commitments: SeatPair::new(round.commitments.one.hex(), round.commitments.two.hex()),
            nonces: SeatPair::new(round.nonces.one.hex(), round.nonces.two.hex()),
            picks: round.picks,
            outcome: round.outcome,
            positions: round.positions.into_owned(),
            clocks_ms: round.clocks_ms,
        }
    }
}

/// A commitment or a nonce, recorded as hex: stored as its 32 bytes (MessagePack `bin`)
/// when the hex is exactly what `hex::encode` makes of them, which is how the game
/// records them; any other text (a commitment never made is recorded as `""`) is stored
/// as itself (MessagePack `str`), so that it reads back unchanged.
#[derive(Debug, PartialEq)]
enum Hash32<'a> {
    Bytes([u8; 32]),
    Text(Cow<'a, str>),
}

impl<'a> From<&'a str> for Hash32<'a> {
    fn from(hex: &'a str) -> Hash32<'a> {
        let mut bytes = [0; 32];
        // Lowercase only: uppercase hex would not come back as it was.
        let canonical = hex.len() == 64 && !hex.bytes().any(|b| b.is_ascii_uppercase());
        if canonical && hex::decode_to_slice(hex, &mut bytes).is_ok() {
            Hash32::Bytes(bytes)
        } else {
            Hash32::Text(Cow::Borrowed(hex))
        }
    }
}

impl Hash32<'_> {
    fn hex(self) -> String {
        match self {
            Hash32::Bytes(bytes) => hex::encode(bytes),
            Hash32::Text(text) => text.into_owned(),
        }
    }
}

impl Serialize for Hash32<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Hash32::Bytes(bytes) => serializer.serialize_bytes(bytes),
            Hash32::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for Hash32<'_> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Hash32Visitor)
    }
}

struct Hash32Visitor;

impl<'de> serde::de::Visitor<'de> for Hash32Visitor {
    type Value = Hash32<'static>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("32 bytes or a string")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        bytes
            .try_into()
            .map(Hash32::Bytes)
            .map_err(|_| E::invalid_length(bytes.len(), &self))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Hash32::Text(Cow::Owned(text.to_owned())))
    }
}
