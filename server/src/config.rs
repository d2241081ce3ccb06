//! Server options: command-line flags, each also settable from the environment.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use elementals_protocol::rules::MAX_ROUNDS;

use crate::limits::AbuseLimits;

/// The Elementals game server: WebSocket play, HTTP API and web client on one port.
#[derive(Debug, Clone, Parser)]
#[command(name = "elementals-server", version)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "ELEMENTALS_LISTEN", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,

    /// The database: a SQLite file (a path, or `sqlite://` and a path; created and migrated
    /// at start), or PostgreSQL (`postgres://USER@HOST:PORT/DB`, migrated at start).
    /// Given twice, the last wins (`elementals-loadtest --server-arg=--database=…` overrides
    /// its local server's default).
    #[arg(
        long,
        env = "ELEMENTALS_DATABASE",
        default_value = "elementals.db",
        overrides_with = "database"
    )]
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

    /// Days a session token stays valid after its last use.
    #[arg(long, env = "ELEMENTALS_TOKEN_DAYS", default_value_t = 30)]
    pub token_days: u64,

    /// Messages per second allowed per connection (bursts of twice this).
    #[arg(long, env = "ELEMENTALS_MESSAGE_RATE", default_value_t = 20)]
    pub message_rate: u32,

    /// Seconds both players have to commit in round 1 before the game is aborted.
    #[arg(long, env = "ELEMENTALS_FIRST_COMMIT_SECS", default_value_t = 30)]
    pub first_commit_secs: u64,

    /// Most games against the computer (`play_bot`) the server (a cluster: all its nodes)
    /// runs at once, counted by the lobby; each is a game and a task of the server's own.
    /// Past it `play_bot` answers `too_many_requests`.
    #[arg(long, env = "ELEMENTALS_MAX_BOT_GAMES", default_value_t = 100)]
    pub max_bot_games: usize,

    /// argon2id memory cost in KiB (the OWASP-recommended 19 MiB by default).
    #[arg(long, env = "ELEMENTALS_ARGON2_MEMORY_KIB", default_value_t = 19_456)]
    pub argon2_memory_kib: u32,

    /// Longest a password sign-in (register, login) may expect to wait for one of the two
    /// hashing slots, by the time recent hashes took; one that would wait longer is
    /// answered `rate_limited` at once, to retry in a few seconds; 0: none waits, every
    /// sign-in that finds both slots busy is refused. (At the default cost a hash takes
    /// ~20 ms on a free core here: 5 s is ~500 waiting.)
    #[arg(long, env = "ELEMENTALS_SIGN_IN_WAIT_SECS", default_value_t = 5)]
    pub sign_in_wait_secs: u64,

    /// Most WebSocket connections open at once from one client address; more are refused
    /// with 429 before the upgrade. Also the most TCP connections one address may have
    /// in their HTTP handshake or waiting for one (a `--trusted-proxy` excepted); more
    /// are closed unanswered. 0: no per-address cap.
    #[arg(long, env = "ELEMENTALS_MAX_CONNECTIONS_PER_IP", default_value_t = 64)]
    pub max_connections_per_ip: usize,

    /// A reverse proxy whose `X-Forwarded-For` header is believed (repeatable). Without
    /// one, the header is ignored and the client address is the TCP peer's.
    #[arg(long, env = "ELEMENTALS_TRUSTED_PROXY", value_delimiter = ',')]
    pub trusted_proxy: Vec<IpAddr>,

    /// An origin browsers may open WebSockets from, e.g. `https://play.example.com`
    /// (repeatable). Default: only pages served from the request's own `Host`.
    /// Requests without an `Origin` header (native clients) are always allowed.
    #[arg(long, env = "ELEMENTALS_ALLOWED_ORIGIN", value_delimiter = ',')]
    pub allowed_origin: Vec<String>,

    /// Seconds a new TCP connection has to send a complete HTTP request head (and an
    /// idle keep-alive connection to send the next); slower ones are dropped.
    #[arg(long, env = "ELEMENTALS_HANDSHAKE_TIMEOUT_SECS", default_value_t = 10)]
    pub handshake_timeout_secs: u64,

    /// Most TCP connections still in their HTTP handshake at once; more wait, in order,
    /// for one to finish (see `--accept-queue`). Upgraded WebSockets do not count.
    #[arg(long, env = "ELEMENTALS_MAX_HANDSHAKES", default_value_t = 1024)]
    pub max_handshakes: usize,

    /// Accepted TCP connections that may wait for a handshake slot, each costing a file
    /// descriptor and a few hundred bytes. Past these, connections wait in the kernel's
    /// accept queue (at most `net.core.somaxconn`, often 4096), and past that the kernel
    /// drops their SYNs: those clients retry only after a second or more, which is what
    /// made a reconnect storm slow.
    #[arg(long, env = "ELEMENTALS_ACCEPT_QUEUE", default_value_t = 16_384)]
    pub accept_queue: usize,

    /// The game log's sync interval, in microseconds: the shortest time from the start of
    /// one `fdatasync` of the live games' log (on PostgreSQL, one commit of the step log)
    /// to the start of the next. Every move waits for its step to be durable; when moves
    /// come faster than this, those of one interval share a sync, and a move waits at most
    /// this long for it. A move after a quiet spell is synced at once. 0 syncs whenever
    /// the last sync is done. By default 500 on SQLite, 3000 on PostgreSQL (whose CPU
    /// follows its commits).
    #[arg(long, env = "ELEMENTALS_GAME_LOG_SYNC_US")]
    pub game_log_sync_us: Option<u64>,

    /// Failed logins allowed per account name per minute; more are answered `rate_limited`.
    #[arg(
        long,
        env = "ELEMENTALS_LOGIN_FAILURES_PER_ACCOUNT",
        default_value_t = 5
    )]
    pub login_failures_per_account: u32,

    /// Failed logins allowed per client address per minute.
    #[arg(long, env = "ELEMENTALS_LOGIN_FAILURES_PER_IP", default_value_t = 20)]
    pub login_failures_per_ip: u32,

    /// Accounts (registered or guest) one client address may create per hour, all at once
    /// at most; more are answered `rate_limited` with the seconds to wait. 0: no limit.
    #[arg(long, env = "ELEMENTALS_NEW_ACCOUNTS_PER_IP", default_value_t = 60)]
    pub new_accounts_per_ip: u32,

    /// Sessions (tokens) one account may hold; a new sign-in past this revokes the
    /// account's oldest sessions.
    #[arg(
        long,
        env = "ELEMENTALS_MAX_SESSIONS_PER_ACCOUNT",
        default_value_t = 10
    )]
    pub max_sessions_per_account: u32,

    /// Seconds between two prunings of expired sessions and idle guest accounts.
    #[arg(long, env = "ELEMENTALS_PRUNE_INTERVAL_SECS", default_value_t = 3600)]
    pub prune_interval_secs: u64,

    /// Days after which a guest account with no live session and no game on record is
    /// deleted (it can never sign in again: a guest has no password).
    #[arg(long, env = "ELEMENTALS_GUEST_RETENTION_DAYS", default_value_t = 7)]
    pub guest_retention_days: u64,

    /// Requests to the JSON API (`/api/…`) per second per client address, bursts of twice
    /// this; more are answered 429 with `Retry-After`. 0: no limit.
    #[arg(long, env = "ELEMENTALS_HTTP_REQUESTS_PER_IP", default_value_t = 10)]
    pub http_requests_per_ip: u32,

    /// Milliseconds the leaderboard's first page is served from memory before it is read
    /// again. 0: read every time.
    #[arg(long, env = "ELEMENTALS_LEADERBOARD_CACHE_MS", default_value_t = 1000)]
    pub leaderboard_cache_ms: u64,
    /// Resolved rounds after which a game ends drawn, unrated (reason `max_rounds`);
    /// announced in `welcome.limits`. 1 to 1000; a larger value is refused at startup, so
    /// that every game's log, record and snapshot stay bounded (`MAX_ROUNDS`).
    #[arg(
        long,
        env = "ELEMENTALS_MAX_ROUNDS",
        default_value_t = MAX_ROUNDS,
        value_parser = clap::value_parser!(u32).range(1..=MAX_ROUNDS as i64)
    )]
    pub max_rounds: u32,

    /// Unfinished correspondence games one account may sit in at once (beside at most one
    /// live game); one more is refused `too_many_games`. 1 to 50 (`MAX_CORRESPONDENCE_GAMES`).
    #[arg(
        long,
        env = "ELEMENTALS_MAX_CORRESPONDENCE_GAMES",
        default_value_t = crate::limits::MAX_CORRESPONDENCE_GAMES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(1..=crate::limits::MAX_CORRESPONDENCE_GAMES as u64)
    )]
    pub max_correspondence_games: usize,

    /// The file holding the Ed25519 key that signs finished games' transcripts (64 hex
    /// characters; created, readable by its owner only, if missing). Default: beside a
    /// SQLite database (`<database>-transcript-key`); with PostgreSQL, in the database
    /// (made by the first process to start, shared by every node on it).
    #[arg(long, env = "ELEMENTALS_TRANSCRIPT_KEY")]
    pub transcript_key: Option<PathBuf>,

    /// Cluster mode: the Redis server (`redis://HOST:PORT`) that the nodes of one cluster
    /// share for their bus, presence and game directory. Requires a PostgreSQL
    /// `--database` shared by every node. Without it the server is one node on its own.
    #[arg(long, env = "ELEMENTALS_REDIS")]
    pub redis: Option<String>,

    /// Cluster mode: the cluster's name, prefixing every Redis key and channel, so that
    /// several clusters (and tests) share one Redis. Nodes with the same database, Redis
    /// and name form one cluster.
    #[arg(
        long = "cluster",
        env = "ELEMENTALS_CLUSTER",
        default_value = "elementals"
    )]
    pub cluster_name: String,

    /// Cluster mode: this node's name, in logs and in the cluster's presence. Default:
    /// unique per process (the host's name, the process id and a random suffix).
    #[arg(long, env = "ELEMENTALS_NODE_ID")]
    pub node_id: Option<String>,

    /// Cluster mode: milliseconds a node's leases (its games' and the lobby's) last after
    /// its last renewal. It renews them every third of that, and claims lapsed ones every
    /// sixth: a dead node's games and lobby run elsewhere within 7/6 of it. Every node of
    /// a cluster takes the same.
    #[arg(long, env = "ELEMENTALS_LEASE_MS", default_value_t = 6000)]
    pub lease_ms: u64,

    /// Milliseconds one transaction of the game log (on PostgreSQL) may take before
    /// `/healthz` answers 503: a database that stalls (its connection open, nothing
    /// answered) raises no error. In cluster mode a node claims every second, so this
    /// bounds how long a stall goes unsaid.
    #[arg(long, env = "ELEMENTALS_GAME_LOG_STALL_MS", default_value_t = 5000)]
    pub game_log_stall_ms: u64,

    /// Cluster mode: milliseconds a node may be silent on the cluster's channel (each
    /// says it is alive every second) before the others take it for dead: its lobby
    /// entries are dropped and what it owes is answered. Every node of a cluster takes the
    /// same.
    #[arg(long, env = "ELEMENTALS_NODE_TIMEOUT_MS", default_value_t = 5000)]
    pub node_timeout_ms: u64,

    /// Cluster mode: milliseconds the node's subscription to Redis may bring nothing (not
    /// even its own heartbeat, sent every second) before the node takes its link to Redis
    /// for stalled: `/healthz` answers 503 and the node subscribes again on a new
    /// connection, as after a link that closed.
    #[arg(long, env = "ELEMENTALS_REDIS_SILENCE_MS", default_value_t = 3000)]
    pub redis_silence_ms: u64,

    /// Seconds without a command after which a game whose players are both away goes to
    /// sleep in storage (hibernates: no task, next to no memory) if nothing is due in it
    /// for `--hibernate-min-deadline-secs`. 0: games never hibernate. In cluster mode a
    /// sleeping game is no node's, and a command on any node wakes it there.
    #[arg(long, env = "ELEMENTALS_HIBERNATE_AFTER_SECS", default_value_t = 60)]
    pub hibernate_after_secs: u64,

    /// Seconds a game's next deadline must be away for it to hibernate (live games'
    /// deadlines are minutes away, correspondence games' days).
    #[arg(
        long,
        env = "ELEMENTALS_HIBERNATE_MIN_DEADLINE_SECS",
        default_value_t = 3600
    )]
    pub hibernate_min_deadline_secs: u64,

    /// The wall clock of deadlines that outlive the process (not a flag): tests on tokio's
    /// paused clock give each start of a server the same one. Default: read at start.
    #[arg(skip)]
    pub clock: Option<crate::clock::Clock>,
}

