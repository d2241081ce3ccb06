//! Hibernation over the real server, on both backends: a game whose players are both away
//! and whose next deadline is far off goes to sleep in storage; a player's return wakes it
//! with its round kept, a restart leaves it asleep, and its deadline wakes it to end it on
//! time, rated once. On SQLite, sleeping and waking read no other game's log. (The same
//! with 10,000 games: `game::sweeper::tests`.) A deadline that passed while the server was
//! down moves to 30 s after the restart, for a sleeping game as for an awake one. Sleeping
//! games are listed, marked correspondence.

use std::time::Duration;

use crate::common::*;
use elementals_protocol::messages::{
    ClientMsg, GameId, GameSnapshot, LiveGame, Phase, SeatPair, ServerMsg,
};
use elementals_protocol::rules::Seat;
use elementals_protocol::TimeControl;
use elementals_server::clock::Clock;
use elementals_server::Config;

/// Correspondence: a week for each phase.
const SLOW: TimeControl = TimeControl::CORR_7D;
const WEEK_MS: u64 = 7 * 86_400_000;

/// Games sleep after 1 s without a command if nothing is due for 10 minutes.
fn hibernating(config: &mut Config) {
    config.hibernate_after_secs = 1;
    config.hibernate_min_deadline_secs = 600;
    // The tests poll the JSON API for a record.
    config.http_requests_per_ip = 0;
}

/// `play_and_leave_at` with a game of `SLOW` (`corr-7d`) between `a` and `b`; returns
/// once the game sleeps.
async fn put_to_sleep(server: &TestServer, a: &str, b: &str) -> LeftGame {
    let asleep = play_and_leave_at(server.addr, a, b, SLOW).await;
    until_metric(server, "elementals_hibernated_games", 1).await;
    assert_eq!(metric(server, "elementals_live_games").await, 0);
    asleep
}

/// Signs in with `token` and returns the snapshot of the game it sits in.
async fn come_back(
    server: &TestServer,
    token: &str,
    game_id: GameId,
) -> (TestClient, GameSnapshot) {
    let mut client = TestClient::connect(server).await;
    match client.resume(token).await {
        ServerMsg::Authenticated {
            game_id: Some(g), ..
        } => assert_eq!(g, game_id),
        other => panic!("{other:?}"),
    }
    let snapshot = match client
        .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => snapshot,
        _ => unreachable!(),
    };
    client.token = Some(token.to_owned());
    (client, snapshot)
}

/// The sleeping game is woken by its players' return, its round 2 kept (seat one's
/// commitment from before it slept still opens with its reveal), and played on.
async fn woken_by_its_players_with_its_round_kept(server: &TestServer, asleep: &LeftGame) {
    let game_id = asleep.game.game_id;
    let (mut two, snapshot) = come_back(server, &asleep.tokens.1, game_id).await;
    assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Commit));
    assert!(snapshot.committed.one && !snapshot.committed.two);
    // Seat one's bank stopped at its commit; seat two's runs (it did while the game slept).
    assert_eq!(snapshot.clocks.running, SeatPair::new(false, true));
    assert!(snapshot.clocks.one_ms > WEEK_MS - 60_000);
    assert!(snapshot.clocks.two_ms < snapshot.clocks.one_ms);
    assert!(metric(server, "elementals_games_woken_total").await >= 1);
    let nonce_two = rand::random::<[u8; 32]>();
    assert_ok(&two.commit(game_id, 2, Seat::Two, 1, nonce_two).await);
    let (mut one, snapshot) = come_back(server, &asleep.tokens.0, game_id).await;
    assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Reveal));
    reveal_round_two_and_resign(asleep, &mut one, &mut two, nonce_two).await;
}

#[tokio::test]
async fn a_players_return_wakes_a_sleeping_game_with_its_round_kept() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, hibernating).await;
        let asleep = put_to_sleep(&server, "sleepy1", "sleepy2").await;
        woken_by_its_players_with_its_round_kept(&server, &asleep).await;
    }
}

#[tokio::test]
async fn a_restart_leaves_a_sleeping_game_asleep_and_it_wakes_as_it_slept() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, hibernating).await;
        let asleep = put_to_sleep(&server, "restart1", "restart2").await;
        let server = server.restart_with(hibernating).await;
        assert_eq!(metric(&server, "elementals_hibernated_games").await, 1);
        assert_eq!(metric(&server, "elementals_live_games").await, 0);
        woken_by_its_players_with_its_round_kept(&server, &asleep).await;
    }
}

