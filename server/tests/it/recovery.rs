//! Crash recovery with the real server binary: `kill -9` and SIGTERM mid-game, a restart
//! on the same database, and the players finishing their game with their tokens.

use std::time::Duration;

use crate::common::*;
use crate::recovery_support::*;
use elementals_protocol::messages::{SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;

#[tokio::test]
async fn after_kill_9_the_game_resumes_where_it_stood_and_is_rated_once() {
    for backend in BACKENDS {
        let db = Database::on(backend);
        let server = ServerProcess::start(&db).await;
        let (mut one, mut two, game) = paired_at(server.addr, "ada01", "bea01").await;
        let g = game.game_id;
        let (winner, loser) = (game.players.two.name, game.players.one.name);
        play_round(&mut one, &mut two, g, 1, TWO_WINS).await;
        // Round 2: both commit and one reveals, all acknowledged; then the server dies.
        let before = round_two_half_revealed(&mut one, &mut two, g).await;
        let tokens = tokens(&one, &two);
        server.kill().await;
        drop((one, two));

        let server = ServerProcess::start(&db).await;
        // A spectator finds the game listed and watches it again.
        let (status, live) = server.http_get("/api/games/live").await;
        assert_eq!(status, 200);
        assert!(live.contains(&g.to_string()), "{live}");
        let (mut watcher, seen) = watch_at(server.addr, g).await;
        assert_round_voided(&seen, 2);
        assert_banks_kept(&seen, before);
        assert_eq!(seen.connected, SeatPair::new(false, false));

        // The players come back with their tokens; the round starts again once both are in.
        let (mut one, snapshot) = resume_at(server.addr, &tokens.0).await;
        let snapshot = snapshot.expect("player one is seated again");
        assert_round_voided(&snapshot, 2);
        assert_banks_kept(&snapshot, before);
        let (mut two, snapshot) = resume_at(server.addr, &tokens.1).await;
        let snapshot = snapshot.expect("player two is seated again");
        assert_round_voided(&snapshot, 2);
        assert_eq!(snapshot.clocks.running, SeatPair::new(true, true));
        for client in [&mut one, &mut watcher] {
            client
                .expect("the round again", |m| {
                    matches!(m, ServerMsg::RoundStart { round: 2, .. })
                })
                .await;
        }

        two_wins_from(&mut one, &mut two, g, 2).await;
        watcher
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        server.assert_rated_once(&winner, &loser).await;
        let (status, _) = server.http_get(&format!("/api/games/{g}")).await;
        assert_eq!(status, 200);

        // Nothing is left to apply a second time.
        server.kill().await;
        let server = ServerProcess::start(&db).await;
        server.assert_rated_once(&winner, &loser).await;
        let (status, live) = server.http_get("/api/games/live").await;
        assert_eq!((status, live.as_str()), (200, "[]"));
    }
}

#[tokio::test]
async fn sigterm_tells_the_clients_flushes_and_the_game_resumes_after_the_restart() {
    for backend in BACKENDS {
        let db = Database::on(backend);
        let server = ServerProcess::start(&db).await;
        let (mut one, mut two, game) = paired_at(server.addr, "cal01", "dot01").await;
        let g = game.game_id;
        let (winner, loser) = (game.players.two.name, game.players.one.name);
        play_round(&mut one, &mut two, g, 1, TWO_WINS).await;
        assert_ok(
            &one.commit(g, 2, Seat::One, TWO_WINS.0, rand::random())
                .await,
        );
        let (mut watcher, _) = watch_at(server.addr, g).await;

        let status = server.terminate(Duration::from_secs(20)).await;
        assert!(status.success(), "{status}");
        for client in [&mut one, &mut two, &mut watcher] {
            client
                .expect(
                    "the restart notice",
                    |m| matches!(m, ServerMsg::Notice { code, .. } if code == "shutting_down"),
                )
                .await;
            assert_eq!(client.closed_with().await, Some(1012));
        }
        let tokens = tokens(&one, &two);
        drop((one, two, watcher));

        let server = ServerProcess::start(&db).await;
        let (mut one, snapshot) = resume_at(server.addr, &tokens.0).await;
        assert_round_voided(&snapshot.expect("seated again"), 2);
        let (mut two, snapshot) = resume_at(server.addr, &tokens.1).await;
        assert_round_voided(&snapshot.expect("seated again"), 2);
        two_wins_from(&mut one, &mut two, g, 2).await;
        server.assert_rated_once(&winner, &loser).await;
    }
}
