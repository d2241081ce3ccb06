//! Games: one actor (one tokio task) per game owns all of its state.
//!
//! - `handle`: the commands (plain data, sent by the bus) and the seat-bound / watch-only
//!   handles.
//! - `actor`: the task: commands in, clocks, events out (encoded once, shared bytes),
//!   each step made durable in the game's log before anyone hears of it.
//! - `state`: the pure round state machine and clocks, driven with explicit instants; it
//!   also replays a game's log.
//! - `restore`: at startup, the unfinished games come back from their logs.
//! - `incident`: telling a mass disconnect from ordinary ones.

mod actor;
mod hibernate;
mod incident;
mod restore;
mod state;
mod sweeper;

use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::GameId;
use elementals_protocol::rules::MAX_ROUNDS;
use elementals_protocol::TimeControl;

pub use crate::bus::{GameHandle, PlayerHandle, SpectatorHandle};
pub use crate::config::Hibernation;
pub use crate::msg::{
    GameCmd, GameError, Notice, OwedNow, ReplyTo, SeatAction, GAME_CHANNEL_CAPACITY,
    SPECTATOR_CHANNEL_CAPACITY,
};
pub use crate::record::GameSetup;
pub use hibernate::install_waker;
pub use incident::Incidents;
pub use restore::{restore_games, restore_logs, Restored};
pub use sweeper::{sweep, Wakeups};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::alarms::LeaseAlarms;
use crate::clock::Clock;
use crate::db::{Db, DbResult};
use crate::metrics::Metrics;
use crate::record::LogStep;
use crate::registry::Registry;

/// Server-wide settings games run under.
#[derive(Debug, Clone)]
pub struct GameSettings {
    /// If a seat has not committed in round 1 within this window, the game is aborted, unrated.
    pub first_commit_window: Duration,
    /// Resolved rounds after which a game ends drawn (`EndReason::MaxRounds`), at most
    /// `MAX_ROUNDS`.
    pub max_rounds: u32,
    /// When a game waiting on its absent players goes to sleep (`hibernate.rs`); `None`:
    /// never (cluster mode, and the actor's own tests).
    pub hibernate: Option<Hibernation>,
}

impl Default for GameSettings {
    fn default() -> Self {
        GameSettings {
            first_commit_window: Duration::from_secs(30),
            max_rounds: MAX_ROUNDS,
            hibernate: None,
        }
    }
}

impl GameSettings {
    /// How long a disconnected player keeps the seat before the opponent may claim the
    /// win: a tenth of the bank, at least 30 s and at most 3 minutes.
    pub fn grace(&self, tc: &TimeControl) -> Duration {
        Duration::from_millis((tc.initial_ms / 10).clamp(30_000, 180_000))
    }
}

/// What a game actor needs from the rest of the server.
#[derive(Clone)]
pub struct GameServices {
    pub db: Db,
    /// Where games make their steps durable.
    pub log: LogStore,
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub settings: GameSettings,
    pub incidents: Arc<Incidents>,
    /// Cancelled at shutdown: every game stops where it stands (its log has every step it
    /// acknowledged) and is restored at the next start.
    pub stop: CancellationToken,
    /// The games' tasks, awaited at shutdown.
    pub tasks: TaskTracker,
    /// The wall clock of deadlines that outlive the process (hibernated games').
    pub clock: Clock,
    /// When the server started after being down, by `clock` (Unix milliseconds): a game
    /// that slept across it has nothing due before a grace period after it
    /// (`GameState::woken`). `None` for a cluster node that joined others running: the
    /// deadlines of the time it was down were theirs to settle.
    pub restarted_ms: Option<u64>,
    /// Tells the sweeper of hibernated games' due times (`sweeper.rs`).
    pub wakeups: Arc<Wakeups>,
    /// Cluster mode: sounded by the lease loop when this node loses a game's lease, so
    /// that the game stops at once (`alarms.rs`). `None` outside cluster mode.
    pub lease_alarms: Option<Arc<LeaseAlarms>>,
}

impl GameServices {
    pub fn new(
        db: Db,
        registry: Arc<Registry>,
        metrics: Arc<Metrics>,
        settings: GameSettings,
    ) -> Self {
        GameServices {
            log: LogStore::Db(db.clone()),
            db,
            registry,
            metrics,
            settings,
            incidents: Arc::default(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
            clock: Clock::start(),
            restarted_ms: None,
            wakeups: Arc::default(),
            lease_alarms: None,
        }
    }
}

/// Where a game's log goes.
#[derive(Clone)]
pub enum LogStore {
    /// The database, group-committed with every other game's steps.
    Db(Db),
    /// Memory, for the actor's tests on tokio's paused clock: while an actor waited on the
    /// database thread the runtime would look idle, and paused time would jump ahead.
    #[cfg(test)]
    Memory(Arc<MemoryLog>),
}

/// The steps logged in memory, and the games whose appends it refuses as a full disk would.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct MemoryLog {
    pub steps: std::sync::Mutex<Vec<(GameId, LogStep)>>,
    pub refusing: std::sync::Mutex<std::collections::HashSet<GameId>>,
}

#[cfg(test)]
impl MemoryLog {
    fn append(&self, game_id: GameId, steps: &[LogStep]) -> DbResult<()> {
        use std::sync::PoisonError;
        if self
            .refusing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&game_id)
        {
            return Err(crate::db::DbError::Io {
                what: "cannot append",
                path: "memory".into(),
                kind: std::io::ErrorKind::StorageFull,
                message: "no space left on device".into(),
            });
        }
        let mut log = self.steps.lock().unwrap_or_else(PoisonError::into_inner);
        log.extend(steps.iter().map(|s| (game_id, s.clone())));
        Ok(())
    }
}

impl LogStore {
    /// Returns once `steps` are durable.
    pub async fn append(&self, game_id: GameId, steps: &[LogStep]) -> DbResult<()> {
        match self {
            LogStore::Db(db) => db.append_log(game_id, steps).await,
            #[cfg(test)]
            LogStore::Memory(log) => log.append(game_id, steps),
        }
    }
}

/// Start a game's actor, register it (and both seats) in the registry, and return its handle.
pub fn spawn_game(setup: GameSetup, services: GameServices) -> GameHandle {
    actor::spawn(setup, services)
}
