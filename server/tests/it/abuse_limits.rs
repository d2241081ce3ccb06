//! Abuse limits over real connections: the per-connection message rate, the total and
//! per-address connection caps (refused before the upgrade; `X-Forwarded-For` believed only
//! from a trusted proxy), the Origin allow-list, failed-login limits and token expiry.

use std::net::IpAddr;

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;
use tokio_tungstenite::tungstenite::Message;

fn localhost() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

async fn login(client: &mut TestClient, name: &str, password: &str) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Login {
            id,
            name: name.into(),
            password: password.into(),
        })
        .await
}

/// Connect through "the proxy" (this test's loopback address) as `client_address`.
async fn connect_as(server: &TestServer, client_address: &str) -> Result<TestClient, u16> {
    TestClient::connect_with(ws_request(server, &[("x-forwarded-for", client_address)])).await
}

async fn hello(client: &mut TestClient) {
    let id = client.id();
    let r = client
        .request(ClientMsg::Hello {
            id,
            protocol_version: 1,
            client: None,
            batch: false,
        })
        .await;
    assert!(matches!(r, ServerMsg::Welcome { .. }), "{r:?}");
}

#[tokio::test]
async fn a_flood_of_messages_is_refused_then_closed_1008() {
    // One message a second, bursts of two: the hello and one more.
    let server = start_server_with(|c| c.message_rate = 1).await;
    let mut flooder = TestClient::connect(&server).await;
    for id in 0..40 {
        if !flooder
            .try_send_frame(Message::Binary(
                wire::encode(&ClientMsg::Ping { id }).into(),
            ))
            .await
        {
            break;
        }
    }
    let (mut pongs, mut refused) = (0, 0);
    let code = loop {
        match flooder.next_frame().await {
            Some(Message::Binary(bytes)) => match wire::decode_server(&bytes).unwrap() {
                ServerMsg::Pong { .. } => pongs += 1,
                ServerMsg::Error {
                    id: None,
                    code: ErrorCode::RateLimited,
                    ..
                } => refused += 1,
                other => panic!("{other:?}"),
            },
            Some(Message::Close(frame)) => break frame.map(|f| u16::from(f.code)),
            Some(_) => {}
            None => break None,
        }
    };
    assert!(pongs >= 1, "the burst is served");
    assert!(refused >= 1, "then messages are refused with rate_limited");
    assert_eq!(code, Some(1008));
    // The limit is per connection: another one is served.
    let mut calm = TestClient::connect(&server).await;
    assert!(matches!(
        calm.request(ClientMsg::Ping { id: 1 }).await,
        ServerMsg::Pong { id: 1 }
    ));
}

#[tokio::test]
async fn a_full_server_refuses_the_upgrade_with_503() {
    let server = start_server_with(|c| c.max_connections = 2).await;
    let _a = TestClient::connect(&server).await;
    let _b = TestClient::connect(&server).await;
    let refused = TestClient::connect_with(ws_request(&server, &[])).await;
    assert_eq!(refused.err(), Some(503));
    // Plain HTTP is not a WebSocket connection and is still served.
    assert_eq!(server.http_get("/healthz").await.0, 200);
}

