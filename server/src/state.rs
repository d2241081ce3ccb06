//! What every connection and HTTP handler shares: the server's parts, built once by
//! `server::run`.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use elementals_protocol::messages::Limits;
use elementals_protocol::wire::MAX_CLIENT_MESSAGE_BYTES;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Auth;
use crate::config::Config;
use crate::db::{Db, LeaderboardCache};
use crate::limits::AbuseLimits;
use crate::lobby::LobbyHandle;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::transcript::Signing;

/// What every connection and HTTP handler shares.
pub struct AppState {
    pub config: Config,
    pub db: Db,
    pub auth: Auth,
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub lobby: LobbyHandle,
    pub next_conn_id: AtomicU64,
    /// Fires when the server begins shutting down: connections say goodbye and close.
    pub shutdown: CancellationToken,
    /// Set at shutdown: the lobby starts no new games.
    pub shutting_down: Arc<AtomicBool>,
    /// One permit per open WebSocket connection.
    pub connection_permits: Arc<Semaphore>,
    /// Per-address connection counts and failed-login windows.
    pub abuse: AbuseLimits,
    /// Connection tasks, awaited at shutdown.
    pub tasks: TaskTracker,
    /// The leaderboard's first page, read at most once per `--leaderboard-cache-ms`.
    pub leaderboard: LeaderboardCache,
    /// Signs finished games' transcripts.
    pub signing: Signing,
}

impl AppState {
    pub fn limits(&self) -> Limits {
        Limits {
            max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as u32,
            max_messages_per_s: self.config.message_rate,
            heartbeat_ms: self.config.heartbeat().as_millis() as u64,
            idle_timeout_ms: self.config.idle_timeout().as_millis() as u64,
            max_rounds: self.config.max_rounds(),
            first_commit_ms: self.config.first_commit_secs * 1000,
        }
    }
}
