//! Requests to the lobby and what the lobby hands on: plain data, which the bus carries to
//! wherever the lobby runs, and a game the lobby starts (`NewGame`) to its node.

use elementals_protocol::messages::{Challenge, GameId, PlayerInfo, SeatPair, Seek};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use serde::{Deserialize, Serialize};

use super::{ConnId, ReplyTo};
use crate::record::{AccountId, GameSetup};

/// The lobby's lease in a cluster: a row of `game_leases` under an id no game has (a
/// random game id is a version 4 UUID, never nil).
pub const LOBBY_LEASE: GameId = GameId(uuid::Uuid::nil());

/// Requests the lobby may have queued: every connection can have one in flight, plus
/// disconnect notices; beyond this senders wait briefly, which is the back-pressure we want.
pub const LOBBY_CHANNEL_CAPACITY: usize = 4096;

/// Who is asking: an authenticated player and their connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub account: AccountId,
    pub info: PlayerInfo,
    /// Its connection, on the bus.
    pub conn_id: ConnId,
}

/// What one connection has open in the lobby: kept by its node (`Bus::hold`), given to a
/// lobby that has moved, or that may have lost it (`LobbyCmd::Restore`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holding {
    pub member: Member,
    /// The pool it waits in: variant, preset, rated.
    pub pool: Option<(Variant, String, bool)>,
    pub seeks: Vec<Seek>,
    /// Its challenges to others (`Challenge::to` names them).
    pub challenges: Vec<Challenge>,
}

/// A request to the lobby: plain data, sent by the bus (`Bus::to_lobby`), across nodes
/// too. The lobby answers each itself, to `reply` (its connection and request), and tells
/// the session (`Bus::answer`).
#[derive(Debug, Serialize, Deserialize)]
pub enum LobbyCmd {
    /// Answered `queued`, before any `game_start` of a pairing it makes at once: the
    /// client always hears `queued` first.
    JoinPool {
        member: Member,
        variant: Variant,
        preset: String,
        rated: bool,
        reply: ReplyTo,
    },
    LeavePool {
        account: AccountId,
        reply: ReplyTo,
    },
    CreateSeek {
        member: Member,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
        reply: ReplyTo,
    },
    CancelSeek {
        account: AccountId,
        seek_id: u64,
        reply: ReplyTo,
    },
    ListSeeks {
        reply: ReplyTo,
    },
    AcceptSeek {
        member: Member,
        seek_id: u64,
        reply: ReplyTo,
    },
    Challenge {
        member: Member,
        opponent: String,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
        reply: ReplyTo,
    },
    AcceptChallenge {
        member: Member,
        challenge_id: u64,
        reply: ReplyTo,
    },
    DeclineChallenge {
        account: AccountId,
        challenge_id: u64,
        reply: ReplyTo,
    },
    CancelChallenge {
        account: AccountId,
        challenge_id: u64,
        reply: ReplyTo,
    },
    OfferRematch {
        member: Member,
        game_id: GameId,
        reply: ReplyTo,
    },
    /// Answered `ok` once the game against the bot has started.
    PlayBot {
        member: Member,
        strength: String,
        variant: Variant,
        preset: String,
        reply: ReplyTo,
    },
    /// The pools as the lobby counted them last, with `account`'s own pool counted now and
    /// without them; the players online now.
    Counts {
        account: AccountId,
        reply: ReplyTo,
    },
    /// The account's connection closed: withdraw everything it had open.
    Gone {
        account: AccountId,
        conn_id: ConnId,
    },
    /// Node `node` says which of its connections are open and what they have open here
    /// (its `Holding`s): sent to a lobby that has just started (its node died, or its
    /// lease moved) and after the node was cut off from the others. Entries of that
    /// node's connections that are closed go; holdings the lobby lacks are taken again as
    /// they were, silently, unless they no longer hold (the player seated since, a seek
    /// here already). Answered nothing.
    Restore {
        node: u16,
        open: Vec<ConnId>,
        holdings: Vec<Holding>,
    },
    /// Answered `ok` once the offer is withdrawn; the offerer is told. Last but two, so
    /// that the variants before it keep their places on the bus.
    DeclineRematch {
        member: Member,
        game_id: GameId,
        reply: ReplyTo,
    },
    /// A game has ended, on whichever node ran it: the lobby remembers it for rematch
    /// offers, and counts its seats and its bot's place as free. Answered nothing.
    Ended(EndedGame),
    /// Game `game_id`'s record is written: its players' ratings as it left them, which a
    /// rematch's players carry. Answered nothing.
    Rated {
        game_id: GameId,
        ratings: SeatPair<f64>,
    },
}

/// A game that has ended, as its node tells the lobby (`LobbyCmd::Ended`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndedGame {
    pub game_id: GameId,
    pub players: SeatPair<AccountId>,
    /// Who they are (their ratings as the game began): a rematch finds its opponent by
    /// name, on any node.
    pub infos: SeatPair<PlayerInfo>,
    /// Their ratings as the game began (as its record leaves them: `LobbyCmd::Rated`).
    pub ratings: SeatPair<f64>,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// A game the lobby starts, sent to the node that is to run it (`Bus::start_game`, which
/// picks one of its players' nodes): plain data, across nodes too.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewGame {
    pub setup: GameSetup,
    /// Who sits where, and the connection each is told through (`game_start`, then the
    /// snapshot); a bot's seat has no connection yet: the node makes it.
    pub players: SeatPair<Member>,
    /// The seat the computer plays, if it plays one.
    pub bot: Option<Seat>,
}

impl LobbyCmd {
    /// Where its answer goes, if it is owed one.
    pub fn reply_to(&self) -> Option<ReplyTo> {
        use LobbyCmd as L;
        match self {
            L::JoinPool { reply, .. }
            | L::LeavePool { reply, .. }
            | L::CreateSeek { reply, .. }
            | L::CancelSeek { reply, .. }
            | L::ListSeeks { reply }
            | L::AcceptSeek { reply, .. }
            | L::Challenge { reply, .. }
            | L::AcceptChallenge { reply, .. }
            | L::DeclineChallenge { reply, .. }
            | L::CancelChallenge { reply, .. }
            | L::OfferRematch { reply, .. }
            | L::DeclineRematch { reply, .. }
            | L::PlayBot { reply, .. }
            | L::Counts { reply, .. } => Some(*reply),
            L::Gone { .. } | L::Restore { .. } | L::Ended(_) | L::Rated { .. } => None,
        }
    }
}