#[tokio::test]
async fn one_address_over_its_cap_is_refused_with_429_whatever_it_forwards() {
    let server = start_server_with(|c| c.max_connections_per_ip = 2).await;
    let _a = TestClient::connect(&server).await;
    let _b = connect_as(&server, "203.0.113.1").await.unwrap();
    // No proxy is trusted, so the forwarded addresses are ignored: all three are loopback.
    assert_eq!(connect_as(&server, "203.0.113.2").await.err(), Some(429));
    assert_eq!(
        TestClient::connect_with(ws_request(&server, &[]))
            .await
            .err(),
        Some(429)
    );
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_address_has_its_own_cap() {
    let server = start_server_with(|c| {
        c.max_connections_per_ip = 1;
        c.trusted_proxy = vec![localhost()];
    })
    .await;
    let mut first = connect_as(&server, "203.0.113.1").await.unwrap();
    hello(&mut first).await;
    assert_eq!(connect_as(&server, "203.0.113.1").await.err(), Some(429));
    // A spoofed entry to the left of the proxy's own does not help.
    assert_eq!(
        connect_as(&server, "198.51.100.9, 203.0.113.1").await.err(),
        Some(429)
    );
    let _second = connect_as(&server, "203.0.113.2").await.unwrap();
    // The proxy's own connections (no header) count as the proxy's address.
    let _own = TestClient::connect(&server).await;
    assert_eq!(
        TestClient::connect_with(ws_request(&server, &[]))
            .await
            .err(),
        Some(429)
    );
}

#[tokio::test]
async fn browsers_from_foreign_origins_are_refused_with_403() {
    let server = start_server().await;
    let this_host = format!("http://{}", server.addr);
    let allowed = [vec![], vec![("origin", this_host.as_str())]];
    for headers in allowed {
        let mut client = TestClient::connect_with(ws_request(&server, &headers))
            .await
            .unwrap_or_else(|status| panic!("{headers:?} refused with {status}"));
        hello(&mut client).await;
    }
    let other_port = format!("http://127.0.0.1:{}", server.addr.port() + 1);
    for origin in ["https://evil.example", "null", other_port.as_str()] {
        let refused = TestClient::connect_with(ws_request(&server, &[("origin", origin)])).await;
        assert_eq!(refused.err(), Some(403), "{origin}");
    }
}

#[tokio::test]
async fn an_origin_allow_list_replaces_the_same_host_default() {
    let server =
        start_server_with(|c| c.allowed_origin = vec!["https://play.example.com".into()]).await;
    let ok = ws_request(&server, &[("origin", "https://play.example.com")]);
    hello(&mut TestClient::connect_with(ok).await.unwrap()).await;
    let this_host = format!("http://{}", server.addr);
    let refused = TestClient::connect_with(ws_request(&server, &[("origin", &this_host)])).await;
    assert_eq!(refused.err(), Some(403));
    // Native clients send no Origin and are not affected.
    TestClient::connect(&server).await;
}

#[tokio::test]
async fn failed_logins_are_limited_per_account() {
    let server = start_server().await;
    let mut owner = TestClient::connect(&server).await;
    owner.register("victim").await;
    let mut guesser = TestClient::connect(&server).await;
    for _ in 0..5 {
        let r = login(&mut guesser, "victim", "guess-guess").await;
        assert_error(&r, ErrorCode::BadCredentials);
    }
    // The sixth guess is refused without being checked, right or wrong, for any caller.
    assert_error(
        &login(&mut guesser, "VICTIM", "guess-guess").await,
        ErrorCode::RateLimited,
    );
    assert_error(
        &login(&mut guesser, "victim", "password123").await,
        ErrorCode::RateLimited,
    );
    // Other accounts are unaffected, and the guesser's connection is still open.
    let mut bystander = TestClient::connect(&server).await;
    bystander.register("bystander").await;
    let r = login(&mut guesser, "bystander", "password123").await;
    assert!(matches!(r, ServerMsg::Authenticated { .. }), "{r:?}");
    // A session already signed in is not touched by the lock.
    owner.assert_open().await;
}

#[tokio::test]
async fn failed_logins_are_limited_per_address() {
    let server = start_server_with(|c| c.trusted_proxy = vec![localhost()]).await;
    let mut owner = TestClient::connect(&server).await;
    owner.register("spray01").await;
    let mut attacker = connect_as(&server, "203.0.113.66").await.unwrap();
    hello(&mut attacker).await;
    // Four guesses at each of five names: under each account's limit, at the address's.
    for n in 0..5 {
        for _ in 0..4 {
            let r = login(&mut attacker, &format!("nobody{n}"), "password123").await;
            assert_error(&r, ErrorCode::BadCredentials);
        }
    }
    assert_error(
        &login(&mut attacker, "spray01", "password123").await,
        ErrorCode::RateLimited,
    );
    // The same account from another address signs in.
    let mut elsewhere = connect_as(&server, "203.0.113.7").await.unwrap();
    hello(&mut elsewhere).await;
    let r = login(&mut elsewhere, "spray01", "password123").await;
    assert!(matches!(r, ServerMsg::Authenticated { .. }), "{r:?}");
}

#[tokio::test]
async fn an_expired_token_does_not_resume() {
    // A lifetime of zero: every token is expired by the time it is presented.
    let server = start_server_with(|c| c.token_days = 0).await;
    let mut client = TestClient::connect(&server).await;
    let id = client.id();
    let (token, expires_at) = match client.request(ClientMsg::Guest { id }).await {
        ServerMsg::Authenticated {
            token,
            token_expires_at,
            ..
        } => (token, token_expires_at),
        other => panic!("{other:?}"),
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(expires_at <= now_ms);
    let mut again = TestClient::connect(&server).await;
    assert_error(&again.resume(&token).await, ErrorCode::InvalidToken);
}
