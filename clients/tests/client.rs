//! The typed client against a scripted server: routing of replies, errors, events,
//! closing, pings and timeouts.

mod support;

use std::time::Duration;

use elementals_client::protocol::messages::{Account, GameId};
use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg};
use elementals_client::{Client, ClientError, ConnectOptions};
use tokio_tungstenite::tungstenite::Message;

async fn connected() -> (Client, support::MockConn, support::MockServer) {
    let mut server = support::start().await;
    let client = Client::connect(&server.url).await.unwrap();
    let conn = server.accept().await;
    (client, conn, server)
}

fn authenticated(id: u32, name: &str) -> ServerMsg {
    ServerMsg::Authenticated {
        id,
        account: Account {
            name: name.into(),
            rating: 1.0,
            guest: false,
            wins: 0,
            losses: 0,
            draws: 0,
        },
        token: "ab".repeat(32),
        token_expires_at: 1,
        game_id: None,
        games: Vec::new(),
    }
}

#[tokio::test]
async fn connect_says_hello_and_keeps_the_welcome() {
    let (client, _conn, _server) = connected().await;
    assert_eq!(client.server_info().server, "mock");
    assert_eq!(client.server_info().limits.max_messages_per_s, 50);
}

#[tokio::test]
async fn replies_reach_their_requests_whatever_the_order() {
    let (client, mut conn, _server) = connected().await;
    let script = async move {
        let first = conn.recv().await.id();
        let second = conn.recv().await.id();
        // Answer in reverse order, with a push in between.
        conn.send(&ServerMsg::Pong { id: second }).await;
        conn.send(&ServerMsg::SeekRemoved { seek_id: 9 }).await;
        conn.send(&ServerMsg::Seeks {
            id: first,
            seeks: vec![],
        })
        .await;
        conn
    };
    let (seeks, ping, _conn) = tokio::join!(client.list_seeks(), client.ping(), script);
    assert!(seeks.unwrap().is_empty());
    assert!(ping.is_ok());
    assert_eq!(
        client.next_event().await,
        Some(ServerMsg::SeekRemoved { seek_id: 9 })
    );
}

/// The client asks for batches, and a batch's reply reaches its request while its other
/// messages are events, in the batch's order; a bad element costs only itself.
#[tokio::test]
async fn a_batch_is_taken_apart_into_its_reply_and_its_events_in_order() {
    let (client, mut conn, _server) = connected().await;
    assert!(conn.batch, "the client asks for batches in hello");
    let game_id = GameId::new_random_from([5; 16]);
    let script = async move {
        let id = conn.recv().await.id();
        conn.send_batch(&[
            ServerMsg::Spectators { game_id, count: 1 },
            ServerMsg::Pong { id },
            ServerMsg::Spectators { game_id, count: 2 },
        ])
        .await;
        // An element that is not a message is skipped; the rest of its batch is not.
        let mut bytes = vec![0x92, 0x01];
        bytes.extend_from_slice(&elementals_client::protocol::wire::encode_server(
            &ServerMsg::Spectators { game_id, count: 3 },
        ));
        conn.send_frame(Message::Binary(bytes.into())).await;
        conn
    };
    let (ping, _conn) = tokio::join!(client.ping(), script);
    assert!(ping.is_ok());
    for count in [1, 2, 3] {
        assert_eq!(
            client.next_event().await,
            Some(ServerMsg::Spectators { game_id, count })
        );
    }
}

