//! Many hibernated games woken by their deadlines, on the real storage (SQLite), actors and
//! sweeper; the games are made in memory and put to sleep straight into storage.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::commitment;
use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;

use crate::clock::Clock;
use crate::db::{Db, Sleeper};
use crate::game::actor::timing;
use crate::game::state::GameState;
use crate::game::{
    install_waker, restore_games, sweep, GameServices, GameSettings, GameSetup, Hibernation,
    SeatAction,
};
use crate::metrics::Metrics;
use crate::record::{AccountId, RecordPlayer};
use crate::registry::Registry;

const DAY: Duration = Duration::from_secs(86_400);

/// Correspondence: a week for each phase.
const WEEKLY: TimeControl = TimeControl::CORR_7D;

fn services(db: &Db, clock: Clock) -> GameServices {
    let settings = GameSettings {
        hibernate: Some(Hibernation {
            idle: Duration::from_secs(60),
            min_deadline: Duration::from_secs(600),
        }),
        ..GameSettings::default()
    };
    let mut services = GameServices::new(
        db.clone(),
        Arc::new(Registry::new()),
        Arc::new(Metrics::default()),
        settings,
    );
    services.clock = clock;
    services
}

fn act(state: &mut GameState, seat: Seat, action: SeatAction, now: std::time::Instant) {
    state.act(seat, action, now, &mut Vec::new()).unwrap();
}

/// A game between `one` and `two` that played round 1, in which seat one committed in
/// round 2, put to sleep now (seat two's week running) straight into storage.
async fn sleeping_game(services: &GameServices, one: AccountId, two: AccountId) -> GameId {
    let player = |account_id| RecordPlayer {
        account_id,
        name: format!("p{account_id}"),
        guest: false,
        rating: 1.0,
    };
    let setup = GameSetup {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::CLASSIC,
        time_control: WEEKLY,
        rated: true,
        players: SeatPair::new(player(one), player(two)),
    };
    let now = tokio::time::Instant::now().into_std();
    let wall = services.clock.now_ms();
    let mut state = GameState::new(&setup, wall, now, timing(services, &setup), &mut Vec::new());
    let id = setup.game_id.0;
    for (round, seats) in [(1, &Seat::BOTH[..]), (2, &[Seat::One][..])] {
        for &seat in seats {
            let nonce = [round as u8 + seat.number(); 32];
            let commitment = commitment::make(&id, round, seat, 1, &nonce).to_vec();
            let commit = SeatAction::Commit {
                round,
                commitment,
                pick: None,
                nonce: None,
            };
            act(&mut state, seat, commit, now);
        }
        if round == 1 {
            for seat in Seat::BOTH {
                let nonce = [round as u8 + seat.number(); 32].to_vec();
                act(
                    &mut state,
                    seat,
                    SeatAction::Reveal {
                        round,
                        pick: 1,
                        nonce,
                    },
                    now,
                );
            }
        }
    }
    assert!(state.may_hibernate(now, Duration::from_secs(600)));
    let due_ms = state.hibernate(now);
    services
        .db
        .append_log(setup.game_id, &state.take_log())
        .await
        .unwrap();
    let seats = SeatPair::new(one, two);
    let sleeper = Sleeper {
        game_id: setup.game_id,
        due_ms,
        seats,
        summary: None,
    };
    services.db.hibernate(sleeper).await.unwrap();
    setup.game_id
}

/// Waits (on real time, bounded) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}: timed out");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn ten_thousand_hibernated_games_are_woken_by_their_deadlines_and_rated_once() {
    const GAMES: usize = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sleepers.db");
    let db = Db::open(&path).unwrap();
    let clock = Clock::start();
    let made = futures::future::join_all(
        (0..2 * GAMES).map(|i| db.create_account(format!("sleeper{i}"), "hash".into())),
    )
    .await;
    let accounts: Vec<AccountId> = made.into_iter().map(|a| a.unwrap().id).collect();
    let first = services(&db, clock);
    // All at once: the log's and the writer's batches take them together.
    let games: Vec<GameId> = futures::future::join_all(
        accounts
            .chunks(2)
            .map(|pair| sleeping_game(&first, pair[0], pair[1])),
    )
    .await;

    // A start finds them asleep and loads none of them.
    let services = services(&db, clock);
    let restored = restore_games(&services).await.unwrap();
    assert_eq!((restored.hibernated, restored.resumed), (GAMES, 0));
    assert_eq!(services.registry.live_game_count(), 0);
    install_waker(&services);
    let sweeper = tokio::spawn(sweep(services.clone()));

    // Three weeks on (seat two's week ran out after one), on tokio's paused clock.
    tokio::time::pause();
    tokio::time::advance(3 * 7 * DAY).await;
    tokio::time::resume();
    let metrics = services.metrics.clone();
    until("every game ended", || {
        metrics.games_finished.load(Relaxed) == GAMES as u64
    })
    .await;
    assert_eq!(metrics.games_woken.load(Relaxed), GAMES as u64);
    assert_eq!(services.registry.asleep_count(), 0);
    db.flush().await.unwrap();

    for (n, game_id) in games.iter().enumerate().step_by(97) {
        let record = db.game_record(game_id.to_string()).await.unwrap().unwrap();
        assert_eq!(record["result"]["winner"], "one", "{record}");
        assert_eq!(record["result"]["reason"], "time", "{record}");
        let two = db
            .account_by_id(accounts[2 * n + 1])
            .await
            .unwrap()
            .unwrap();
        assert_eq!((two.wins, two.losses), (0, 1), "rated once");
    }
    services.stop.cancel();
    sweeper.await.unwrap();
    services.registry.bus().set_waker(None);

    // Nothing is left asleep, or to restore, or to rate again.
    assert!(db.sleepers().await.unwrap().is_empty());
    assert!(db.unfinished_games().await.unwrap().is_empty());
    db.shutdown().await.unwrap();
}
