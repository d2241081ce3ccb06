//! `GameId`: a UUID, on the wire as its hyphenated string, parsed where it lies.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A game id: a UUID, on the wire as its 36-character hyphenated string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(pub Uuid);

impl GameId {
    pub fn new_random_from(bytes: [u8; 16]) -> GameId {
        GameId(uuid::Builder::from_random_bytes(bytes).into_uuid())
    }
}

impl std::fmt::Display for GameId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl std::str::FromStr for GameId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(GameId)
    }
}

impl Serialize for GameId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0.hyphenated())
    }
}

/// On the wire a string: the server writes the 36-character hyphenated lowercase form (and
/// accepts any spelling `uuid` parses).
impl schemars::JsonSchema for GameId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GameId".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::GameId").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A game id: a UUID in its 36-character hyphenated lowercase form.",
            "type": "string",
            "format": "uuid",
            "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
            "examples": ["6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab"]
        })
    }
}

impl<'de> Deserialize<'de> for GameId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(GameIdVisitor)
    }
}

/// Parses the text where it lies, without copying it into a `String` first. Like a
/// `String`, it also takes the bytes of UTF-8 text.
struct GameIdVisitor;

impl serde::de::Visitor<'_> for GameIdVisitor {
    type Value = GameId;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<GameId, E> {
        Uuid::parse_str(s)
            .map(GameId)
            .map_err(|_| E::custom("game_id must be a hyphenated UUID string"))
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<GameId, E> {
        match std::str::from_utf8(v) {
            Ok(s) => self.visit_str(s),
            Err(_) => Err(E::invalid_value(serde::de::Unexpected::Bytes(v), &self)),
        }
    }
}