/// Cluster mode's settings (`--redis`, `--cluster`, `--node-id`): see `Config::cluster`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `redis://HOST:PORT`.
    pub redis_url: String,
    /// Prefixes every Redis key and channel.
    pub name: String,
    /// This node's name, unique in the cluster.
    pub node_id: String,
    /// How long its leases last after a renewal (`--lease-ms`).
    pub lease: std::time::Duration,
    /// How long its subscription may bring nothing before it is taken for stalled
    /// (`--redis-silence-ms`).
    pub silence: std::time::Duration,
    /// How long a node may be silent before the others take it for dead
    /// (`--node-timeout-ms`).
    pub node_timeout: std::time::Duration,
}

/// Why the options cannot start a server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cluster mode (--redis) needs a PostgreSQL database shared by every node: \
         --database postgres://USER@HOST:PORT/DB"
    )]
    ClusterNeedsPostgres,
    #[error("--cluster must be 1 to 64 characters of letters, digits, '-', '_' or '.'")]
    BadClusterName,
    #[error("--redis must be a redis:// URL")]
    BadRedisUrl,
}

/// When a game goes to sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hibernation {
    /// After this long with no command.
    pub idle: Duration,
    /// Only if nothing is due sooner than this (live games' deadlines are minutes away).
    pub min_deadline: Duration,
}

