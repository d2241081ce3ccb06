use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use tokio::sync::watch;

use super::*;

fn info(n: i64) -> PlayerInfo {
    PlayerInfo {
        name: format!("p{n}"),
        rating: 1.0,
        guest: false,
        bot: false,
    }
}

fn finished(n: i64) -> FinishedGame {
    FinishedGame {
        players: SeatPair::new(n, n + 1),
        infos: SeatPair::new(info(n), info(n + 1)),
        ratings: SeatPair::new(1.0, 1.0),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        recorded: watch::channel(true).1,
    }
}

#[test]
fn the_most_watched_come_first_and_the_rest_are_cut() {
    let games: Vec<(u32, GameId)> = [3, 9, 0, 9, 5, 1]
        .into_iter()
        .enumerate()
        .map(|(n, spectators)| (spectators, GameId(uuid::Uuid::from_u128(n as u128))))
        .collect();
    let counts = |games: &[(u32, GameId)]| -> Vec<(u32, u128)> {
        games.iter().map(|(n, id)| (*n, id.0.as_u128())).collect()
    };
    let top = first_by_spectators(games.clone(), 3);
    assert_eq!(counts(&top), [(9, 1), (9, 3), (5, 4)]);
    let all = first_by_spectators(games, usize::MAX);
    assert_eq!(
        counts(&all),
        [(9, 1), (9, 3), (5, 4), (3, 0), (1, 5), (0, 2)]
    );
}

#[test]
fn past_its_memory_it_forgets_the_oldest_finished_games_and_goes_on() {
    // On a thread of its own, so that a deadlock fails the test instead of hanging it.
    let (done, finished_all) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let registry = Registry::new();
        let ids: Vec<GameId> = (0..FINISHED_MEMORY + 50)
            .map(|_| GameId(uuid::Uuid::new_v4()))
            .collect();
        for (n, id) in ids.iter().enumerate() {
            registry.finish_game(*id, finished(n as i64));
        }
        assert_eq!(registry.finished.len(), FINISHED_MEMORY);
        assert!(registry.finished_game(&ids[49]).is_none());
        assert!(registry.finished_game(&ids[50]).is_some());
        let later: Vec<GameId> = (0..60).map(|_| GameId(uuid::Uuid::new_v4())).collect();
        for id in &later {
            registry.finish_game(*id, finished(0));
        }
        done.send((registry, ids, later)).unwrap();
    });
    let (registry, ids, later) = finished_all
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the registry thread finished: no deadlock, no failed assertion");
    assert_eq!(registry.finished.len(), FINISHED_MEMORY);
    assert!(registry.finished_game(&ids[109]).is_none());
    assert!(registry.finished_game(&ids[110]).is_some());
    assert!(registry.finished_game(later.last().unwrap()).is_some());
    assert!(registry.finished_game(ids.last().unwrap()).is_some());
}

/// How many `your_move` pushes a connection has been queued since last asked.
fn your_moves(rx: &mut tokio::sync::mpsc::Receiver<crate::outbox::Outbound>) -> usize {
    let mut pushes = 0;
    while let Ok(item) = rx.try_recv() {
        // A push is queued as a lone frame.
        if let crate::outbox::Outbound::Frame(frame) = item {
            let msg = elementals_protocol::wire::decode_server(&frame);
            pushes += usize::from(matches!(
                msg,
                Ok(elementals_protocol::messages::ServerMsg::YourMove { .. })
            ));
        }
    }
    pushes
}

#[test]
fn a_woken_game_pushes_no_your_move_for_what_it_owed_when_it_slept() {
    use elementals_protocol::messages::{Owed, OwedAction, Phase};
    let registry = Registry::new();
    let (outbox, mut rx) = crate::outbox::Outbox::new(9, 16);
    registry.bus().connect(&outbox);
    let owed = |round| OwedNow {
        round,
        phase: Phase::Commit,
        owed: vec![Owed {
            seat: Seat::Two,
            action: OwedAction::Commit,
            deadline: Some(1),
        }],
    };
    let seats = SeatPair::new(1, 2);
    let live = |game_id| {
        let summary = LiveGame {
            game_id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::CORR_7D,
            rated: true,
            players: SeatPair::new(info(1), info(2)),
            round: 2,
            positions: Vec::new(),
            spectators: 0,
            correspondence: true,
        };
        registry.insert_game(GameHandle::new(game_id, registry.bus()), summary, seats);
    };
    registry.follow_moves(2, 9);
    // Seat two was pushed its round-2 commit before the game slept.
    let game_id = GameId(uuid::Uuid::new_v4());
    live(game_id);
    registry.set_owed(game_id, owed(2));
    assert_eq!(your_moves(&mut rx), 1);
    registry.go_dormant(game_id, seats);
    // Woken, the game owes the same: no second push. Its next round's commit is news.
    live(game_id);
    registry.set_owed_woken(game_id, owed(2));
    registry.woke(game_id);
    assert_eq!(your_moves(&mut rx), 0);
    registry.set_owed(game_id, owed(3));
    assert_eq!(your_moves(&mut rx), 1);
}
