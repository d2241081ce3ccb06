//! Accounts, sessions, reconnection and restarts.

mod before_sign_in;

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

#[tokio::test]
async fn register_login_and_bad_credentials() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut a = TestClient::connect(&server).await;
        a.register("vera1").await;
        let mut b = TestClient::connect(&server).await;
        let id = b.id();
        let r = b
            .request(ClientMsg::Register {
                id,
                name: "VERA1".into(),
                password: "password123".into(),
            })
            .await;
        assert_error(&r, ErrorCode::NameTaken);
        let id = b.id();
        let r = b
            .request(ClientMsg::Login {
                id,
                name: "vera1".into(),
                password: "wrong-password".into(),
            })
            .await;
        assert_error(&r, ErrorCode::BadCredentials);
        let id = b.id();
        let r = b
            .request(ClientMsg::Register {
                id,
                name: "x".into(),
                password: "password123".into(),
            })
            .await;
        assert_error(&r, ErrorCode::InvalidName);
        let id = b.id();
        match b
            .request(ClientMsg::Login {
                id,
                name: "vera1".into(),
                password: "password123".into(),
            })
            .await
        {
            ServerMsg::Authenticated { account, .. } => assert_eq!(account.name, "vera1"),
            other => panic!("{other:?}"),
        }
        // The older connection is told it was superseded and closed with 4000.
        a.expect(
            "notice",
            |m| matches!(m, ServerMsg::Notice { code, .. } if code == "superseded"),
        )
        .await;
        assert_eq!(a.closed_with().await, Some(4000));
    }
}

#[tokio::test]
async fn hello_must_come_first_and_versions_are_checked() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut c = TestClient::connect_raw(&server).await;
        let r = c.request(ClientMsg::Ping { id: 5 }).await;
        assert_error(&r, ErrorCode::HelloRequired);
        let r = c
            .request(ClientMsg::Hello {
                id: 6,
                protocol_version: 99,
                client: None,
                batch: false,
            })
            .await;
        assert_error(&r, ErrorCode::UnsupportedVersion);
    }
}

#[tokio::test]
async fn a_player_reconnecting_within_the_grace_period_continues_the_game() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "walt1", "xena1").await;
        let g = game.game_id;
        play_round(&mut one, &mut two, g, 1, (5, 2)).await;
        let token = one.token.clone().unwrap();
        one.close().await;
        presence(&mut two, false).await;

        let mut back = TestClient::connect(&server).await;
        match back.resume(&token).await {
            ServerMsg::Authenticated { game_id, .. } => assert_eq!(game_id, Some(g)),
            other => panic!("{other:?}"),
        }
        // The snapshot is the very next frame.
        let snapshot = match back.recv().await {
            ServerMsg::Snapshot {
                id: None,
                snapshot,
                seat,
            } => {
                assert_eq!(seat, Some(Seat::One));
                snapshot
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(snapshot.game.game_id, g);
        assert_eq!(snapshot.round, 2);
        assert_eq!(snapshot.rounds.len(), 1);
        presence(&mut two, true).await;
        play_round(&mut back, &mut two, g, 2, (1, 2)).await;
    }
}

#[tokio::test]
async fn a_player_whose_game_ended_while_away_is_told_at_sign_in() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (one, mut two, game) = paired_players(&server, "ivan1", "jill1").await;
        let token = one.token.clone().unwrap();
        one.close().await;
        presence(&mut two, false).await;
        two.resign(game.game_id).await;
        two.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;

        let mut back = TestClient::connect(&server).await;
        match back.resume(&token).await {
            ServerMsg::Authenticated { game_id, .. } => assert_eq!(game_id, None),
            other => panic!("{other:?}"),
        }
        // No snapshot follows: the next frame is the answer to the next request.
        let id = back.id();
        back.send(&ClientMsg::Ping { id }).await;
        let r = back.recv().await;
        assert!(matches!(r, ServerMsg::Pong { .. }), "{r:?}");
    }
}

#[tokio::test]
async fn a_restarted_server_keeps_accounts_ratings_and_records() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "yuri1", "zoe01").await;
        one.resign(game.game_id).await;
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let token = two.token.clone().unwrap();
        let winner = game.players.two.name.clone();
        drop((one, two));

        let server = server.restart().await;
        let mut c = TestClient::connect(&server).await;
        match c.resume(&token).await {
            ServerMsg::Authenticated {
                account, game_id, ..
            } => {
                assert_eq!(game_id, None);
                assert_eq!(account.name, winner);
                assert_eq!(account.rating, 1.5);
                assert_eq!(account.wins, 1);
            }
            other => panic!("{other:?}"),
        }
        let (status, _) = server
            .http_get(&format!("/api/games/{}", game.game_id))
            .await;
        assert_eq!(status, 200);
        let mut d = TestClient::connect(&server).await;
        let id = d.id();
        let r = d
            .request(ClientMsg::Login {
                id,
                name: game.players.one.name.clone(),
                password: "password123".into(),
            })
            .await;
        assert!(matches!(r, ServerMsg::Authenticated { .. }), "{r:?}");
    }
}

