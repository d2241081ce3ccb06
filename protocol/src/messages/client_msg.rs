//! `ClientMsg`: every message a client sends, with its request id; byte fields are
//! MessagePack bin and only bin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rules::{Element, Variant};
use crate::time_control::TimeControl;

use super::{GameId, RequestId};

/// Messages a client sends to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    // --- connection ---
    /// Must be the first message. Answered by `welcome` or `error` (then close).
    Hello {
        id: RequestId,
        protocol_version: u32,
        #[serde(default)]
        client: Option<String>,
        /// Ask for batches: several messages the server sends together come as one frame
        /// holding their MessagePack array (PROTOCOL.md, "Batches"). Written only when set,
        /// so a `hello` without it is the same bytes as before the field.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        batch: bool,
    },
    /// Answered by `pong` with the same id.
    Ping {
        id: RequestId,
    },

    // --- identity ---
    Register {
        id: RequestId,
        name: String,
        password: String,
    },
    Login {
        id: RequestId,
        name: String,
        password: String,
    },
    /// Play unrated games under a generated guest name.
    Guest {
        id: RequestId,
    },
    /// Resume a session (after a dropped connection or a server restart).
    Resume {
        id: RequestId,
        token: String,
    },
    /// Revoke this session's token.
    Logout {
        id: RequestId,
    },

    // --- lobby ---
    /// Wait in the quick-pairing pool for (variant, preset time control).
    JoinPool {
        id: RequestId,
        variant: Variant,
        time_control: String,
        #[serde(default = "yes")]
        rated: bool,
    },
    LeavePool {
        id: RequestId,
    },
    CreateSeek {
        id: RequestId,
        variant: Variant,
        time_control: TimeControl,
        #[serde(default = "yes")]
        rated: bool,
    },
    CancelSeek {
        id: RequestId,
        seek_id: u64,
    },
    ListSeeks {
        id: RequestId,
    },
    AcceptSeek {
        id: RequestId,
        seek_id: u64,
    },
    Challenge {
        id: RequestId,
        opponent: String,
        variant: Variant,
        time_control: TimeControl,
        #[serde(default = "yes")]
        rated: bool,
    },
    AcceptChallenge {
        id: RequestId,
        challenge_id: u64,
    },
    DeclineChallenge {
        id: RequestId,
        challenge_id: u64,
    },
    CancelChallenge {
        id: RequestId,
        challenge_id: u64,
    },
    /// Offer a rematch after `game_id` ended; when both offer, a new game starts with seats swapped.
    /// Start a game at once against a computer opponent the server runs; never rated.
    PlayBot {
        id: RequestId,
        /// `"easy"`, `"medium"` or `"hard"`.
        strength: String,
        variant: Variant,
        /// A preset's name, as in `JoinPool`.
        time_control: String,
    },
    /// How many players are online and how many wait in each pool.
    LobbyCounts {
        id: RequestId,
    },
    OfferRematch {
        id: RequestId,
        game_id: GameId,
    },
    /// Decline the opponent's offer of a rematch of `game_id`; they are told.
    DeclineRematch {
        id: RequestId,
        game_id: GameId,
    },

    // --- playing ---
    /// With `pick` and `nonce` (both or neither), the reveal is escrowed: the server checks
    /// them against the commitment at once, keeps them secret and reveals on the player's
    /// behalf when the reveal phase opens (PROTOCOL.md section 8 states the trade).
    Commit {
        id: RequestId,
        game_id: GameId,
        round: u32,
        #[serde(with = "bin")]
        #[schemars(with = "Bin")]
        commitment: Vec<u8>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pick: Option<Element>,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "bin_opt")]
        #[schemars(with = "Bin")]
        nonce: Option<Vec<u8>>,
    },
    Reveal {
        id: RequestId,
        game_id: GameId,
        round: u32,
        pick: Element,
        #[serde(with = "bin")]
        #[schemars(with = "Bin")]
        nonce: Vec<u8>,
    },
    Resign {
        id: RequestId,
        game_id: GameId,
    },
    /// End the game with no result and no rating change, while round 1 still waits for a
    /// commitment from either player.
    Abort {
        id: RequestId,
        game_id: GameId,
    },
    /// Offer a draw, or accept the opponent's standing offer.
    OfferDraw {
        id: RequestId,
        game_id: GameId,
    },
    DeclineDraw {
        id: RequestId,
        game_id: GameId,
    },
    /// Claim the win after the opponent's disconnect grace period ran out.
    ClaimWin {
        id: RequestId,
        game_id: GameId,
    },
    /// Ask for a fresh snapshot of a game this connection plays or watches.
    Sync {
        id: RequestId,
        game_id: GameId,
    },

    /// The asker's open games and what each waits for (answered `open_games`).
    MyGames {
        id: RequestId,
    },

    // --- spectating ---
    ListGames {
        id: RequestId,
    },
    Watch {
        id: RequestId,
        game_id: GameId,
    },
    Unwatch {
        id: RequestId,
        game_id: GameId,
    },
}

fn yes() -> bool {
    true
}

/// Byte fields (commitments, nonces) as MessagePack bin, and only bin: `serde_bytes`
/// alone would also take a string's UTF-8 bytes or an array of integers, so a client
/// sending a commitment as hex text would be told it has the wrong length, not the wrong type.
mod bin {
    use serde::de::{Deserializer, Error, Visitor};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        serde_bytes::serialize(bytes, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct BinOnly;
        impl Visitor<'_> for BinOnly {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("MessagePack bin")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        d.deserialize_byte_buf(BinOnly)
    }
}

/// A byte field's schema. JSON has no bytes: the schema names the MessagePack type in
/// `x-msgpack` and describes the bytes as JSON would carry them (base64), which is also how
/// the conformance check (`crate::conformance`) renders a frame's bins.
struct Bin;

impl JsonSchema for Bin {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Bytes".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::Bytes").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Bytes, as a MessagePack bin: never a str (of hex or otherwise), never an array. Commitments and nonces are exactly 32 bytes (other lengths decode, and are answered `bad_commitment` or `bad_nonce`).",
            "type": "string",
            "contentEncoding": "base64",
            "x-msgpack": "bin"
        })
    }
}

/// An optional byte field: absent, or MessagePack bin (see [`bin`]).
mod bin_opt {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => super::bin::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        super::bin::deserialize(d).map(Some)
    }
}

impl ClientMsg {
    /// The request id, which every client message carries.
    pub fn id(&self) -> RequestId {
        use ClientMsg::*;
        match self {
            Hello { id, .. }
            | Ping { id }
            | Register { id, .. }
            | Login { id, .. }
            | Guest { id }
            | Resume { id, .. }
            | Logout { id }
            | JoinPool { id, .. }
            | LeavePool { id }
            | CreateSeek { id, .. }
            | CancelSeek { id, .. }
            | ListSeeks { id }
            | AcceptSeek { id, .. }
            | Challenge { id, .. }
            | AcceptChallenge { id, .. }
            | DeclineChallenge { id, .. }
            | CancelChallenge { id, .. }
            | PlayBot { id, .. }
            | LobbyCounts { id }
            | OfferRematch { id, .. }
            | DeclineRematch { id, .. }
            | Commit { id, .. }
            | Reveal { id, .. }
            | Resign { id, .. }
            | Abort { id, .. }
            | OfferDraw { id, .. }
            | DeclineDraw { id, .. }
            | ClaimWin { id, .. }
            | Sync { id, .. }
            | MyGames { id }
            | ListGames { id }
            | Watch { id, .. }
            | Unwatch { id, .. } => *id,
        }
    }
}
