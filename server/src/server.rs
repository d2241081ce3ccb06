//! Wiring: `run` builds the shared state every connection sees (`crate::state`), serves
//! until told to shut down, and then stops in order.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{Auth, Hasher};
use crate::bots::Bots;
use crate::config::Config;
use crate::db::{Db, DbError, LeaderboardCache};
use crate::game::{GameServices, GameSettings};
use crate::lobby::{LobbyHandle, LobbyStarter};
use crate::metrics::Metrics;
use crate::pruning::PruneSettings;
use crate::registry::Registry;
use crate::transcript::{KeyError, Signing};

pub use crate::state::AppState;

/// How long shutdown waits for connections to say goodbye before it flushes and exits.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long shutdown waits for the games to stop (each finishes the command in hand,
/// whose log append is one group commit) before it flushes and exits.
const GAMES_GRACE: Duration = Duration::from_secs(5);

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the listening socket: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "stopped because the game log could not be synced (see the error logged before); \
         starting again replays it"
    )]
    LogBroken,
    #[error(
        "stopped because this node's number in the cluster is no longer its own (its row \
         was forgotten while it was away); starting again takes a new one"
    )]
    NodeNumberLost,
    #[error(transparent)]
    TranscriptKey(#[from] KeyError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Redis(#[from] crate::bus::redis::RedisError),
}

