//! What a connection may do before it signs in, against PROTOCOL.md section 3's list.

use elementals_protocol::messages::GameId;

use super::*;

/// The requests PROTOCOL.md section 3 lists as allowed without signing in, after `hello`.
fn allowed_without_sign_in() -> Vec<String> {
    const PROTOCOL_MD: &str = include_str!("../../../../PROTOCOL.md");
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
    const PROTOCOL_MD: &str = include_str!("../../../../PROTOCOL.md");
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
        "decline_rematch" => ClientMsg::DeclineRematch { id, game_id },
        "commit" => ClientMsg::Commit {
            id,
            game_id,
            round: 1,
            commitment: vec![0; 32],
            pick: None,
            nonce: None,
        },
        "reveal" => ClientMsg::Reveal {
            id,
            game_id,
            round: 1,
            pick: 1,
            nonce: vec![0; 32],
        },
        "resign" => ClientMsg::Resign { id, game_id },
        "abort" => ClientMsg::Abort { id, game_id },
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
        "my_games" => ClientMsg::MyGames { id },
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