/// Moves the server's wall clock (tokio's, which a paused test moves) by `days` at once.
async fn days_pass(days: f64) {
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_secs_f64(days * 86_400.0)).await;
    tokio::time::resume();
}

/// `resume` with `token` on a new connection: the token's expiry, or `None` if refused
/// `invalid_token`.
async fn resumed_until(server: &TestServer, token: &str) -> Option<u64> {
    let mut client = TestClient::connect(server).await;
    match client.resume(token).await {
        ServerMsg::Authenticated {
            token_expires_at, ..
        } => Some(token_expires_at),
        other => {
            assert_error(&other, ErrorCode::InvalidToken);
            None
        }
    }
}

/// A token lives 30 days after its last use, not after its issue: resumed (or used over
/// HTTP) every 29 days it lives on; left 30 days it dies. Its stored expiry is written at
/// most once a day: a use an hour after the last leaves it as it was.
#[tokio::test]
async fn a_token_expires_30_days_after_its_last_use() {
    const DAY_MS: u64 = 86_400_000;
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut a = TestClient::connect(&server).await;
        let id = a.id();
        let register = ClientMsg::Register {
            id,
            name: "slide1".into(),
            password: "password123".into(),
        };
        let ServerMsg::Authenticated {
            token,
            token_expires_at: issued,
            ..
        } = a.request(register).await
        else {
            panic!("not registered")
        };
        a.close().await;

        days_pass(1.0 / 24.0).await;
        assert_eq!(resumed_until(&server, &token).await, Some(issued));
        days_pass(29.0).await;
        let slid = resumed_until(&server, &token).await.expect("alive");
        assert!(slid >= issued + 29 * DAY_MS, "{slid} vs {issued}");
        days_pass(29.0).await;
        // 58 days after its issue: used over HTTP.
        let (status, body) = http_get_bearer(server.addr, "/api/me/games", &token).await;
        assert_eq!(status, 200, "{body}");
        days_pass(29.0).await;
        let slid_again = resumed_until(&server, &token).await.expect("alive");
        assert!(slid_again >= slid + 58 * DAY_MS, "{slid_again} vs {slid}");
        days_pass(30.0 + 1.0 / 24.0).await;
        assert_eq!(resumed_until(&server, &token).await, None);
    }
}

#[tokio::test]
async fn a_revoked_token_no_longer_resumes() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut a = TestClient::connect(&server).await;
        let token = a.register("abel1").await;
        let id = a.id();
        assert_ok(&a.request(ClientMsg::Logout { id }).await);
        let mut b = TestClient::connect(&server).await;
        assert_error(&b.resume(&token).await, ErrorCode::InvalidToken);
        assert_error(&b.resume("not-a-token").await, ErrorCode::InvalidToken);
    }
}

#[tokio::test]
async fn http_health_and_metrics() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (status, body) = server.http_get("/healthz").await;
        assert_eq!((status, body.as_str()), (200, "ok"));
        let _c = TestClient::connect(&server).await;
        let (status, body) = server.http_get("/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("elementals_connections 1"), "{body}");
        assert!(body.contains("elementals_result_latency_seconds_bucket"));
        let (status, _) = server.http_get("/api/players/nobody").await;
        assert_eq!(status, 404);
    }
}

/// Waits for the opponent's `presence` to say `connected`.
async fn presence(client: &mut TestClient, connected: bool) {
    client
        .expect(
            "presence",
            |m| matches!(m, ServerMsg::Presence { connected: c, .. } if *c == connected),
        )
        .await;
}

/// `/api/players/{name}` is for registered players, found ignoring case: a guest has no
/// public page (404, as for an unknown name).
#[tokio::test]
async fn a_guest_has_no_player_page_and_names_are_looked_up_ignoring_case() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut guest = TestClient::connect(&server).await;
        let id = guest.id();
        let name = match guest.request(ClientMsg::Guest { id }).await {
            ServerMsg::Authenticated { account, .. } => account.name,
            other => panic!("{other:?}"),
        };
        let (status, _) = server.http_get(&format!("/api/players/{name}")).await;
        assert_eq!(status, 404, "{name}");

        let mut player = TestClient::connect(&server).await;
        player.register("Casey_1").await;
        let (status, body) = server.http_get("/api/players/cASEY_1").await;
        assert_eq!(status, 200);
        let page: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page["name"], "Casey_1", "shown as registered");
    }
}
