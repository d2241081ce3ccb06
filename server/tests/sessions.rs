//! Accounts, sessions, reconnection and restarts.

mod common;

use common::*;
use elementals_protocol::messages::{ClientMsg, GameId, ServerMsg};
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

/// The requests PROTOCOL.md section 3 lists as allowed without signing in, after `hello`.
fn allowed_without_sign_in() -> Vec<String> {
    const PROTOCOL_MD: &str = include_str!("../../PROTOCOL.md");
    let lead = "a connection may send these requests:";
    let start = PROTOCOL_MD
        .find(lead)
        .expect("PROTOCOL.md section 3 says what may be sent without signing in");
    let paragraph = &PROTOCOL_MD[start + lead.len()..];
    let paragraph = &paragraph[..paragraph
        .find("Every other request")
        .expect("…and that every other request is refused")];
    // The requests are named outside parentheses (which may name error codes).
    let mut names = String::new();
    let mut depth = 0;
    for c in paragraph.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => names.push(c),
            _ => {}
        }
    }
    names
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

/// Every client message PROTOCOL.md section 4 documents.
fn documented_client_messages() -> Vec<String> {
    const PROTOCOL_MD: &str = include_str!("../../PROTOCOL.md");
    let start = PROTOCOL_MD.find("### Client to server").unwrap();
    let end = PROTOCOL_MD.find("### Server to client: replies").unwrap();
    PROTOCOL_MD[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("#### `")?.strip_suffix('`'))
        .map(str::to_owned)
        .collect()
}

/// One request of type `name` for a connection that has not signed in: whatever it is
/// answered, it must not change anything a later request here relies on (so `guest` comes
/// last, `unwatch` after `sync`, and names and tokens are invalid).
fn request_of(name: &str, id: u32, game_id: GameId) -> ClientMsg {
    use elementals_protocol::rules::Variant;
    use elementals_protocol::TimeControl;
    let tc = TimeControl::BLITZ;
    let variant = Variant::CLASSIC;
    match name {
        "ping" => ClientMsg::Ping { id },
        "register" => ClientMsg::Register {
            id,
            name: "x".into(),
            password: "password123".into(),
        },
        "login" => ClientMsg::Login {
            id,
            name: "nobody1".into(),
            password: "password123".into(),
        },
        "guest" => ClientMsg::Guest { id },
        "resume" => ClientMsg::Resume {
            id,
            token: "00".repeat(32),
        },
        "logout" => ClientMsg::Logout { id },
        "join_pool" => ClientMsg::JoinPool {
            id,
            variant,
            time_control: "blitz".into(),
            rated: false,
        },
        "leave_pool" => ClientMsg::LeavePool { id },
        "create_seek" => ClientMsg::CreateSeek {
            id,
            variant,
            time_control: tc,
            rated: false,
        },
        "cancel_seek" => ClientMsg::CancelSeek { id, seek_id: 1 },
        "list_seeks" => ClientMsg::ListSeeks { id },
        "accept_seek" => ClientMsg::AcceptSeek { id, seek_id: 1 },
        "challenge" => ClientMsg::Challenge {
            id,
            opponent: "gate01".into(),
            variant,
            time_control: tc,
            rated: false,
        },
        "accept_challenge" => ClientMsg::AcceptChallenge {
            id,
            challenge_id: 1,
        },
        "decline_challenge" => ClientMsg::DeclineChallenge {
            id,
            challenge_id: 1,
        },
        "cancel_challenge" => ClientMsg::CancelChallenge {
            id,
            challenge_id: 1,
        },
        "offer_rematch" => ClientMsg::OfferRematch { id, game_id },
        "commit" => ClientMsg::Commit {
            id,
            game_id,
            round: 1,
            commitment: vec![0; 32],
        },
        "reveal" => ClientMsg::Reveal {
            id,
            game_id,
            round: 1,
            pick: 1,
            nonce: vec![0; 32],
        },
        "resign" => ClientMsg::Resign { id, game_id },
        "offer_draw" => ClientMsg::OfferDraw { id, game_id },
        "decline_draw" => ClientMsg::DeclineDraw { id, game_id },
        "claim_win" => ClientMsg::ClaimWin { id, game_id },
        "sync" => ClientMsg::Sync { id, game_id },
        "list_games" => ClientMsg::ListGames { id },
        "play_bot" => ClientMsg::PlayBot {
            id,
            strength: "easy".into(),
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
        },
        "lobby_counts" => ClientMsg::LobbyCounts { id },
        "watch" => ClientMsg::Watch { id, game_id },
        "unwatch" => ClientMsg::Unwatch { id, game_id },
        other => panic!("PROTOCOL.md documents `{other}`: add an example of it to this test"),
    }
}

/// What PROTOCOL.md section 3 says a connection may do before it signs in is what it may
/// do: list games and seeks, watch (a browser watches without an account), sync what it
/// watches; everything that acts for a player answers `not_authenticated`.
#[tokio::test]
async fn what_a_connection_may_send_before_signing_in_is_what_protocol_md_says() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (_one, _two, game) = paired_players(&server, "gate01", "gate02").await;
        let g = game.game_id;
        let allowed = allowed_without_sign_in();
        let mut names = documented_client_messages();
        names.retain(|n| n != "hello");
        for name in &allowed {
            assert!(
                names.contains(name),
                "section 3 names `{name}`, which is no request"
            );
        }
        // A game not watched yet: `sync` is answered as for a connection without a seat.
        let mut client = TestClient::connect(&server).await;
        let id = client.id();
        assert_error(
            &client.request(ClientMsg::Sync { id, game_id: g }).await,
            ErrorCode::NotSeated,
        );
        // The order that keeps each request's precondition: watch before sync and unwatch,
        // guest (which signs in) last.
        names.sort_by_key(|n| match n.as_str() {
            "watch" => 0,
            "sync" => 1,
            "unwatch" => 2,
            "guest" => 4,
            _ => 3,
        });
        for name in &names {
            let id = client.id();
            let reply = client.request(request_of(name, id, g)).await;
            let refused = matches!(
                reply,
                ServerMsg::Error {
                    code: ErrorCode::NotAuthenticated,
                    ..
                }
            );
            assert_eq!(
                refused,
                !allowed.contains(name),
                "`{name}` before signing in: {reply:?}"
            );
        }
    }
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
