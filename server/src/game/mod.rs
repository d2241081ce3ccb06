//! Games: one actor (one tokio task) per game owns all of its state.
//!
//! - `handle`: the command channel and the seat-bound / watch-only handles.
//! - `actor`: the task: commands in, clocks, events out (encoded once, shared bytes).
//! - `state`: the pure round state machine and clocks, driven with explicit instants.

mod actor;
mod handle;
mod state;

use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use serde::{Deserialize, Serialize};

pub use handle::{
    GameCmd, GameError, GameHandle, PlayerHandle, SeatAction, SpectatorHandle,
    GAME_CHANNEL_CAPACITY,
};

use crate::db::Db;
use crate::metrics::Metrics;
use crate::record::RecordPlayer;
use crate::registry::Registry;

/// Everything fixed when a game is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameSetup {
    pub game_id: GameId,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    pub players: SeatPair<RecordPlayer>,
}

/// Server-wide settings games run under.
#[derive(Debug, Clone)]
pub struct GameSettings {
    /// If a seat has not committed in round 1 within this window, the game is aborted, unrated.
    pub first_commit_window: Duration,
    /// How many events a spectator may have queued before it is resynchronised.
    pub spectator_queue: usize,
}

impl Default for GameSettings {
    fn default() -> Self {
        GameSettings {
            first_commit_window: Duration::from_secs(30),
            spectator_queue: 64,
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
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub settings: GameSettings,
}

/// Start a game's actor, register it (and both seats) in the registry, and return its handle.
pub fn spawn_game(setup: GameSetup, services: GameServices) -> GameHandle {
    actor::spawn(setup, services)
}

/// A test hook on the paths that must survive a crash: with the `test-hooks` feature, the
/// process aborts at the step named by the `ELEMENTALS_CRASH_AT` environment variable.
/// The steps of a game's end, in order: `end_unlogged` (the game has ended, its end not yet
/// logged), `end_logged` (logged, `game_over` not yet sent), `record_uncommitted` (the
/// record and ratings written, their transaction not committed), `recorded` (committed,
/// `rating_update` not yet sent).
#[cfg(feature = "test-hooks")]
pub(crate) fn crash_point(step: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = CRASH_AT.get_or_init(|| std::env::var("ELEMENTALS_CRASH_AT").ok());
    if at.as_deref() == Some(step) {
        eprintln!("ELEMENTALS_CRASH_AT={step}: aborting");
        std::process::abort();
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) fn crash_point(_step: &str) {}
