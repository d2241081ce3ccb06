//! Commands to a game, as the bus carries them (in process, or to the game's node), and
//! what a game tells of itself that other tiers keep (`OwedNow`).

use bytes::Bytes;
use elementals_protocol::messages::{Owed, Phase};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;
use tokio::time::Instant;

use super::{ConnId, ReplyTo};

/// Players' commands a game may have queued. Each connection has at most one request in
/// flight (its session waits for each answer or `settle`s), and only connections signed
/// in as the two players and the lobby's seating send here, so this only fills if the
/// actor is stuck; senders then wait.
pub const GAME_CHANNEL_CAPACITY: usize = 64;

/// Spectators' commands (`watch`, a spectator's `sync`, `unwatch`) a game may have queued.
/// The game reads them only when no player's command is waiting, so however many there
/// are they never queue ahead of a move; past this, spectators' sessions wait their turn
/// (each connection has at most one request in flight, so the waiters are bounded by the
/// connections watching).
pub const SPECTATOR_CHANNEL_CAPACITY: usize = 32;

/// A refusal from the game, answered to the client as an `error` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameError {
    pub code: ErrorCode,
    pub message: String,
}

impl GameError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        GameError {
            code,
            message: message.into(),
        }
    }

    /// What a command to a game that does not exist, or has ended, is answered.
    pub fn gone() -> Self {
        GameError::new(ErrorCode::UnknownGame, "the game has ended")
    }
}

/// A seat-bound action.
#[derive(Debug)]
pub enum SeatAction {
    /// With `pick` and `nonce`, the reveal is escrowed (both or neither; the state checks).
    Commit {
        round: u32,
        commitment: Vec<u8>,
        pick: Option<Element>,
        nonce: Option<Vec<u8>>,
    },
    Reveal {
        round: u32,
        pick: Element,
        nonce: Vec<u8>,
    },
    Resign,
    /// End the game unrated with no winner, while round 1 still waits for a commitment.
    Abort,
    OfferDraw,
    DeclineDraw,
    ClaimWin,
}

/// A command to a game: plain data (connections by identity, no channel, no socket).
#[derive(Debug)]
pub enum GameCmd {
    /// A player's connection (re)attaches to its seat; replaces any earlier one. The game
    /// queues the snapshot (answering `reply.request_id`, if any), so it is ordered with
    /// the game's events.
    Attach {
        seat: Seat,
        reply: ReplyTo,
        /// A frame queued just before the snapshot: the session's `authenticated`, which
        /// names this game, so that the two arrive together or not at all.
        prelude: Option<Bytes>,
    },
    /// A player's connection went away (ignored unless `conn_id` is the attached one).
    Detach { seat: Seat, conn_id: ConnId },
    /// A player's move. The game sends the reply (`ok` or `error`) itself: first in the
    /// same write as the events the move caused when `reply.conn` is the seat's attached
    /// connection, alone otherwise.
    Act {
        seat: Seat,
        action: SeatAction,
        reply: ReplyTo,
        /// When the move's frame was read off the socket: the game judges the move (its
        /// clock) at this instant, so time spent in the game's queue is not charged. (In
        /// process; a bus between processes carries how long ago that was.)
        arrived: Instant,
    },
    /// Start (or resynchronise) watching; the snapshot is queued like `Attach`'s. On the
    /// spectators' queue.
    Watch { reply: ReplyTo },
    /// On the spectators' queue.
    Unwatch { conn_id: ConnId },
    /// Test-only: the game as it is now.
    #[cfg(any(test, feature = "test-hooks"))]
    Snapshot {
        reply: tokio::sync::oneshot::Sender<elementals_protocol::messages::GameSnapshot>,
    },
    /// Test-only: make the actor panic, to show that one game's crash harms nothing else.
    #[cfg(any(test, feature = "test-hooks"))]
    Panic,
}

impl GameCmd {
    /// Whether the command goes on the spectators' queue, which the game reads only when
    /// no player's command waits.
    pub fn is_spectators(&self) -> bool {
        matches!(self, GameCmd::Watch { .. } | GameCmd::Unwatch { .. })
    }

    /// Where its answer goes, if it is owed one.
    pub fn reply_to(&self) -> Option<ReplyTo> {
        match self {
            GameCmd::Attach { reply, .. }
            | GameCmd::Act { reply, .. }
            | GameCmd::Watch { reply } => Some(*reply),
            _ => None,
        }
    }
}

/// A live game's round, phase and outstanding actions, as the registry keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwedNow {
    pub round: u32,
    pub phase: Phase,
    pub owed: Vec<Owed>,
}
