//! Server options: command-line flags, each also settable from the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// The Elementals game server: WebSocket play, HTTP API and web client on one port.
#[derive(Debug, Clone, Parser)]
#[command(name = "elementals-server", version)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "ELEMENTALS_LISTEN", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,

    /// SQLite database file (created, and migrated, at start).
    #[arg(long, env = "ELEMENTALS_DATABASE", default_value = "elementals.db")]
    pub database: PathBuf,

    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "ELEMENTALS_LOG_JSON")]
    pub log_json: bool,

    /// Most connections open at once; more are refused with 503 before the upgrade.
    #[arg(long, env = "ELEMENTALS_MAX_CONNECTIONS", default_value_t = 19_000)]
    pub max_connections: usize,

    /// Seconds between WebSocket pings to each client.
    #[arg(long, env = "ELEMENTALS_HEARTBEAT_SECS", default_value_t = 20)]
    pub heartbeat_secs: u64,

    /// Seconds without any frame from a client before it is disconnected.
    #[arg(long, env = "ELEMENTALS_IDLE_TIMEOUT_SECS", default_value_t = 60)]
    pub idle_timeout_secs: u64,

    /// Seconds a new connection has to send `hello` and sign in.
    #[arg(long, env = "ELEMENTALS_AUTH_TIMEOUT_SECS", default_value_t = 30)]
    pub auth_timeout_secs: u64,

    /// Days a session token stays valid.
    #[arg(long, env = "ELEMENTALS_TOKEN_DAYS", default_value_t = 30)]
    pub token_days: u64,

    /// Messages per second allowed per connection (bursts of twice this).
    #[arg(long, env = "ELEMENTALS_MESSAGE_RATE", default_value_t = 20)]
    pub message_rate: u32,

    /// Seconds both players have to commit in round 1 before the game is aborted.
    #[arg(long, env = "ELEMENTALS_FIRST_COMMIT_SECS", default_value_t = 30)]
    pub first_commit_secs: u64,

    /// argon2id memory cost in KiB (the OWASP-recommended 19 MiB by default).
    #[arg(long, env = "ELEMENTALS_ARGON2_MEMORY_KIB", default_value_t = 19_456)]
    pub argon2_memory_kib: u32,
}

impl Config {
    /// Defaults, for tests and embedding: as if started with no flags.
    pub fn with_database(database: PathBuf) -> Config {
        let mut config = Config::parse_from(["elementals-server"]);
        config.database = database;
        config.listen = "127.0.0.1:0".parse().expect("valid address");
        config
    }

    pub fn heartbeat(&self) -> Duration {
        Duration::from_secs(self.heartbeat_secs.max(1))
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs.max(1))
    }

    pub fn auth_timeout(&self) -> Duration {
        Duration::from_secs(self.auth_timeout_secs.max(1))
    }

    pub fn token_ttl(&self) -> Duration {
        Duration::from_secs(self.token_days * 24 * 3600)
    }
}
