//! The messages the tiers exchange: commands to a game and to the lobby, where each answer
//! goes, and the word a session gets back. Plain data, carried by the bus in process or
//! between nodes. A leaf: it imports nothing of the server's but the stored record's types,
//! so the bus and the database, which carry and store these, sit below the games, the lobby
//! and the registry that act on them.

mod game;
mod lobby;

pub use game::{
    GameCmd, GameError, OwedNow, SeatAction, GAME_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY,
};
pub use lobby::{
    EndedGame, Holding, LobbyCmd, Member, NewGame, LOBBY_CHANNEL_CAPACITY, LOBBY_LEASE,
};

use elementals_protocol::messages::RequestId;

/// A connection's identity on the bus (unique for the server's life).
pub type ConnId = u64;

/// Where the answer to a command for a game or the lobby goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplyTo {
    /// The connection that asked, on the bus.
    pub conn: ConnId,
    /// The request answered, if the client made one (an attach at sign-in, or the lobby's
    /// seating, answers none).
    pub request_id: Option<RequestId>,
    /// Whether the connection's session waits for `Notice::Answered` before it handles
    /// anything else (`Session::settle`).
    pub settle: bool,
}

/// Word to a connection's session (not its socket) from the game tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// A command of the connection's to a game or the lobby is answered: whatever the
    /// answer sends the client is queued before this. `ok` says whether it took effect (an
    /// attach or a watch began; a move was judged, even if refused by the rules).
    /// `request` is the request's id, if it had one: another node's answer is matched
    /// to what it owes by it (`RedisBus::owed`).
    Answered {
        ok: bool,
        request: Option<RequestId>,
    },
}

/// WebSocket close codes the server uses (also listed in PROTOCOL.md).
pub mod close {
    pub const NORMAL: u16 = 1000;
    pub const GOING_AWAY: u16 = 1001;
    pub const PROTOCOL: u16 = 1002;
    pub const UNSUPPORTED_DATA: u16 = 1003;
    pub const POLICY: u16 = 1008;
    pub const TOO_BIG: u16 = 1009;
    pub const INTERNAL: u16 = 1011;
    pub const RESTART: u16 = 1012;
    pub const SUPERSEDED: u16 = 4000;
    pub const AUTH_TIMEOUT: u16 = 4001;
    pub const HEARTBEAT_TIMEOUT: u16 = 4002;
}
