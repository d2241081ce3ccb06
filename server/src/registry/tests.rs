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
        rematch_offers: SeatPair::new(false, false),
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
        // One forgotten by hand (a rematch taken up) is skipped when its turn comes.
        registry.forget_finished(&ids[100]);
        let later: Vec<GameId> = (0..61).map(|_| GameId(uuid::Uuid::new_v4())).collect();
        for id in &later {
            registry.finish_game(*id, finished(0));
        }
        done.send((registry, ids, later)).unwrap();
    });
    let (registry, ids, later) = finished_all
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the registry thread finished: no deadlock, no failed assertion");
    assert_eq!(registry.finished.len(), FINISHED_MEMORY);
    assert!(registry.finished_game(&ids[110]).is_none());
    assert!(registry.finished_game(&ids[111]).is_some());
    assert!(registry.finished_game(later.last().unwrap()).is_some());
    assert!(registry.finished_game(ids.last().unwrap()).is_some());
}
