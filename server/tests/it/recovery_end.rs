//! A game's end survives a crash at every step of its path: the server binary is made to
//! abort there (`ELEMENTALS_CRASH_AT`, a `test-hooks` feature), restarted on the same
//! database, and the rating must have been applied exactly once.

use crate::common::*;
use crate::recovery_support::*;
use elementals_protocol::messages::{ClientMsg, EndReason, ServerMsg};

/// On each backend: plays a game whose first player resigns in round 2, crashing at `step`, restarts, and
/// checks the outcome. `replayed` says whether the resignation was lost with the crash (it
/// was never acknowledged): the game is then restored, and the player resigns again.
async fn crash_at(step: &str, names: (&str, &str), replayed: bool) {
    for backend in BACKENDS {
        crash_on(backend, step, names, replayed).await;
    }
}

async fn crash_on(backend: Backend, step: &str, names: (&str, &str), replayed: bool) {
    let db = Database::on(backend);
    let server = ServerProcess::start_crashing_at(&db, Some(step)).await;
    let (mut one, mut two, game) = paired_at(server.addr, names.0, names.1).await;
    let g = game.game_id;
    // Seats are drawn at random; player one resigns.
    let (winner, loser) = (game.players.two.name, game.players.one.name);
    play_round(&mut one, &mut two, g, 1, (1, 1)).await;
    let id = one.id();
    // The crash comes before any answer.
    one.send(&ClientMsg::Resign { id, game_id: g }).await;
    let status = server.crashed().await;
    assert!(!status.success(), "{status}");
    let tokens = tokens(&one, &two);
    drop((one, two));

    let server = ServerProcess::start(&db).await;
    let (mut one, snapshot) = resume_at(server.addr, &tokens.0).await;
    let (mut two, _) = resume_at(server.addr, &tokens.1).await;
    if replayed {
        let snapshot = snapshot.expect("the game is still on");
        assert_eq!((snapshot.round, snapshot.rounds.len()), (2, 1));
        let id = one.id();
        assert_ok(&one.request(ClientMsg::Resign { id, game_id: g }).await);
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
    } else {
        assert!(
            snapshot.is_none(),
            "the game ended before the crash: {snapshot:?}"
        );
    }
    server.assert_rated_once(&winner, &loser).await;
    let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"resignation\""), "{body}");

    // Once more: nothing is recorded or rated twice.
    server.kill().await;
    let server = ServerProcess::start(&db).await;
    server.assert_rated_once(&winner, &loser).await;
}

#[tokio::test]
async fn a_crash_before_the_end_is_logged_loses_only_the_unanswered_resignation() {
    crash_at("end_unlogged", ("eve01", "fay01"), true).await;
}

#[tokio::test]
async fn a_crash_after_the_end_is_logged_records_the_game_at_the_restart() {
    crash_at("end_logged", ("gus01", "hal01"), false).await;
}

#[tokio::test]
async fn a_crash_inside_the_record_transaction_records_the_game_at_the_restart() {
    crash_at("record_uncommitted", ("ian01", "jo001"), false).await;
}

#[tokio::test]
async fn a_crash_after_the_record_is_committed_applies_the_rating_once() {
    crash_at("recorded", ("kim01", "lou01"), false).await;
}

/// The game task panics right after the resignation's end is logged, before anything is
/// published or recorded (`panic:end_logged`): the supervisor ends the game as logged. The
/// resigner's move is answered `ok`, both players see the resignation's `game_over` and
/// `rating_update`, and the record and ratings are the real ones, not `server_aborted`.
#[tokio::test]
async fn a_panic_after_the_end_is_logged_records_the_logged_end() {
    let db = Database::new();
    let server = ServerProcess::start_crashing_at(&db, Some("panic:end_logged")).await;
    let (mut one, mut two, game) = paired_at(server.addr, "mia01", "ned01").await;
    let g = game.game_id;
    let (winner, loser) = (game.players.two.name, game.players.one.name);
    play_round(&mut one, &mut two, g, 1, (1, 1)).await;
    let id = one.id();
    assert_ok(&one.request(ClientMsg::Resign { id, game_id: g }).await);
    seat_two_won([&mut one, &mut two], EndReason::Resignation).await;
    server.assert_rated_once(&winner, &loser).await;
    let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"resignation\""), "{body}");
    assert!(!body.contains("server_aborted"), "{body}");

    // The players are free again, and a restart records nothing twice.
    server.kill().await;
    let server = ServerProcess::start(&db).await;
    server.assert_rated_once(&winner, &loser).await;
}
