//! Every message of the protocol, in both directions.
//!
//! Each message is a MessagePack map with string keys and a `type` field naming it
//! (serde's internally tagged enums, encoded with `rmp_serde::to_vec_named`). Requests
//! from a client carry an `id` that the direct reply (`ok`, `error` or a typed reply)
//! echoes. Game events carry the game's `seq` number, counted from 1 per game, the same
//! for players and spectators, so a client that missed some can ask for a snapshot.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ErrorCode;
use crate::rating::RatingChange;
use crate::rules::{Element, Outcome, Seat, Variant};
use crate::time_control::TimeControl;

/// A request id chosen by the client, echoed in the reply.
pub type RequestId = u32;

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

/// One value per seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SeatPair<T> {
    pub one: T,
    pub two: T,
}

impl<T> SeatPair<T> {
    pub fn new(one: T, two: T) -> Self {
        SeatPair { one, two }
    }
    pub fn get(&self, seat: Seat) -> &T {
        match seat {
            Seat::One => &self.one,
            Seat::Two => &self.two,
        }
    }
    pub fn get_mut(&mut self, seat: Seat) -> &mut T {
        match seat {
            Seat::One => &mut self.one,
            Seat::Two => &mut self.two,
        }
    }
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> SeatPair<U> {
        SeatPair {
            one: f(self.one),
            two: f(self.two),
        }
    }
}

/// Messages a client sends to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    // --- connection ---
    /// Must be the first message. Answered by `welcome` or `error` (then close).
    Hello {
        id: RequestId,
        protocol_version: u32,
        #[serde(default)]
        client: Option<String>,
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
    OfferRematch {
        id: RequestId,
        game_id: GameId,
    },

    // --- playing ---
    Commit {
        id: RequestId,
        game_id: GameId,
        round: u32,
        #[serde(with = "bin")]
        commitment: Vec<u8>,
    },
    Reveal {
        id: RequestId,
        game_id: GameId,
        round: u32,
        pick: Element,
        #[serde(with = "bin")]
        nonce: Vec<u8>,
    },
    Resign {
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
            | OfferRematch { id, .. }
            | Commit { id, .. }
            | Reveal { id, .. }
            | Resign { id, .. }
            | OfferDraw { id, .. }
            | DeclineDraw { id, .. }
            | ClaimWin { id, .. }
            | Sync { id, .. }
            | ListGames { id }
            | Watch { id, .. }
            | Unwatch { id, .. } => *id,
        }
    }
}

/// A signed-in account as others see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    pub rating: f64,
    pub guest: bool,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// A player in a game, with the rating as it was when the game started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayerInfo {
    pub name: String,
    pub rating: f64,
    pub guest: bool,
}

/// What a game is, fixed at its start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clocks {
    pub one_ms: u64,
    pub two_ms: u64,
    pub running: SeatPair<bool>,
}

/// One resolved round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round: u32,
    pub picks: SeatPair<Element>,
    pub outcome: Outcome,
    /// Every element's position after the round (index = element - 1).
    pub positions: Vec<i16>,
}

/// Where a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameResult {
    /// `None` for a draw or an abort.
    pub winner: Option<Seat>,
    pub reason: EndReason,
}

/// Everything needed to draw a game from scratch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// A live game in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveGame {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<PlayerInfo>,
    pub round: u32,
    pub positions: Vec<i16>,
    pub spectators: u32,
}

/// An open seek anyone may accept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seek {
    pub seek_id: u64,
    pub by: PlayerInfo,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// A direct challenge from one player to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Challenge {
    pub challenge_id: u64,
    pub from: PlayerInfo,
    pub to: String,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// Limits a server announces in `welcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_message_bytes: u32,
    pub max_messages_per_s: u32,
    pub heartbeat_ms: u64,
    pub idle_timeout_ms: u64,
    /// Resolved rounds after which a game ends drawn (`max_rounds`), at most `MAX_ROUNDS`.
    pub max_rounds: u32,
}