impl Config {
    /// Defaults, for tests and embedding: as if started with no flags.
    pub fn with_database(database: PathBuf) -> Config {
        let mut config = Config::parse_from(["elementals-server"]);
        config.database = database;
        config.listen = "127.0.0.1:0".parse().expect("valid address");
        config
    }

    /// How long a game the lobby starts may take to show before it is started again: twice
    /// the time after which a silent node is taken for dead (a start sent to a node that
    /// died is sent again, to a node that lives).
    pub fn start_wait(&self) -> std::time::Duration {
        std::time::Duration::from_millis(2 * self.node_timeout_ms.max(MIN_NODE_TIMEOUT_MS))
    }

    /// When games hibernate (`None`: never).
    pub fn hibernation(&self) -> Option<Hibernation> {
        (self.hibernate_after_secs > 0).then(|| Hibernation {
            idle: Duration::from_secs(self.hibernate_after_secs),
            min_deadline: Duration::from_secs(self.hibernate_min_deadline_secs),
        })
    }

    /// The per-address and per-account limits, as set.
    pub fn abuse_limits(&self) -> AbuseLimits {
        use crate::limits::{IpBuckets, IpConnections, LoginAttempts, LOGIN_WINDOW};
        AbuseLimits {
            connections: IpConnections::new(self.max_connections_per_ip),
            logins: LoginAttempts::new(
                self.login_failures_per_account,
                self.login_failures_per_ip,
                LOGIN_WINDOW,
            ),
            new_accounts: IpBuckets::new(
                f64::from(self.new_accounts_per_ip) / 3600.0,
                f64::from(self.new_accounts_per_ip),
            ),
            http_requests: IpBuckets::new(
                f64::from(self.http_requests_per_ip),
                2.0 * f64::from(self.http_requests_per_ip),
            ),
        }
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

    pub fn sign_in_wait(&self) -> Duration {
        Duration::from_secs(self.sign_in_wait_secs)
    }

    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_secs(self.handshake_timeout_secs.max(1))
    }

