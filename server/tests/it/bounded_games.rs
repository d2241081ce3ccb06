//! Every game is bounded: a game that reaches the server's `--max-rounds` ends drawn,
//! unrated, with reason `max_rounds`, and `welcome.limits` says where that bound is. And no
//! lobby path seats one account against itself.

use crate::common::*;
use elementals_protocol::messages::{EndReason, ServerMsg};
use elementals_protocol::{ClientMsg, ErrorCode, TimeControl, Variant};

#[tokio::test]
async fn a_game_reaching_max_rounds_ends_drawn_unrated_and_welcome_says_where() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |config| config.max_rounds = 2).await;

        let limits = TestClient::welcome_limits(&server).await;
        assert_eq!(limits.max_rounds, 2);

        let (mut one, mut two, game) = paired_players(&server, "long1", "long2").await;
        assert!(game.rated);
        let g = game.game_id;
        // Ties move nothing: only the bound can end this game.
        play_round(&mut one, &mut two, g, 1, (1, 1)).await;
        play_round(&mut one, &mut two, g, 2, (3, 3)).await;
        for client in [&mut one, &mut two] {
            match client
                .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                .await
            {
                ServerMsg::GameOver { result, rated, .. } => {
                    assert_eq!((result.winner, result.reason), (None, EndReason::MaxRounds));
                    assert!(!rated);
                }
                _ => unreachable!(),
            }
        }
        // A third round is refused: the game is over.
        let refused = one
            .commit(g, 3, elementals_protocol::Seat::One, 1, [7; 32])
            .await;
        assert!(
            matches!(
                refused,
                ServerMsg::Error { ref code, .. }
                    if *code == ErrorCode::GameOver || *code == ErrorCode::UnknownGame
            ),
            "{refused:?}"
        );

        // An unrated game sends no `rating_update` to say it is stored; a restart makes sure
        // (shutdown waits for the record, and a start records a logged end).
        drop((one, two));
        let server = server.restart().await;
        let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
        assert_eq!(status, 200, "{body}");
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(record["result"]["reason"], "max_rounds", "{body}");
        assert_eq!(record["rounds"].as_array().unwrap().len(), 2, "{body}");
        // A draw changes no rating, and an unrated one counts in no one's record.
        for name in ["long1", "long2"] {
            let (status, body) = server.http_get(&format!("/api/players/{name}")).await;
            assert_eq!(status, 200, "{body}");
            let player: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(player["rating"], 1.0, "{body}");
            for count in ["wins", "losses", "draws"] {
                assert_eq!(player[count], 0, "{count}: {body}");
            }
        }
    }
}

#[tokio::test]
async fn no_lobby_path_seats_an_account_against_itself() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut ann = TestClient::connect(&server).await;
        ann.register("selfish").await;
        let mut bob = TestClient::connect(&server).await;
        bob.register("other1").await;

        // Its own seek.
        let id = ann.id();
        let created = ann
            .request(ClientMsg::CreateSeek {
                id,
                variant: Variant::CLASSIC,
                time_control: TimeControl::BLITZ,
                rated: true,
            })
            .await;
        let ServerMsg::SeekCreated { seek, .. } = created else {
            panic!("{created:?}")
        };
        let id = ann.id();
        let accepted = ann
            .request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await;
        assert_error(&accepted, ErrorCode::OwnSeek);

        // Itself, by name, in any case.
        for name in ["selfish", "SELFISH"] {
            let id = ann.id();
            let challenged = ann
                .request(ClientMsg::Challenge {
                    id,
                    opponent: name.into(),
                    variant: Variant::CLASSIC,
                    time_control: TimeControl::BLITZ,
                    rated: true,
                })
                .await;
            assert_error(&challenged, ErrorCode::OwnSeek);
        }

        // The same account from a second connection (which supersedes the first) finds its
        // own seek still its own.
        let token = ann.token.clone().unwrap();
        let mut again = TestClient::connect(&server).await;
        assert!(matches!(
            again.resume(&token).await,
            ServerMsg::Authenticated { .. }
        ));
        let id = again.id();
        let accepted = again
            .request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await;
        assert!(
            matches!(accepted, ServerMsg::Error { ref code, .. }
            if *code == ErrorCode::OwnSeek || *code == ErrorCode::UnknownSeek),
            "{accepted:?}"
        );
        // A pool never pairs the account with itself: joining twice is refused.
        again.join_pool(Variant::CLASSIC, "blitz").await;
        let id = again.id();
        let joined = again
            .request(ClientMsg::JoinPool {
                id,
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
            })
            .await;
        assert_error(&joined, ErrorCode::AlreadyQueued);
        // Nothing started.
        assert_eq!(metric(&server, "elementals_games_started_total").await, 0);
        drop(bob);
    }
}

/// A game restored from its log obeys the bound in force at the restart: restarted with
/// `--max-rounds` below the rounds it has played, it ends there, drawn, and is recorded;
/// its players find no seat when they come back.
#[tokio::test]
async fn a_restored_game_past_a_lowered_bound_ends_at_the_restart() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "bound1", "bound2").await;
        let g = game.game_id;
        for round in 1..=3 {
            play_round(&mut one, &mut two, g, round, (2, 2)).await;
        }
        let token = one.token.clone().unwrap();
        drop((one, two));
        let server = server.restart_with(|config| config.max_rounds = 2).await;

        let mut back = TestClient::connect(&server).await;
        match back.resume(&token).await {
            ServerMsg::Authenticated { game_id, .. } => assert_eq!(game_id, None),
            other => panic!("{other:?}"),
        }
        let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
        assert_eq!(status, 200, "{body}");
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(record["result"]["reason"], "max_rounds", "{body}");
        assert_eq!(
            record["result"]["winner"],
            serde_json::Value::Null,
            "{body}"
        );
        assert_eq!(record["rounds"].as_array().unwrap().len(), 3, "{body}");
    }
}
