//! The lobby: one actor that owns the pools, open seeks, challenges and rematch offers,
//! and starts games.
//!
//! Connections talk to it through `LobbyHandle` (a bounded channel; requests carry a
//! oneshot for the reply). The lobby never waits on a game or a connection: it starts a
//! game with `spawn_game` and hands the seating to a short task of its own.

mod actor;
pub mod pairing;

pub use actor::MAX_COUNTED_POOLS;
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use actor::MAX_OPEN_PER_ACCOUNT;

use std::sync::Arc;

use elementals_protocol::messages::{Challenge, GameId, PlayerInfo, PoolCount, RequestId, Seek};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::sync::{mpsc, oneshot};

use crate::bots::Bots;
use crate::bus::ConnId;
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

pub type LobbyReply<T> = oneshot::Sender<Result<T, LobbyError>>;

/// What `lobby_counts` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub online: u32,
    pub pools: Vec<PoolCount>,
}

#[derive(Debug)]
pub enum LobbyCmd {
    /// Answered `Ok` once the lobby has queued the `queued` frame (request `id`) to the
    /// member's outbox itself, before any `game_start` of a pairing it makes at once: the
    /// client always hears `queued` first.
    JoinPool {
        id: RequestId,
        member: Member,
        variant: Variant,
        preset: String,
        rated: bool,
        reply: LobbyReply<()>,
    },
    LeavePool {
        account: AccountId,
        reply: LobbyReply<()>,
    },
    CreateSeek {
        member: Member,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
        reply: LobbyReply<Seek>,
    },
    CancelSeek {
        account: AccountId,
        seek_id: u64,
        reply: LobbyReply<()>,
    },
    ListSeeks {
        reply: LobbyReply<Vec<Seek>>,
    },
    AcceptSeek {
        member: Member,
        seek_id: u64,
        reply: LobbyReply<()>,
    },
    Challenge {
        member: Member,
        opponent: String,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
        reply: LobbyReply<Challenge>,
    },
    AcceptChallenge {
        member: Member,
        challenge_id: u64,
        reply: LobbyReply<()>,
    },
    DeclineChallenge {
        account: AccountId,
        challenge_id: u64,
        reply: LobbyReply<()>,
    },
    CancelChallenge {
        account: AccountId,
        challenge_id: u64,
        reply: LobbyReply<()>,
    },
    OfferRematch {
        member: Member,
        game_id: GameId,
        reply: LobbyReply<()>,
    },
    /// Answered `Ok` once the game against the bot has started.
    PlayBot {
        member: Member,
        strength: String,
        variant: Variant,
        preset: String,
        reply: LobbyReply<()>,
    },
    /// The pools as the lobby counted them last, with `account`'s own pool counted now and
    /// without them; the players online now.
    Counts {
        account: AccountId,
        reply: LobbyReply<Counts>,
    },
    /// The account's connection closed: withdraw everything it had open.
    Gone {
        account: AccountId,
        conn_id: u64,
    },
}

#[derive(Debug, Clone)]
pub struct LobbyHandle {
    tx: mpsc::Sender<LobbyCmd>,
}

impl LobbyHandle {
    /// Start the lobby actor. It stops when every handle is dropped.
    pub fn spawn(
        services: GameServices,
        bots: Arc<Bots>,
        shutting_down: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        let (tx, rx) = mpsc::channel(LOBBY_CHANNEL_CAPACITY);
        tokio::spawn(actor::run(rx, services, bots, shutting_down));
        LobbyHandle { tx }
    }

    /// Send a request built around a reply sender and wait for the answer.
    pub async fn request<T>(
        &self,
        cmd: impl FnOnce(LobbyReply<T>) -> LobbyCmd,
    ) -> Result<T, LobbyError> {
        let (reply, rx) = oneshot::channel();
        let closed = || LobbyError::new(ErrorCode::Internal, "the lobby has stopped");
        self.tx.send(cmd(reply)).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Never lost, even with the lobby's queue full (see `notify`): a lost notice would
    /// leave the connection's seeks and challenges open for others to accept.
    pub fn gone(&self, account: AccountId, conn_id: u64) {
        crate::game::notify(&self.tx, LobbyCmd::Gone { account, conn_id });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_gone_notice_waits_for_room_rather_than_being_lost() {
        let (tx, mut rx) = mpsc::channel(1);
        let lobby = LobbyHandle { tx };
        lobby.gone(1, 10);
        // The queue is full now.
        lobby.gone(2, 20);
        drop(lobby);
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
