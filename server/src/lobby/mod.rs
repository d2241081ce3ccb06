//! The lobby: one actor that owns the pools, open seeks, challenges and rematch offers,
//! and starts games.
//!
//! Connections send it requests by the bus (`LobbyHandle`, `Bus::to_lobby`: a bounded
//! queue), each saying where its answer goes; the lobby answers each to its connection
//! itself. It never waits on a game or a connection: it hands a game it starts to the
//! bus (`Bus::start_game`), which starts it on the node of one of its players
//! (`seating.rs`: the actor, and a short task that seats the players), and each game's
//! node tells it when the game ends (`LobbyCmd::Ended`), for rematches.
//!
//! There is one lobby however many nodes serve: a single node runs it from its start; in
//! a cluster it runs on the node that holds its lease (`LOBBY_LEASE`, claimed as a game's
//! is), every other node's bus forwards requests to it, and it stops when its alarm
//! sounds (the lease lost). What each connection has open in it (its pool entry, seeks,
//! challenges: a `Holding`) is kept by the connection's node, told by the lobby at each
//! change, so that a lobby that starts elsewhere is given it again (`LobbyCmd::Restore`).

mod actor;
pub mod pairing;
mod seating;

pub use seating::install_starter;

pub use actor::MAX_COUNTED_POOLS;
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use actor::MAX_OPEN_PER_ACCOUNT;

use std::sync::Arc;

use std::sync::atomic::AtomicBool;

use elementals_protocol::messages::PoolCount;
use elementals_protocol::ErrorCode;

use crate::alarms::Alarm;
use crate::bots::Bots;
use crate::bus::{Bus, ConnId};
use crate::game::GameServices;
use crate::record::AccountId;

pub use crate::msg::{
    EndedGame, Holding, LobbyCmd, Member, NewGame, LOBBY_CHANNEL_CAPACITY, LOBBY_LEASE,
};

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

/// The lobby, reached by the bus.
#[derive(Debug, Clone)]
pub struct LobbyHandle {
    bus: Arc<dyn Bus>,
}

impl LobbyHandle {
    /// The lobby, wherever it runs.
    pub fn new(bus: Arc<dyn Bus>) -> Self {
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

/// What starting the lobby on this node takes.
#[derive(Clone)]
pub struct LobbyStarter {
    pub services: GameServices,
    pub bots: Arc<Bots>,
    pub shutting_down: Arc<AtomicBool>,
    /// Unfinished correspondence games an account may sit in at once
    /// (`--max-correspondence-games`).
    pub max_correspondence: usize,
    /// How long a game the lobby starts may take to show in the registry before it is
    /// started again (`actor/starting.rs`).
    pub start_wait: std::time::Duration,
}

impl std::fmt::Debug for LobbyStarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LobbyStarter")
    }
}

impl LobbyStarter {
    /// Starts the lobby's actor here, as its `generation` (0 on a single node; in a
    /// cluster, its lease's token), until `alarm` sounds (never, on a single node).
    pub fn start(&self, generation: i64, alarm: Alarm) {
        let bus = self.services.registry.bus();
        let rx = bus.open_lobby(generation);
        tokio::spawn(actor::run(
            rx,
            self.services.clone(),
            self.bots.clone(),
            self.shutting_down.clone(),
            (self.max_correspondence, self.start_wait),
            (generation, alarm),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::LocalBus;

    #[tokio::test]
    async fn a_gone_notice_waits_for_room_rather_than_being_lost() {
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::default());
        let mut rx = bus.open_lobby(0);
        let lobby = LobbyHandle { bus };
        // The queue is full now.
        let reply = crate::msg::ReplyTo {
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
