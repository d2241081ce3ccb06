//! A finished game's record: what the server stores once the game ends, what
//! `GET /api/games/{id}` answers, and the `game` of its signed transcript (PROTOCOL.md
//! section 12), one definition for the server and every client that checks one.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::messages::{GameId, GameResult, SeatPair};
use crate::rules::{Element, Outcome};
use crate::TimeControl;
use crate::Variant;

/// The server's id of an account (its row in the database).
pub type AccountId = i64;

/// A player as a record names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordPlayer {
    /// The server's id of the account. The JSON API and signed transcripts leave it out,
    /// so a record read from them has 0 here in both seats: `against_itself` and the
    /// predicates built on it are for the server's own records.
    #[serde(default)]
    #[schemars(skip)]
    pub account_id: AccountId,
    pub name: String,
    pub guest: bool,
    /// The rating shown when the game started (the writer rates from the stored rating).
    pub rating: f64,
}

/// One resolved round, with everything needed to re-verify it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// Which seats escrowed their reveal with their commit (the server revealed for them).
    /// Left out when neither did, so records and transcripts of games without escrow keep
    /// their bytes; last, so the MessagePack array form of older records still reads.
    #[serde(default, skip_serializing_if = "no_escrow")]
    pub escrowed: SeatPair<bool>,
}

fn no_escrow(escrowed: &SeatPair<bool>) -> bool {
    !escrowed.one && !escrowed.two
}

/// A finished game's full record: what the server stores, `GET /api/games/{id}` answers
/// (without account ids) and a signed transcript's `game` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// Described as the JSON API writes it (records are served as JSON only).
impl schemars::JsonSchema for Hash32 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Hash32".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::Hash32").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "32 bytes (a commitment or a nonce) as 64 lowercase hex characters.",
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
        })
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