/// SQLite's step log is a file that only a pass over it could read one game from: a game
/// going to sleep reads its own frames (by where they are), moving them into the database,
/// and a wake reads its log from there, none from the file.
#[tokio::test]
async fn on_sqlite_sleeping_and_waking_read_no_other_games_log() {
    const READ: &str = "elementals_game_log_frames_read_total";
    let server = start_server_with(hibernating).await;
    let first = put_to_sleep(&server, "many0a", "many0b").await;
    let one_game = metric(&server, READ).await;
    assert!(one_game > 0);
    // Eight more games, played alike, go to sleep, the file holding the others' frames.
    let names: Vec<(String, String)> = (1..=8)
        .map(|n| (format!("many{n}a"), format!("many{n}b")))
        .collect();
    let games = names
        .iter()
        .map(|(a, b)| play_and_leave_at(server.addr, a, b, SLOW));
    futures::future::join_all(games).await;
    until_metric(&server, "elementals_hibernated_games", 9).await;
    assert_eq!(metric(&server, READ).await, 9 * one_game);
    // The first game's wake reads nothing from the file.
    woken_by_its_players_with_its_round_kept(&server, &first).await;
    assert_eq!(metric(&server, READ).await, 9 * one_game);
}

#[tokio::test]
async fn a_deadline_wakes_a_sleeping_game_which_is_lost_on_time_and_rated_once() {
    for backend in BACKENDS {
        deadline_wakes_on(backend).await;
    }
}

async fn deadline_wakes_on(backend: Backend) {
    let server = start_server_on_with(backend, hibernating).await;
    let asleep = put_to_sleep(&server, "late1", "late2").await;
    // Seat two's week runs out while the game sleeps: on tokio's paused clock, which the
    // server's wall clock follows, three weeks pass at once.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3 * 7 * 86_400)).await;
    tokio::time::resume();
    until_metric(&server, "elementals_games_finished_total", 1).await;
    assert_eq!(metric(&server, "elementals_hibernated_games").await, 0);
    let (one, two) = (&asleep.game.players.one.name, &asleep.game.players.two.name);
    // The record is written just after the game ends.
    until("the loss recorded", WAIT, async || {
        equal(wins_and_losses_at(server.addr, two).await, (0, 1))
    })
    .await;
    assert_eq!(wins_and_losses_at(server.addr, one).await, (1, 0));
    let record = game_record_at(server.addr, asleep.game.game_id).await;
    assert_eq!(record["result"]["reason"], "time", "{record}");

    // Rated once: nothing is left to wake or restore.
    let server = server.restart_with(hibernating).await;
    assert_eq!(metric(&server, "elementals_hibernated_games").await, 0);
    assert_eq!(metric(&server, "elementals_live_games").await, 0);
    assert_eq!(wins_and_losses_at(server.addr, two).await, (0, 1));
}

#[tokio::test]
async fn players_returning_at_once_wake_one_game() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, hibernating).await;
        let asleep = put_to_sleep(&server, "twice1", "twice2").await;
        let game_id = asleep.game.game_id;
        let ((_one, a), (_two, b)) = tokio::join!(
            come_back(&server, &asleep.tokens.0, game_id),
            come_back(&server, &asleep.tokens.1, game_id),
        );
        assert_eq!((a.round, b.round), (2, 2));
        assert_eq!(metric(&server, "elementals_games_woken_total").await, 1);
        assert_eq!(metric(&server, "elementals_live_games").await, 1);
        assert_eq!(metric(&server, "elementals_hibernated_games").await, 0);
    }
}

/// Moves the server's wall clock (tokio's, which a paused test moves) by `by` at once.
async fn time_passes(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// Seat two comes back to `game` and finds it on, owing its round-2 commit with about 30 s
/// left (the restart's grace period, less the moments since it), its bank running.
async fn thirty_seconds_left(server: &TestServer, game: &LeftGame) -> TestClient {
    let (two, snapshot) = come_back(server, &game.tokens.1, game.game.game_id).await;
    assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Commit));
    assert!(snapshot.result.is_none(), "{snapshot:?}");
    assert_eq!(snapshot.clocks.running, SeatPair::new(false, true));
    assert!(
        (20_000..=30_000).contains(&snapshot.clocks.two_ms),
        "{snapshot:?}"
    );
    two
}