/// Restore the games in progress, serve on `listener` until `shutdown` completes, then
/// stop starting games, stop the games where they stand (every step they acknowledged is
/// in their logs, and they resume at the next start), tell every client, let the
/// persistence writer flush, and return.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    crate::alloc::configure();
    // Before anything is opened: a cluster node on the wrong database must not start.
    let cluster = config.cluster()?;
    let sync_interval = match config.game_log_sync_us {
        Some(us) => Duration::from_micros(us),
        None => Db::default_sync_interval(&config.database),
    };
    let lease_node = crate::cluster::lease_node(cluster.as_ref());
    let lease = cluster.as_ref().map_or(crate::db::LEASE, |c| c.lease);
    let db = match &lease_node {
        // Cluster mode: the games this node loads below are those it claims.
        Some(node) => Db::open_leased(&config.database, sync_interval, node.clone(), lease)?,
        None => Db::open_with_sync_interval(&config.database, sync_interval)?,
    };
    // After opening: a PostgreSQL database keeps the key in a table its migrations make.
    let signing = Signing::for_config(config.transcript_key.as_deref(), &config.database)?;
    // Cluster mode: the bus over Redis, joined before any game is restored (each is
    // announced to the cluster as it opens). Left as `run` returns, however it does.
    let cluster_stop = CancellationToken::new();
    let _leave_cluster = cluster_stop.clone().drop_guard();
    let (registry, first_conn_id) = match &cluster {
        Some(cluster) => {
            let number = db
                .node_number()
                .expect("a cluster node's database has leases");
            let bus = crate::bus::RedisBus::start(cluster, number, cluster_stop.clone()).await?;
            let registry = Arc::new(Registry::with_peers(bus.clone(), bus.clone()));
            bus.spawn_ticks(registry.clone(), cluster_stop.clone());
            (registry, bus.first_conn_id())
        }
        None => (Arc::new(Registry::new()), 1),
    };
    let metrics = Arc::new(Metrics::default());
    let settings = GameSettings {
        first_commit_window: Duration::from_secs(config.first_commit_secs),
        max_rounds: config.max_rounds(),
        hibernate: config.hibernation(),
    };
    let mut services = GameServices::new(db.clone(), registry.clone(), metrics.clone(), settings);
    // The tests of one clock: this machine's clock is ahead.
    #[cfg(feature = "test-hooks")]
    if let Some(secs) = std::env::var("ELEMENTALS_SYSTEM_CLOCK_AHEAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        services.clock = services.clock.ahead(Duration::from_secs(secs));
    }
    // A cluster's nodes keep one clock for the deadlines that outlive a process (sleeping
    // games'), as for leases: the database's.
    if let Some(now_ms) = db.database_clock_ms() {
        services.clock = crate::clock::Clock::reading(now_ms);
    }
    if let Some(clock) = config.clock {
        services.clock = clock;
    }
    // The tests of a cluster's sleeping games: time has passed (two days, say) for a
    // node, which finds their deadlines passed.
    #[cfg(feature = "test-hooks")]
    if let Some(secs) = std::env::var("ELEMENTALS_CLOCK_AHEAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        services.clock = services.clock.ahead(Duration::from_secs(secs));
    }
    if lease_node.is_some() {
        services.lease_alarms = Some(Arc::default());
    }
    // A sleeping game's deadline that passed while the server (the whole cluster) was
    // down moves to a grace period after this start (`GameState::woken`).
    if !db.joined_running_cluster() {
        services.restarted_ms = Some(services.clock.now_ms());
    }
    // Before the first connection: players who come back find their games where they were.
    let restored = crate::game::restore_games(&services).await?;
    tracing::info!(
        resumed = restored.resumed,
        recorded = restored.recorded,
        aborted = restored.aborted,
        hibernated = restored.hibernated,
        "games restored from the log"
    );
    // Hibernated games wake on a command, and on their deadlines by the sweeper. (The
    // sweeper runs without hibernation too: games put to sleep by an earlier run wake.)
    // In cluster mode every node runs one; PostgreSQL gives each due game to one of them.
    crate::game::install_waker(&services);
    let sweeper = tokio::spawn(crate::game::sweep(services.clone()));
    let bots = Arc::new(
        Bots::load(
            &db,
            registry.bus(),
            metrics.clone(),
            services.stop.clone(),
            config.max_bot_games,
        )
        .await?,
    );
    let bots_resumed = bots.resume_games(&registry);
    // Games the lobby starts on this node, wherever it runs.
    crate::lobby::install_starter(&services, &bots);
    tracing::info!(bots_resumed, "the computer's games resumed");
    let games = services.clone();
    let shutting_down = Arc::new(AtomicBool::new(false));
    let lobby = LobbyHandle::new(registry.bus());
    let starter = LobbyStarter {
        services: services.clone(),
        bots: bots.clone(),
        shutting_down: shutting_down.clone(),
        max_correspondence: config.max_correspondence_games,
        start_wait: config.start_wait(),
    };
    // One lobby for the cluster: a single node runs it; a cluster's node runs it while it
    // holds its lease (the lease loop claims it).
    match lease_node {
        Some(node_id) => {
            tracing::info!(%node_id, "cluster mode: renewing this node's game leases, claiming lapsed ones");
            crate::cluster::start(services, bots, starter, lease).await;
        }
        None => starter.start(0, crate::alarms::Alarm::never()),
    }
    let auth = Auth {
        db: db.clone(),
        hasher: Hasher::new(config.argon2_memory_kib, config.sign_in_wait()),
        token_ttl_ms: config.token_ttl().as_millis() as u64,
        max_sessions: config.max_sessions_per_account,
        clock: games.clock,
    };
    let leaderboard_ttl = config.leaderboard_cache();
    let state = Arc::new(AppState {
        connection_permits: Arc::new(Semaphore::new(config.max_connections)),
        abuse: config.abuse_limits(),
        config,
        db: db.clone(),
        auth,
        registry,
        metrics,
        lobby,
        next_conn_id: AtomicU64::new(first_conn_id),
        shutdown: CancellationToken::new(),
        shutting_down,
        tasks: TaskTracker::new(),
        leaderboard: LeaderboardCache::new(leaderboard_ttl, crate::api::MAX_LIST),
        signing,
    });
    let pruner = tokio::spawn(crate::pruning::run(
        db.clone(),
        state.registry.clone(),
        PruneSettings {
            interval: state.config.prune_interval(),
            guest_retention: state.config.guest_retention(),
        },
        state.shutdown.clone(),
    ));
    let app = crate::http::router(state.clone());
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "serving");

    let stop = state.shutdown.clone();
    let flag = state.shutting_down.clone();
    let stop_games = games.stop.clone();
    // A failed sync of the game log ends the process: what the kernel failed to write may
    // be gone from its cache too, so nothing after it can be made durable; the restart
    // replays what the log holds.
    // So does a cluster node's losing its number: another node may run under it.
    let log_broken = Arc::new(AtomicBool::new(false));
    let number_lost = Arc::new(AtomicBool::new(false));
    let (broken, lost) = (log_broken.clone(), number_lost.clone());
    let log = db.clone();
    let signal = async move {
        tokio::select! {
            () = shutdown => {}
            () = log.log_broken() => broken.store(true, Ordering::SeqCst),
            () = log.node_number_lost() => lost.store(true, Ordering::SeqCst),
        }
        tracing::info!("shutting down: no new connections or games");
        flag.store(true, Ordering::SeqCst);
        // Games stop before their players are told, so that no clock runs out while the
        // players are being disconnected.
        stop_games.cancel();
        stop.cancel();
    };
    crate::accept::serve(listener, app, &state.config, &state.metrics, signal).await?;

    // Upgraded WebSocket connections outlive hyper's graceful shutdown: wait for ours.
    state.tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close in time");
    }
    games.tasks.close();
    if tokio::time::timeout(GAMES_GRACE, games.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("some games did not stop in time");
    }
    // Stopped with the connections; a batch under way finishes first.
    let _ = pruner.await;
    // Stopped with the games. The waker and the starter hold the games' services: let
    // them go.
    let _ = sweeper.await;
    games.registry.bus().set_waker(None);
    games.registry.bus().set_starter(None);
    // Everything the games and connections sent is committed before this returns.
    db.shutdown().await?;
    if log_broken.load(Ordering::SeqCst) {
        return Err(ServerError::LogBroken);
    }
    if number_lost.load(Ordering::SeqCst) {
        return Err(ServerError::NodeNumberLost);
    }
    tracing::info!("stopped");
    Ok(())
}
