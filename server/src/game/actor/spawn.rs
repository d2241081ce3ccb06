//! Starting a game's actor: a new game, or one restored from its log. Either way the game
//! and both its seats go into the registry, and the actor runs under its supervisor, both
//! tasks tracked so that shutdown can wait for them.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use elementals_protocol::messages::{SeatPair, ServerMsg};
use tokio::time::Instant;

use super::supervisor::{self, Shared};
use super::{finished_game, Actor};
use crate::alarms::Alarm;
use crate::bus::GameInbox;
use crate::game::state::{GameState, Timing};
use crate::game::{GameHandle, GameServices, GameSetup};

/// The durations a game of `setup` runs under.
pub(in crate::game) fn timing(services: &GameServices, setup: &GameSetup) -> Timing {
    Timing {
        first_commit_window: services.settings.first_commit_window,
        grace: services.settings.grace(&setup.time_control),
        max_rounds: services.settings.max_rounds,
    }
}

pub(in crate::game) fn spawn(setup: GameSetup, services: GameServices) -> GameHandle {
    let mut events = Vec::new();
    let now = Instant::now().into_std();
    let timing = timing(&services, &setup);
    let state = GameState::new(&setup, services.clock.now_ms(), now, timing, &mut events);
    services.metrics.games_started.fetch_add(1, Relaxed);
    launch(state, setup, services, events, None)
}

/// Starts the actor of a game restored from its log (already `resume`d).
pub(in crate::game) fn spawn_restored(
    state: GameState,
    setup: GameSetup,
    services: GameServices,
) -> GameHandle {
    launch(state, setup, services, Vec::new(), None)
}

/// Starts the actor of a hibernated game just woken (`GameState::woken`), on the inbox the
/// waker opened (commands may wait in it already).
pub(in crate::game) fn spawn_woken(
    state: GameState,
    setup: GameSetup,
    services: GameServices,
    inbox: GameInbox,
) -> GameHandle {
    launch(state, setup, services, Vec::new(), Some(inbox))
}

/// Registers the game and both seats, and starts its actor under a supervisor; `first` are
/// the events to publish (after logging what the state logged) before any command.
fn launch(
    state: GameState,
    setup: GameSetup,
    services: GameServices,
    first: Vec<ServerMsg>,
    inbox: Option<GameInbox>,
) -> GameHandle {
    let bus = services.registry.bus();
    let woken = inbox.is_some();
    let inbox = inbox.unwrap_or_else(|| bus.open_game(setup.game_id));
    let handle = GameHandle::new(setup.game_id, Arc::clone(&bus));
    let started_at = state.started_at();
    let seats = SeatPair::new(setup.players.one.account_id, setup.players.two.account_id);
    services
        .registry
        .insert_game(handle.clone(), state.summary(0), seats);
    // Before `game_start` goes out, so that `my_games` lists the game from then on.
    match woken {
        true => services
            .registry
            .set_owed_woken(setup.game_id, state.owed()),
        false => services.registry.set_owed(setup.game_id, state.owed()),
    }
    services.metrics.live_games.fetch_add(1, Relaxed);
    let mut shared = Shared::default();
    // A restored game's supervisor must know its rounds before anything is published.
    shared.mirror(&state, Instant::now().into_std());
    let shared = Arc::new(Mutex::new(shared));
    let (finished, recorded) = finished_game(&setup);
    let actor = Actor {
        game_id: setup.game_id,
        state,
        rx: inbox.players,
        rx_open: true,
        spectators: inbox.spectators,
        spectators_open: true,
        judged: Instant::now(),
        incidents: Some(services.incidents.subscribe()),
        services: services.clone(),
        bus,
        shared: Arc::clone(&shared),
        finished,
        recorded,
        announce_at: None,
        announced: 0,
        deliver_at: None,
        delivering: false,
        stalled: None,
        moved: false,
        active_at: Instant::now(),
        asleep: false,
        lease_alarm: services
            .lease_alarms
            .as_ref()
            .map_or_else(Alarm::never, |alarms| alarms.arm(setup.game_id)),
    };
    let task = services.tasks.spawn(actor.run(first));
    services.tasks.spawn(supervisor::supervise(
        task,
        setup,
        services.clone(),
        shared,
        started_at,
    ));
    handle
}
