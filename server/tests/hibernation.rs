//! Hibernation over the real server, on both backends: a game whose players are both away
//! and whose next deadline is far off goes to sleep in storage; a player's return wakes it
//! with its round kept, a restart leaves it asleep, and its deadline wakes it to end it on
//! time, rated once. On SQLite, sleeping and waking read no other game's log. (The same
//! with 10,000 games: `game::sweeper::tests`.)

mod common;

use std::time::Duration;

use common::*;
use elementals_protocol::messages::{ClientMsg, GameId, GameSnapshot, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
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

/// A sleeping game: who played it, and seat one's round-2 commitment (pick and nonce).
struct Asleep {
    game_id: GameId,
    tokens: (String, String),
    names: (String, String),
    nonce: [u8; 32],
}

/// Registers `a` and `b`, pairs them by a seek of `SLOW` (`corr-7d`), plays round 1, lets seat one
/// commit in round 2, and has both leave; returns once the game sleeps.
async fn put_to_sleep(server: &TestServer, a: &str, b: &str) -> Asleep {
    let asleep = play_and_leave(server, a, b).await;
    until_metric(server, "elementals_hibernated_games", 1).await;
    assert_eq!(metric(server, "elementals_live_games").await, 0);
    asleep
}

/// `put_to_sleep` up to the players' leaving: the game goes to sleep a second later.
async fn play_and_leave(server: &TestServer, a: &str, b: &str) -> Asleep {
    let mut ca = TestClient::connect(server).await;
    ca.register(a).await;
    let mut cb = TestClient::connect(server).await;
    cb.register(b).await;
    let id = ca.id();
    let created = ca
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: SLOW,
            rated: true,
        })
        .await;
    let ServerMsg::SeekCreated { seek, .. } = created else {
        panic!("{created:?}")
    };
    let id = cb.id();
    let seek_id = seek.seek_id;
    assert_ok(&cb.request(ClientMsg::AcceptSeek { id, seek_id }).await);
    let (game, seat_a) = ca.game_start().await;
    cb.game_start().await;
    let (mut one, mut two, names) = match seat_a {
        Seat::One => (ca, cb, (a.to_owned(), b.to_owned())),
        Seat::Two => (cb, ca, (b.to_owned(), a.to_owned())),
    };
    let game_id = game.game_id;
    play_round(&mut one, &mut two, game_id, 1, (1, 2)).await;
    let nonce = rand::random::<[u8; 32]>();
    assert_ok(&one.commit(game_id, 2, Seat::One, 3, nonce).await);
    let tokens = (one.token.clone().unwrap(), two.token.clone().unwrap());
    one.close().await;
    two.close().await;
    Asleep {
        game_id,
        tokens,
        names,
        nonce,
    }
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
async fn woken_by_its_players_with_its_round_kept(server: &TestServer, asleep: &Asleep) {
    let game_id = asleep.game_id;
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
    assert_ok(&one.reveal(game_id, 2, 3, asleep.nonce).await);
    assert_ok(&two.reveal(game_id, 2, 1, nonce_two).await);
    one.expect(
        "round 2's result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == 2),
    )
    .await;
    one.resign(game_id).await;
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
    let games = names.iter().map(|(a, b)| play_and_leave(&server, a, b));
    futures::future::join_all(games).await;
    until_metric(&server, "elementals_hibernated_games", 9).await;
    assert_eq!(metric(&server, READ).await, 9 * one_game);
    // The first game's wake reads nothing from the file.
    woken_by_its_players_with_its_round_kept(&server, &first).await;
    assert_eq!(metric(&server, READ).await, 9 * one_game);
}

/// `GET /api/players/{name}`: (wins, losses).
async fn record_of(server: &TestServer, name: &str) -> (u64, u64) {
    let (status, body) = server.http_get(&format!("/api/players/{name}")).await;
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    let count = |k: &str| page[k].as_u64().unwrap_or_else(|| panic!("{k} in {page}"));
    (count("wins"), count("losses"))
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
    let (one, two) = (&asleep.names.0, &asleep.names.1);
    // The record is written just after the game ends.
    let deadline = tokio::time::Instant::now() + WAIT;
    while record_of(&server, two).await != (0, 1) {
        assert!(tokio::time::Instant::now() < deadline, "no loss recorded");
        tokio::task::yield_now().await;
    }
    assert_eq!(record_of(&server, one).await, (1, 0));
    let (status, body) = server
        .http_get(&format!("/api/games/{}", asleep.game_id))
        .await;
    assert_eq!(status, 200, "{body}");
    let record: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(record["result"]["reason"], "time", "{record}");

    // Rated once: nothing is left to wake or restore.
    let server = server.restart_with(hibernating).await;
    assert_eq!(metric(&server, "elementals_hibernated_games").await, 0);
    assert_eq!(metric(&server, "elementals_live_games").await, 0);
    assert_eq!(record_of(&server, two).await, (0, 1));
}

#[tokio::test]
async fn players_returning_at_once_wake_one_game() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, hibernating).await;
        let asleep = put_to_sleep(&server, "twice1", "twice2").await;
        let game_id = asleep.game_id;
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
