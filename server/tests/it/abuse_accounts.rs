//! Accounts over real connections: new accounts limited per address (a `logout`-`guest`
//! loop included; behind a trusted proxy, per forwarded address), and the cap on an
//! account's sessions.

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::ErrorCode;

async fn guest(client: &mut TestClient) -> ServerMsg {
    let id = client.id();
    client.request(ClientMsg::Guest { id }).await
}

async fn logout(client: &mut TestClient) {
    let id = client.id();
    assert_ok(&client.request(ClientMsg::Logout { id }).await);
}

async fn login(client: &mut TestClient, name: &str) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Login {
            id,
            name: name.into(),
            password: "password123".into(),
        })
        .await
}

fn refused_with_retry(msg: &ServerMsg) {
    assert_error(msg, ErrorCode::RateLimited);
    let ServerMsg::Error { message, .. } = msg else {
        unreachable!()
    };
    assert!(message.contains("retry in"), "{message}");
}

#[tokio::test]
async fn a_logout_guest_loop_is_refused_past_the_new_account_allowance() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| {
            c.new_accounts_per_ip = 5;
            c.trusted_proxy = vec!["127.0.0.1".parse().unwrap()];
        })
        .await;
        let mut flooder = TestClient::connect(&server).await;
        for n in 0..5 {
            let signed = guest(&mut flooder).await;
            assert!(
                matches!(signed, ServerMsg::Authenticated { .. }),
                "{n}: {signed:?}"
            );
            logout(&mut flooder).await;
        }
        let refused = guest(&mut flooder).await;
        refused_with_retry(&refused);
        // Refused means not signed in.
        let id = flooder.id();
        let join = flooder
            .request(ClientMsg::JoinPool {
                id,
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: false,
            })
            .await;
        assert_error(&join, ErrorCode::NotAuthenticated);
        // Registering is creating an account too; from another connection of the address.
        let mut other = TestClient::connect(&server).await;
        let id = other.id();
        let register = other
            .request(ClientMsg::Register {
                id,
                name: "alice".into(),
                password: "password123".into(),
            })
            .await;
        refused_with_retry(&register);
        // Another client behind the trusted proxy has an allowance of its own.
        let mut elsewhere =
            TestClient::connect_with(ws_request(&server, &[("x-forwarded-for", "203.0.113.9")]))
                .await
                .unwrap();
        let id = elsewhere.id();
        let hello = elsewhere
            .request(ClientMsg::Hello {
                id,
                protocol_version: 1,
                client: None,
                batch: false,
            })
            .await;
        assert!(matches!(hello, ServerMsg::Welcome { .. }), "{hello:?}");
        assert!(matches!(
            guest(&mut elsewhere).await,
            ServerMsg::Authenticated { .. }
        ));
    }
}

#[tokio::test]
async fn a_failed_registration_does_not_use_up_the_allowance() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| c.new_accounts_per_ip = 2).await;
        let mut client = TestClient::connect(&server).await;
        client.register("alice").await;
        logout(&mut client).await;
        for _ in 0..5 {
            let id = client.id();
            let taken = client
                .request(ClientMsg::Register {
                    id,
                    name: "ALICE".into(),
                    password: "password123".into(),
                })
                .await;
            assert_error(&taken, ErrorCode::NameTaken);
        }
        client.register("bob").await;
        logout(&mut client).await;
        refused_with_retry(&guest(&mut client).await);
    }
}

#[tokio::test]
async fn sign_ins_past_the_session_cap_revoke_the_oldest_tokens() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| c.max_sessions_per_account = 2).await;
        let mut alice = TestClient::connect(&server).await;
        let first = alice.register("alice").await;
        let mut tokens = vec![first];
        for _ in 0..2 {
            let mut again = TestClient::connect(&server).await;
            match login(&mut again, "alice").await {
                ServerMsg::Authenticated { token, .. } => tokens.push(token),
                other => panic!("{other:?}"),
            }
        }
        let mut late = TestClient::connect(&server).await;
        assert_error(&late.resume(&tokens[0]).await, ErrorCode::InvalidToken);
        for token in &tokens[1..] {
            let mut client = TestClient::connect(&server).await;
            assert!(matches!(
                client.resume(token).await,
                ServerMsg::Authenticated { .. }
            ));
        }
    }
}

#[tokio::test]
async fn a_start_prunes_old_guests_nobody_can_sign_in_as() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut gone = TestClient::connect(&server).await;
        assert!(matches!(
            guest(&mut gone).await,
            ServerMsg::Authenticated { .. }
        ));
        logout(&mut gone).await;
        let mut kept = TestClient::connect(&server).await;
        let token = match guest(&mut kept).await {
            ServerMsg::Authenticated { token, .. } => token,
            other => panic!("{other:?}"),
        };
        let mut alice = TestClient::connect(&server).await;
        alice.register("alice").await;
        logout(&mut alice).await;
        let mut server = server.restart().await;
        server.stop().await;
        // A month later: every account is old; one guest's token is still valid.
        let month_ms: i64 = 30 * 24 * 3600 * 1000;
        server.sql(
            &format!("UPDATE accounts SET created_at = created_at - {month_ms}"),
            &format!("UPDATE accounts SET created_at = created_at - {month_ms}"),
        );
        // Started and stopped at once: its first pass runs all the same.
        let mut server = server.restart().await;
        server.stop().await;
        let guests = server.sql(
            "SELECT count(*) FROM accounts WHERE guest = 1",
            "SELECT count(*) FROM accounts WHERE guest",
        );
        let registered = server.sql(
            "SELECT count(*) FROM accounts WHERE guest = 0 AND name NOT LIKE 'bot-%'",
            "SELECT count(*) FROM accounts WHERE NOT guest AND name NOT LIKE 'bot-%'",
        );
        assert_eq!((guests, registered), (Some(1), Some(1)));
        let server = server.restart().await;
        let mut back = TestClient::connect(&server).await;
        assert!(matches!(
            back.resume(&token).await,
            ServerMsg::Authenticated { .. }
        ));
    }
}