/// Messages the server sends to a client. Clients should ignore fields they do not know,
/// so that a server may add fields without a new protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    // --- replies (echo the request id) ---
    Welcome {
        id: RequestId,
        protocol_version: u32,
        server: String,
        limits: Limits,
    },
    Pong {
        id: RequestId,
    },
    Ok {
        id: RequestId,
    },
    /// `id` is absent when the error answers no request (for example an undecodable frame).
    Error {
        id: Option<RequestId>,
        code: ErrorCode,
        message: String,
    },
    Authenticated {
        id: RequestId,
        account: Account,
        /// Opaque session token (64 hex characters); keep it to `resume`.
        token: String,
        /// Unix time in milliseconds.
        token_expires_at: u64,
        /// The live game this account holds a seat in, whose `snapshot` follows at once;
        /// `None` when it holds none (a client coming back knows at once whether its
        /// game is still on). Absent from older servers' frames, which reads as `None`.
        #[serde(default)]
        game_id: Option<GameId>,
    },
    Queued {
        id: RequestId,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
    },
    SeekCreated {
        id: RequestId,
        seek: Seek,
    },
    Seeks {
        id: RequestId,
        seeks: Vec<Seek>,
    },
    ChallengeSent {
        id: RequestId,
        challenge: Challenge,
    },
    LiveGames {
        id: RequestId,
        games: Vec<LiveGame>,
    },
    /// A full picture of a game: the reply to `watch` and `sync`, and pushed to a player
    /// whose session resumes into a game. `seat` is the receiver's seat, if any.
    Snapshot {
        id: Option<RequestId>,
        snapshot: GameSnapshot,
        seat: Option<Seat>,
    },

    // --- lobby pushes ---
    /// While waiting in a pool, about once a second.
    QueueStatus {
        players_waiting: u32,
        /// Current allowed rating difference.
        rating_window: f64,
        waited_ms: u64,
    },
    ChallengeReceived {
        challenge: Challenge,
    },
    ChallengeDeclined {
        challenge_id: u64,
    },
    ChallengeCancelled {
        challenge_id: u64,
    },
    SeekRemoved {
        seek_id: u64,
    },
    RematchOffered {
        game_id: GameId,
        by: Seat,
    },

    // --- game (to its two players; spectators get `snapshot` instead) ---
    /// A game starts for this player, seated at `seat`.
    GameStart {
        game: GameInfo,
        seat: Seat,
    },
    /// The number of spectators changed (batched, at most about once a second).
    Spectators {
        game_id: GameId,
        count: u32,
    },

    // --- game events: numbered, identical for both players and every spectator ---
    RoundStart {
        game_id: GameId,
        seq: u64,
        round: u32,
        clocks: Clocks,
    },
    /// `seat` has committed in `round` (its commitment stays hidden).
    Committed {
        game_id: GameId,
        seq: u64,
        round: u32,
        seat: Seat,
        clocks: Clocks,
    },
    /// Both have committed: reveal by `reveal_deadline_ms` from now (or when the bank ends).
    RevealPhase {
        game_id: GameId,
        seq: u64,
        round: u32,
        reveal_ms: u64,
        clocks: Clocks,
    },
    /// `seat` has revealed a pick that matches its commitment (the pick stays hidden).
    Revealed {
        game_id: GameId,
        seq: u64,
        round: u32,
        seat: Seat,
        clocks: Clocks,
    },
    RoundResult {
        game_id: GameId,
        seq: u64,
        record: RoundRecord,
        clocks: Clocks,
    },
    DrawOffered {
        game_id: GameId,
        seq: u64,
        by: Seat,
    },
    DrawDeclined {
        game_id: GameId,
        seq: u64,
        by: Seat,
    },
    /// A player's connection dropped or came back. While away, the seat is kept for
    /// `grace_ms`; after that the opponent may `claim_win`.
    Presence {
        game_id: GameId,
        seq: u64,
        seat: Seat,
        connected: bool,
        grace_ms: u64,
    },
    GameOver {
        game_id: GameId,
        seq: u64,
        result: GameResult,
        rated: bool,
        clocks: Clocks,
    },
    /// A rated game's rating changes, sent once they are durably recorded.
    RatingUpdate {
        game_id: GameId,
        seq: u64,
        ratings: SeatPair<RatingChange>,
    },

    // --- connection ---
    /// Something the client should know before the server closes the connection
    /// (`superseded`, `shutting_down`, `idle`).
    Notice {
        code: String,
        message: String,
    },
}

impl ServerMsg {
    /// The game event's sequence number, if this is a numbered game event.
    pub fn seq(&self) -> Option<u64> {
        use ServerMsg::*;
        match self {
            RoundStart { seq, .. }
            | Committed { seq, .. }
            | RevealPhase { seq, .. }
            | Revealed { seq, .. }
            | RoundResult { seq, .. }
            | DrawOffered { seq, .. }
            | DrawDeclined { seq, .. }
            | Presence { seq, .. }
            | GameOver { seq, .. }
            | RatingUpdate { seq, .. } => Some(*seq),
            _ => None,
        }
    }

    pub fn error(id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMsg::Error {
            id,
            code,
            message: message.into(),
        }
    }
}
