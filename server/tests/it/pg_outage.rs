//! PostgreSQL out of reach, with the server in process and a TCP proxy of the test's own
//! between it and PostgreSQL (loopback), which the test cuts and restores; the shared
//! PostgreSQL server itself is never stopped.
//!
//! - While the proxy is cut, a game's moves are answered `unavailable` and published to
//!   nobody, `/healthz` and the HTTP reads answer 503; once it is restored, every
//!   connection is made again, the held game goes on by itself, finishes, and its rated
//!   result is recorded once.
//! - A finished game's COMMIT whose answer is lost (the proxy forwards the COMMIT, lets
//!   PostgreSQL answer it, and drops the answer): the game is recorded and rated once,
//!   and a restart, which records every game whose log is still there, rates nobody twice.

use crate::common::*;
use crate::pg_proxy::PgProxy;
use elementals_protocol::messages::{GameId, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
use elementals_server::db::testing::TestPostgres;

/// A tie: nobody moves.
const TIE: u16 = 1;

/// Whether any of `msgs` is a game's numbered event.
fn any_event(msgs: &[ServerMsg]) -> bool {
    msgs.iter().any(|m| m.seq().is_some())
}

/// The counts that show one game recorded and rated once: games, rating history rows,
/// wins, losses.
fn recorded(server: &TestServer) -> [Option<i64>; 4] {
    let count = |sql: &str| server.sql(sql, sql);
    [
        count("SELECT count(*) FROM games"),
        count("SELECT count(*) FROM rating_history"),
        count("SELECT sum(wins)::bigint FROM accounts"),
        count("SELECT sum(losses)::bigint FROM accounts"),
    ]
}

/// Seat two resigns; both players hear the end and their rating changes.
async fn two_resigns(one: &mut TestClient, two: &mut TestClient, g: GameId) {
    two.resign(g).await;
    for player in [&mut *one, &mut *two] {
        player
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_wait_while_postgresql_is_out_of_reach_and_the_game_goes_on_after() {
    let proxy = PgProxy::start().await;
    let pg = TestPostgres::create();
    let url = proxy.url(&pg);
    let mut server = start_server_via(pg, url).await;
    let (mut one, mut two, game) = paired_players(&server, "ada21", "bea21").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, (TIE, TIE)).await;
    one.received_before_pong().await;
    two.received_before_pong().await;

    // Out of reach: the moves are refused and kept, nobody hears of them.
    proxy.cut().await;
    let (n1, n2) = (rand::random(), rand::random());
    assert_error(
        &one.commit(g, 2, Seat::One, TIE, n1).await,
        ErrorCode::Unavailable,
    );
    assert_error(
        &two.commit(g, 2, Seat::Two, TIE, n2).await,
        ErrorCode::Unavailable,
    );
    assert!(!any_event(&one.received_before_pong().await));
    assert!(!any_event(&two.received_before_pong().await));
    let health = server.http_get("/healthz").await;
    assert_eq!(health.0, 503, "{}", health.1);
    let page = server.http_get("/api/leaderboard").await;
    assert_eq!(page.0, 503, "{}", page.1);

    // Back: the kept moves are logged and published, the round goes on.
    proxy.restore();
    for player in [&mut one, &mut two] {
        player
            .expect("the kept moves' reveal phase", |m| {
                matches!(m, ServerMsg::RevealPhase { round: 2, .. })
            })
            .await;
    }
    until_status(server.addr, "/healthz", 200).await;
    assert_ok(&one.reveal(g, 2, TIE, n1).await);
    assert_ok(&two.reveal(g, 2, TIE, n2).await);
    for player in [&mut one, &mut two] {
        player
            .expect(
                "round 2's result",
                |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == 2),
            )
            .await;
    }
    until_status(server.addr, "/api/leaderboard", 200).await;

    // The game ends and is recorded and rated once.
    two_resigns(&mut one, &mut two, g).await;
    for player in [&mut one, &mut two] {
        player
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
    server.stop().await;
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_whose_commit_answer_is_lost_is_rated_once_even_after_a_restart() {
    let proxy = PgProxy::start().await;
    let pg = TestPostgres::create();
    let url = proxy.url(&pg);
    let server = start_server_via(pg, url).await;
    let (mut one, mut two, game) = paired_players(&server, "ada22", "bea22").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, (TIE, TIE)).await;

    // The writer's COMMIT of the game's record goes through; its answer does not.
    let answered = proxy.lose_next_record_commit();
    two_resigns(&mut one, &mut two, g).await;
    tokio::time::timeout(WAIT, answered)
        .await
        .expect("the record's COMMIT reached PostgreSQL")
        .unwrap();
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);

    // The writer connects again at its next batch: a new account is written.
    let mut three = TestClient::connect(&server).await;
    three.register("cid22").await;

    // A restart records every game whose log is left: this one's went with its record.
    drop((one, two, three));
    let mut server = server.restart().await;
    // Served once the log's games are restored.
    TestClient::connect(&server).await.close().await;
    server.stop().await;
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);
}
