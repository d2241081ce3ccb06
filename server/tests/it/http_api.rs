//! The JSON API over real HTTP: pages with caps, the leaderboard's brief cache, and the
//! per-address request limit (429 with `Retry-After`; behind a trusted proxy, per
//! forwarded address; health and metrics not limited); the API's documents
//! (`/openapi.json`, `/asyncapi.json`) served as committed.

use std::net::SocketAddr;

use crate::common::*;
use elementals_protocol::messages::ServerMsg;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A GET with extra headers: the status, the response's head and its body.
async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (
        text[9..12].parse().unwrap(),
        head.to_lowercase(),
        body.to_owned(),
    )
}

fn rows(body: &str) -> Vec<serde_json::Value> {
    serde_json::from_str(body).unwrap()
}

/// `n` registered accounts written straight into a stopped server's database.
async fn seeded_server(backend: Backend, n: u32) -> TestServer {
    let mut server = start_server_on(backend).await;
    server.stop().await;
    server.sql(
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n})
             INSERT INTO accounts (name, password_hash, guest, rating, created_at)
             SELECT printf('player%03d', i), 'x', 0, 1.0 + i / 1000.0, 0 FROM n"
        ),
        &format!(
            "INSERT INTO accounts (name, password_hash, guest, rating, created_at)
             SELECT format('player%s', lpad(i::text, 3, '0')), 'x', FALSE, 1.0 + i / 1000.0, 0
             FROM generate_series(1, {n}) AS i"
        ),
    );
    server.restart().await
}

#[tokio::test]
async fn the_leaderboard_is_paged_with_a_cap_of_a_hundred() {
    for backend in BACKENDS {
        let server = seeded_server(backend, 150).await;
        let names = |body: &str| -> Vec<String> {
            rows(body)
                .iter()
                .map(|r| r["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let (status, _, body) = get(server.addr, "/api/leaderboard", &[]).await;
        assert_eq!(status, 200);
        let first = names(&body);
        assert_eq!(first.len(), 100);
        assert_eq!(first[0], "player150");
        // A larger limit is held to the cap; the next page goes on where it stopped.
        let (_, _, body) = get(server.addr, "/api/leaderboard?limit=1000", &[]).await;
        assert_eq!(names(&body), first);
        let (_, _, body) = get(server.addr, "/api/leaderboard?limit=2&offset=100", &[]).await;
        assert_eq!(names(&body), ["player050", "player049"]);
        let (_, _, body) = get(server.addr, "/api/leaderboard?offset=140", &[]).await;
        assert_eq!(names(&body).len(), 10);
        // Bad parameters: 400, and nothing read.
        for bad in ["offset=10001", "limit=x", "limit=-1", "page=2"] {
            let (status, _, _) = get(server.addr, &format!("/api/leaderboard?{bad}"), &[]).await;
            assert_eq!(status, 400, "{bad}");
        }
    }
}

#[tokio::test]
async fn a_players_history_and_the_live_games_are_paged() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "alice", "bob").await;
        let (_c, _d, _) = paired_players(&server, "carol", "dave").await;
        let (_, _, body) = get(server.addr, "/api/games/live", &[]).await;
        assert_eq!(rows(&body).len(), 2);
        let (_, _, first) = get(server.addr, "/api/games/live?limit=1", &[]).await;
        let (_, _, second) = get(server.addr, "/api/games/live?limit=1&offset=1", &[]).await;
        let (first, second) = (rows(&first), rows(&second));
        assert_eq!((first.len(), second.len()), (1, 1));
        assert_ne!(first[0]["game_id"], second[0]["game_id"]);
        let (_, _, none) = get(server.addr, "/api/games/live?offset=2", &[]).await;
        assert!(rows(&none).is_empty());

        one.resign(game.game_id).await;
        // The rating change is stored once `rating_update` is sent.
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let (_, _, page) = get(server.addr, "/api/players/bob?limit=1", &[]).await;
        let page: serde_json::Value = serde_json::from_str(&page).unwrap();
        assert_eq!(page["history"].as_array().unwrap().len(), 1);
        let (_, _, page) = get(server.addr, "/api/players/bob?offset=1", &[]).await;
        let page: serde_json::Value = serde_json::from_str(&page).unwrap();
        assert!(page["history"].as_array().unwrap().is_empty());
    }
}

#[tokio::test]
async fn the_leaderboard_is_served_from_memory_within_its_cache_time() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| c.leaderboard_cache_ms = 3_600_000).await;
        let (_, _, body) = get(server.addr, "/api/leaderboard", &[]).await;
        assert!(rows(&body).is_empty());
        let mut alice = TestClient::connect(&server).await;
        alice.register("alice").await;
        let (_, _, body) = get(server.addr, "/api/leaderboard", &[]).await;
        assert!(rows(&body).is_empty(), "the first read is still served");
        // A server that does not cache shows it at once.
        let fresh = start_server_on_with(backend, |c| c.leaderboard_cache_ms = 0).await;
        let (_, _, body) = get(fresh.addr, "/api/leaderboard", &[]).await;
        assert!(rows(&body).is_empty());
        let mut bob = TestClient::connect(&fresh).await;
        bob.register("bob").await;
        let (_, _, body) = get(fresh.addr, "/api/leaderboard", &[]).await;
        assert_eq!(rows(&body).len(), 1);
    }
}

#[tokio::test]
async fn requests_past_the_per_address_limit_are_answered_429_with_retry_after() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| {
            c.http_requests_per_ip = 1;
            c.trusted_proxy = vec!["127.0.0.1".parse().unwrap()];
        })
        .await;
        // A burst of two, then one a second.
        for _ in 0..2 {
            assert_eq!(get(server.addr, "/api/games/live", &[]).await.0, 200);
        }
        let (status, head, _) = get(server.addr, "/api/leaderboard", &[]).await;
        assert_eq!(status, 429);
        assert!(head.contains("\r\nretry-after: 1"), "{head}");
        // Health and metrics are not limited.
        assert_eq!(get(server.addr, "/healthz", &[]).await.0, 200);
        assert_eq!(get(server.addr, "/metrics", &[]).await.0, 200);
        // Behind the trusted proxy, each forwarded client has its own allowance.
        let forwarded = [("x-forwarded-for", "203.0.113.7")];
        assert_eq!(
            get(server.addr, "/api/leaderboard", &forwarded).await.0,
            200
        );
    }
}

#[tokio::test]
async fn the_api_documents_are_served_as_committed() {
    let server = start_server().await;
    for (path, file) in [
        ("/openapi.json", "openapi.json"),
        ("/asyncapi.json", "asyncapi.json"),
    ] {
        let (status, head, body) = get(server.addr, path, &[]).await;
        assert_eq!(status, 200, "{path}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let committed = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../protocol/schema")
                .join(file),
        )
        .unwrap();
        assert_eq!(
            body, committed,
            "{path} is the committed protocol/schema/{file}"
        );
    }
}
