//! The lobby: one actor that owns the pools, open seeks, challenges and rematch offers,
//! and starts games.
//!
//! Connections send it requests by the bus (`LobbyHandle`, `Bus::to_lobby`: a bounded
//! queue), each saying where its answer goes; the lobby answers each to its connection
//! itself. It never waits on a game or a connection: it starts a game with `spawn_game`
//! and hands the seating to a short task of its own.

mod actor;
pub mod pairing;
pub mod shared;

pub use actor::MAX_COUNTED_POOLS;
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use actor::MAX_OPEN_PER_ACCOUNT;

use std::sync::Arc;

use elementals_protocol::messages::{GameId, PlayerInfo, PoolCount};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};

use crate::bots::Bots;
use crate::bus::{Bus, ConnId, ReplyTo};
use crate::game::GameServices;
use crate::record::AccountId;

/// Requests the lobby may have queued: every connection can have one in flight, plus
/// disconnect notices; beyond this senders wait briefly, which is the back-pressure we want.
pub const LOBBY_CHANNEL_CAPACITY: usize = 4096;

/// Who is asking: an authenticated player and their connection.
#[derive(Debug, Clone)]
pub struct Member {
    pub account: AccountId,
    pub info: PlayerInfo,
    /// Its connection, on the bus.
    pub conn_id: ConnId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LobbyError {
    pub code: ErrorCode,
    pub message: String,
}

impl LobbyError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        LobbyError {
            code,
            message: message.into(),
        }
    }
}

/// What `lobby_counts` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub online: u32,
    pub pools: Vec<PoolCount>,
}

/// A request to the lobby: plain data, sent by the bus (`Bus::to_lobby`). The lobby
/// answers each itself, to `reply` (its connection and request), and tells the session
/// (`Bus::answer`).
#[derive(Debug)]
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
            | L::PlayBot { reply, .. }
            | L::Counts { reply, .. } => Some(*reply),
            L::Gone { .. } => None,
        }
    }
}

/// The lobby, reached by the bus.
#[derive(Debug, Clone)]
pub struct LobbyHandle {
    bus: Arc<dyn Bus>,
}

impl LobbyHandle {
    /// Starts the lobby actor, reading what the bus brings it.
    pub fn spawn(
        services: GameServices,
        bots: Arc<Bots>,
        shutting_down: Arc<std::sync::atomic::AtomicBool>,
        shared: Option<shared::SharedPools>,
    ) -> Self {
        let bus = services.registry.bus();
        let rx = bus.open_lobby();
        tokio::spawn(actor::run(rx, services, bots, shutting_down, shared));
        LobbyHandle { bus }
    }

    /// Sends a request; the lobby answers it to its connection (see `LobbyCmd`). Returns
    /// once the lobby has it.
    pub async fn request(&self, cmd: LobbyCmd) {
        self.bus.to_lobby(cmd).await;
    }

    /// Never lost, even with the lobby's queue full (`Bus::notify_lobby`): a lost notice
    /// would leave the connection's seeks and challenges open for others to accept.
    pub fn gone(&self, account: AccountId, conn_id: ConnId) {
        self.bus.notify_lobby(LobbyCmd::Gone { account, conn_id });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::LocalBus;

    #[tokio::test]
    async fn a_gone_notice_waits_for_room_rather_than_being_lost() {
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::default());
        let mut rx = bus.open_lobby();
        let lobby = LobbyHandle { bus };
        // The queue is full now.
        let reply = ReplyTo {
            conn: 1,
            request_id: None,
            settle: false,
        };
        for _ in 0..LOBBY_CHANNEL_CAPACITY {
            lobby.request(LobbyCmd::ListSeeks { reply }).await;
        }
        lobby.gone(1, 10);
        lobby.gone(2, 20);
        drop(lobby);
        for _ in 0..LOBBY_CHANNEL_CAPACITY {
            assert!(matches!(rx.recv().await, Some(LobbyCmd::ListSeeks { .. })));
        }
        for expected in [(1, 10), (2, 20)] {
            match rx.recv().await {
                Some(LobbyCmd::Gone { account, conn_id }) => {
                    assert_eq!((account, conn_id), expected);
                }
                other => panic!("expected Gone {expected:?}, got {other:?}"),
            }
        }
    }
}
