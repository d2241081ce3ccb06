//! How a finished game's record is stored in `games.record`.
//!
//! A record is written once and read rarely (`GET /api/games/{id}`), but every game writes
//! one, so its size is most of what the writer writes. Stored as JSON it was ~13 KB for
//! 30 rounds, mostly the hex of four 32-byte values per round (two commitments, two
//! nonces). It is a BLOB: one format-version byte, then the record in MessagePack
//! (`rmp_serde`, structs as arrays), whose commitments and nonces are their raw 32 bytes
//! (`record::Hash32`; about 4.5 KB for 30 rounds).
//!
//! The record reads back as exactly the JSON `serde_json::to_value(&record)` gives. Both
//! backends store these same bytes (a SQLite BLOB, a PostgreSQL `bytea`).
//!
//! To change the format, add a version: keep decoding every version ever written.

use elementals_protocol::messages::{GameId, GameResult, SeatPair};
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use serde::Deserialize;

use super::{DbError, DbResult};
use crate::record::{GameRecord, RecordPlayer};

/// The first byte of every stored BLOB: the format of what follows.
const FORMAT_V1: u8 = 1;

/// A record as stored, done by the caller, off the writer's thread.
pub(super) fn encode(record: &GameRecord) -> DbResult<Vec<u8>> {
    let mut bytes = Vec::with_capacity(256 + record.rounds.len() * 160);
    bytes.push(FORMAT_V1);
    rmp_serde::encode::write(&mut bytes, record)
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
            let record = GameRecord::deserialize(&mut rmp_serde::Deserializer::new(&mut body))
                .map_err(|e| format!("corrupt record (format {version}): {e}"))?;
            if !body.is_empty() {
                return Err(format!(
                    "corrupt record (format {version}): {} bytes after its end",
                    body.len()
                ));
            }
            Ok(record)
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
    /// `GameRecord` with its rounds ignored: the same fields in the same order.
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