#[tokio::test]
async fn a_refusal_carries_the_servers_code() {
    let (client, mut conn, _server) = connected().await;
    let script = async move {
        let id = conn.recv().await.id();
        conn.send(&ServerMsg::error(
            Some(id),
            ErrorCode::NotQueued,
            "not waiting",
        ))
        .await;
        conn
    };
    let (result, _conn) = tokio::join!(client.leave_pool(), script);
    match result {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::NotQueued);
            assert_eq!(message, "not waiting");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn register_or_login_logs_in_when_the_name_is_taken() {
    let (client, mut conn, _server) = connected().await;
    let script = async move {
        let ClientMsg::Register { id, name, .. } = conn.recv().await else {
            panic!("expected register");
        };
        assert_eq!(name, "ann");
        conn.send(&ServerMsg::error(Some(id), ErrorCode::NameTaken, "taken"))
            .await;
        let ClientMsg::Login { id, name, password } = conn.recv().await else {
            panic!("expected login");
        };
        assert_eq!((name.as_str(), password.as_str()), ("ann", "secret-pw"));
        conn.send(&authenticated(id, "ann")).await;
        conn
    };
    let (session, _conn) = tokio::join!(client.register_or_login("ann", "secret-pw"), script);
    let session = session.unwrap();
    assert_eq!(session.account.name, "ann");
    assert_eq!(session.token.len(), 64);
    assert_eq!(session.game_id, None);
}

#[tokio::test]
async fn a_resumed_session_says_which_game_it_is_seated_in() {
    let (client, mut conn, _server) = connected().await;
    let game_id = GameId(uuid::Uuid::from_u128(7));
    let script = async move {
        let ClientMsg::Resume { id, token } = conn.recv().await else {
            panic!("expected resume");
        };
        assert_eq!(token, "cd".repeat(32));
        let mut reply = authenticated(id, "ann");
        if let ServerMsg::Authenticated {
            game_id: seated, ..
        } = &mut reply
        {
            *seated = Some(game_id);
        }
        conn.send(&reply).await;
        conn
    };
    let token = "cd".repeat(32);
    let (session, _conn) = tokio::join!(client.resume(&token), script);
    assert_eq!(session.unwrap().game_id, Some(game_id));
}

#[tokio::test]
async fn an_unexpected_reply_is_an_error_not_a_panic() {
    let (client, mut conn, _server) = connected().await;
    let script = async move {
        let id = conn.recv().await.id();
        conn.send(&ServerMsg::Ok { id }).await;
        conn
    };
    let (result, _conn) = tokio::join!(client.list_games(), script);
    assert!(
        matches!(result, Err(ClientError::Unexpected(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn undecodable_frames_are_skipped() {
    let (client, mut conn, _server) = connected().await;
    conn.send_frame(Message::Binary(vec![0xc1, 0x00].into()))
        .await;
    conn.send_frame(Message::text("not the protocol")).await;
    let game_id = GameId::new_random_from([3; 16]);
    conn.send(&ServerMsg::Spectators { game_id, count: 4 })
        .await;
    assert_eq!(
        client.next_event().await,
        Some(ServerMsg::Spectators { game_id, count: 4 })
    );
}

#[tokio::test]
async fn closing_fails_waiting_and_later_requests_and_ends_events() {
    let (client, mut conn, _server) = connected().await;
    let script = async move {
        conn.recv().await;
        conn.send(&ServerMsg::Notice {
            code: "shutting_down".into(),
            message: "bye".into(),
        })
        .await;
        conn.close().await;
    };
    let (result, ()) = tokio::join!(client.ping(), script);
    assert!(matches!(result, Err(ClientError::Closed)), "{result:?}");
    assert!(matches!(
        client.next_event().await,
        Some(ServerMsg::Notice { .. })
    ));
    assert_eq!(client.next_event().await, None);
    assert!(client.connection().is_closed());
    assert!(matches!(client.ping().await, Err(ClientError::Closed)));
}

#[tokio::test]
async fn server_pings_are_answered_while_the_client_is_idle() {
    let (_client, mut conn, _server) = connected().await;
    conn.send_frame(Message::Ping(b"hb".to_vec().into())).await;
    match conn.frame().await {
        Some(Message::Pong(payload)) => assert_eq!(&payload[..], b"hb"),
        other => panic!("expected a pong, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_reply_times_out_and_a_late_one_is_dropped() {
    let mut server = support::start().await;
    let options = ConnectOptions {
        request_timeout: Duration::from_secs(2),
        ..ConnectOptions::small()
    };
    let client = Client::connect_with(&server.url, options).await.unwrap();
    let mut conn = server.accept().await;
    let result = client.ping().await;
    assert!(matches!(result, Err(ClientError::Timeout(_))), "{result:?}");
    // The late reply finds no waiter; the next request still gets its own.
    let late = conn.recv().await.id();
    conn.send(&ServerMsg::Pong { id: late }).await;
    let script = async move {
        let id = conn.recv().await.id();
        conn.send(&ServerMsg::Pong { id }).await;
        conn
    };
    let (result, _conn) = tokio::join!(client.ping(), script);
    assert!(result.is_ok());
    assert!(client.connection().try_next_event().is_none());
}