    /// The bound on a game's rounds: the option, held to `1..=MAX_ROUNDS` also when the
    /// config was built in code rather than parsed.
    pub fn max_rounds(&self) -> u32 {
        self.max_rounds.clamp(1, MAX_ROUNDS)
    }

    pub fn token_ttl(&self) -> Duration {
        Duration::from_secs(self.token_days * 24 * 3600)
    }

    pub fn prune_interval(&self) -> Duration {
        Duration::from_secs(self.prune_interval_secs.max(1))
    }

    pub fn guest_retention(&self) -> Duration {
        Duration::from_secs(self.guest_retention_days.saturating_mul(24 * 3600))
    }

    pub fn leaderboard_cache(&self) -> Duration {
        Duration::from_millis(self.leaderboard_cache_ms)
    }

    /// Cluster mode's settings, if `--redis` is given (checked: see `ConfigError`). Without
    /// `--node-id`, the node id is the process's own (the same at every call).
    pub fn cluster(&self) -> Result<Option<ClusterConfig>, ConfigError> {
        let Some(redis_url) = &self.redis else {
            return Ok(None);
        };
        if !redis_url.starts_with("redis://") {
            return Err(ConfigError::BadRedisUrl);
        }
        if !matches!(
            crate::db::Location::of(&self.database),
            crate::db::Location::Postgres(_)
        ) {
            return Err(ConfigError::ClusterNeedsPostgres);
        }
        let name = &self.cluster_name;
        let name_ok = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(ConfigError::BadClusterName);
        }
        let node_id = self.node_id.clone().unwrap_or_else(default_node_id);
        Ok(Some(ClusterConfig {
            redis_url: redis_url.clone(),
            name: name.clone(),
            node_id,
            lease: std::time::Duration::from_millis(self.lease_ms.max(MIN_LEASE_MS)),
            silence: std::time::Duration::from_millis(
                self.redis_silence_ms.max(MIN_REDIS_SILENCE_MS),
            ),
            node_timeout: std::time::Duration::from_millis(
                self.node_timeout_ms.max(MIN_NODE_TIMEOUT_MS),
            ),
        }))
    }
}

/// A node id unique per process: the host, the process id and a random suffix (a
/// restarted process may get the same pid). Made once, so every reader agrees.
/// The shortest lease `--lease-ms` sets: a renewal every 100 ms.
const MIN_LEASE_MS: u64 = 300;

/// The shortest `--node-timeout-ms`: two heartbeats.
const MIN_NODE_TIMEOUT_MS: u64 = 2000;

/// The shortest `--redis-silence-ms`: past the one-second heartbeat by half.
const MIN_REDIS_SILENCE_MS: u64 = 1500;

fn default_node_id() -> String {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(make_node_id).clone()
}

fn make_node_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".to_owned());
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    format!("{host}-{}-{suffix}", std::process::id())
}

#[cfg(test)]
mod tests;