/// The server is down for eight days, over seat two's week to commit in two games: one
/// asleep, one awake (its players connected) when the server stopped. After the restart
/// both give seat two the same 30 s, and end on time only then.
#[tokio::test]
async fn a_deadline_passed_while_the_server_was_down_moves_to_30_s_after_the_restart() {
    for backend in BACKENDS {
        // One wall clock for both starts, moved by tokio's paused clock.
        let clock = Clock::start();
        let config = move |config: &mut Config| {
            hibernating(config);
            config.clock = Some(clock);
        };
        let mut server = start_server_on_with(backend, config).await;
        let asleep = put_to_sleep(&server, "down1", "down2").await;
        let (awake, _one, _two) = play_to_round_two_at(server.addr, "down3", "down4", SLOW).await;
        server.stop().await;
        time_passes(Duration::from_secs(8 * 86_400)).await;
        let server = server.restart_with(config).await;

        let mut seat_two = Vec::new();
        for game in [&asleep, &awake] {
            seat_two.push(thirty_seconds_left(&server, game).await);
        }
        time_passes(Duration::from_secs(30)).await;
        for (client, game) in seat_two.iter_mut().zip([&asleep, &awake]) {
            let game_id = game.game.game_id;
            let over = client
                .expect(
                    "game_over",
                    |m| matches!(m, ServerMsg::GameOver { game_id: g, .. } if *g == game_id),
                )
                .await;
            let ServerMsg::GameOver { result, .. } = over else {
                unreachable!()
            };
            assert_eq!(result.winner, Some(Seat::One));
            assert_eq!(
                result.reason,
                elementals_protocol::messages::EndReason::Time
            );
        }
    }
}

/// `game` as `list_games` and `GET /api/games/live` list it (both must).
async fn listed(server: &TestServer, game: GameId) -> LiveGame {
    let mut client = TestClient::connect(server).await;
    let id = client.id();
    let ServerMsg::LiveGames { games, .. } = client.request(ClientMsg::ListGames { id }).await
    else {
        panic!("no live_games")
    };
    let found = games.into_iter().find(|g| g.game_id == game);
    let found = found.unwrap_or_else(|| panic!("{game} not in list_games"));
    let (status, body) = server.http_get("/api/games/live").await;
    assert_eq!(status, 200, "{body}");
    let over_http: Vec<LiveGame> = serde_json::from_str(&body).unwrap();
    assert!(over_http.contains(&found), "{game} not so in {body}");
    found
}

/// A sleeping game is listed as it stood when it slept, marked correspondence, with no
/// spectators; after a restart too (its row keeps how). A `watch` wakes it, listed once.
#[tokio::test]
async fn sleeping_games_are_listed_marked_correspondence_across_a_restart() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, hibernating).await;
        let asleep = put_to_sleep(&server, "list1", "list2").await;
        let game_id = asleep.game.game_id;
        let before = listed(&server, game_id).await;
        assert!(before.correspondence);
        assert_eq!((before.round, before.spectators), (2, 0));
        assert_eq!(before.players.one.name, asleep.game.players.one.name);
        assert_eq!(before.time_control, SLOW);
        let server = server.restart_with(hibernating).await;
        assert_eq!(metric(&server, "elementals_live_games").await, 0);
        assert_eq!(listed(&server, game_id).await, before);

        let mut fan = TestClient::connect(&server).await;
        let id = fan.id();
        let watched = fan.request(ClientMsg::Watch { id, game_id }).await;
        assert!(matches!(watched, ServerMsg::Snapshot { .. }), "{watched:?}");
        assert_eq!(metric(&server, "elementals_live_games").await, 1);
        let awake = listed(&server, game_id).await;
        assert!(awake.correspondence);
        assert_eq!(awake.round, 2);
        let id = fan.id();
        let ServerMsg::LiveGames { games, .. } = fan.request(ClientMsg::ListGames { id }).await
        else {
            panic!("no live_games")
        };
        assert_eq!(games.iter().filter(|g| g.game_id == game_id).count(), 1);
    }
}
