//! `ServerMsg`: every message a server sends (replies, game events, notices), and the
//! `Limits` it announces in `welcome`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ErrorCode;
use crate::rating::RatingChange;
use crate::rules::{Seat, Variant};
use crate::time_control::TimeControl;

use super::{
    Account, Challenge, Clocks, GameId, GameInfo, GameResult, GameSnapshot, LiveGame, MyGame,
    OwedAction, PoolCount, RequestId, RoundRecord, SeatPair, Seek,
};

/// Limits a server announces in `welcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    pub max_message_bytes: u32,
    pub max_messages_per_s: u32,
    pub heartbeat_ms: u64,
    pub idle_timeout_ms: u64,
    /// Resolved rounds after which a game ends drawn (`max_rounds`), at most `MAX_ROUNDS`.
    pub max_rounds: u32,
    /// How long round 1's commit phase waits for both commitments before the game is
    /// aborted unrated (`first_commit_ms`); the clocks do not run in that phase.
    pub first_commit_ms: u64,
}

/// Messages the server sends to a client. Clients should ignore fields they do not know,
/// so that a server may add fields without a new protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// `id` is nil when the error answers no request (for example an undecodable frame).
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
        /// The game whose `snapshot` follows at once: the account's live game, else its
        /// correspondence game seated longest; `None` when it holds no seat (a client
        /// coming back knows at once whether its game is still on). Absent from older
        /// servers' frames, which reads as `None`.
        #[serde(default)]
        game_id: Option<GameId>,
        /// Every game the account holds a seat in (its live game first, if any); the
        /// client gets each one's snapshot by `sync`. Absent when it holds none (and from
        /// older servers' frames), which reads as empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        games: Vec<GameId>,
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
    /// The reply to `my_games`: the asker's open games, each with what it waits for.
    OpenGames {
        id: RequestId,
        games: Vec<MyGame>,
    },
    Counts {
        id: RequestId,
        /// Signed-in players (the asker included).
        online: u32,
        /// The pools someone waits in (the asker not counted), most waiting first.
        pools: Vec<PoolCount>,
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
    /// The opponent declined this player's offer of a rematch.
    RematchDeclined {
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
    /// An action of this player's became owed in one of their games (`seat` must `action`
    /// in `round` by `deadline`): sent once per such change to the account's connection if
    /// it has asked `my_games` since signing in (PROTOCOL.md, `your_move`).
    YourMove {
        game_id: GameId,
        seat: Seat,
        round: u32,
        action: OwedAction,
        /// Unix milliseconds, as in `Owed`; `None` while the game's clocks are held.
        deadline: Option<u64>,
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

    /// The id of the request this message answers: `None` for pushes, game events,
    /// notices, and an error or snapshot that answers no request. Every variant is named,
    /// so that a new reply cannot be left out of the clients' routing of replies.
    pub fn reply_id(&self) -> Option<RequestId> {
        use ServerMsg::*;
        match self {
            Welcome { id, .. }
            | Pong { id }
            | Ok { id }
            | Authenticated { id, .. }
            | Queued { id, .. }
            | SeekCreated { id, .. }
            | Seeks { id, .. }
            | ChallengeSent { id, .. }
            | LiveGames { id, .. }
            | OpenGames { id, .. }
            | Counts { id, .. } => Some(*id),
            Error { id, .. } | Snapshot { id, .. } => *id,
            QueueStatus { .. }
            | ChallengeReceived { .. }
            | ChallengeDeclined { .. }
            | ChallengeCancelled { .. }
            | SeekRemoved { .. }
            | RematchOffered { .. }
            | RematchDeclined { .. }
            | GameStart { .. }
            | Spectators { .. }
            | YourMove { .. }
            | RoundStart { .. }
            | Committed { .. }
            | RevealPhase { .. }
            | Revealed { .. }
            | RoundResult { .. }
            | DrawOffered { .. }
            | DrawDeclined { .. }
            | Presence { .. }
            | GameOver { .. }
            | RatingUpdate { .. }
            | Notice { .. } => None,
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
