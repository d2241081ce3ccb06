//! What the cluster tests' clients do and check: sign in, open a seek, watch the lobby
//! empty, read a game's events to its end, and find its result rated once on every node.

use std::net::SocketAddr;
use std::time::Duration;

use elementals_protocol::messages::{ClientMsg, GameId, GameInfo, GameSnapshot, MyGame, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;

use super::{Node, LIST_POLL};
use crate::common::{until_every, TestClient, WAIT};

/// A client of `node`'s, registered as `name`.
pub async fn signed_in(node: &Node, name: &str) -> TestClient {
    let mut client = TestClient::connect_at(node.addr).await;
    client.register(name).await;
    client
}

/// `client` opens a rated classical blitz seek; its id.
pub async fn seek_id_at(client: &mut TestClient) -> u64 {
    let id = client.id();
    let created = client
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: true,
        })
        .await;
    match created {
        ServerMsg::SeekCreated { seek, .. } => seek.seek_id,
        other => panic!("{other:?}"),
    }
}

/// Whether `client`'s node sees nobody in any pool (as its lobby counted them last) and
/// no seek open.
pub async fn lobby_empty(client: &mut TestClient) -> bool {
    let id = client.id();
    let pools = match client.request(ClientMsg::LobbyCounts { id }).await {
        ServerMsg::Counts { pools, .. } => pools,
        other => panic!("{other:?}"),
    };
    let id = client.id();
    let seeks = match client.request(ClientMsg::ListSeeks { id }).await {
        ServerMsg::Seeks { seeks, .. } => seeks,
        other => panic!("{other:?}"),
    };
    pools.is_empty() && seeks.is_empty()
}

/// Waits until `client`'s node sees nobody in any pool and no seek open, failing with
/// `what` after `within`.
pub async fn until_lobby_empty(client: &mut TestClient, within: Duration, what: &str) {
    until_every(what, within, LIST_POLL, async || lobby_empty(client).await).await;
}

/// `GET /api/me/games` on `addr` with `token`'s session.
pub async fn http_my_games(addr: SocketAddr, token: &str) -> Vec<MyGame> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /api/me/games HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{text}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Reads `client`'s numbered events up to and including `game_over`.
pub async fn events_until_over(client: &mut TestClient) -> Vec<ServerMsg> {
    let mut events = Vec::new();
    loop {
        let msg = tokio::time::timeout(WAIT, client.recv())
            .await
            .expect("the game's events arrive");
        let over = matches!(msg, ServerMsg::GameOver { .. });
        if msg.seq().is_some() {
            events.push(msg);
        }
        if over {
            return events;
        }
    }
}

/// Reads `spectator`'s events to the game's end: every event numbered after `seq` comes
/// once and in order.
pub async fn seen_once_in_order_after(spectator: &mut TestClient, seq: u64) {
    let seen = events_until_over(spectator).await;
    let after: Vec<u64> = seen
        .iter()
        .filter_map(ServerMsg::seq)
        .filter(|s| *s > seq)
        .collect();
    let expected: Vec<u64> = (seq + 1..=seq + after.len() as u64).collect();
    assert_eq!(after, expected, "{seen:?}");
}

/// Reads `spectator`'s events to the game's end: every event after `snapshot`, once and
/// in order, with `rounds` round results among them.
pub async fn watched_to_the_end(
    spectator: &mut TestClient,
    snapshot: &GameSnapshot,
    rounds: usize,
) {
    let seen = events_until_over(spectator).await;
    let seqs: Vec<u64> = seen.iter().filter_map(ServerMsg::seq).collect();
    let expected: Vec<u64> = (snapshot.seq + 1..=snapshot.seq + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "{seen:?}");
    let results = seen
        .iter()
        .filter(|m| matches!(m, ServerMsg::RoundResult { .. }))
        .count();
    assert_eq!(results, rounds, "{seen:?}");
}

/// The game's end as both its players see it (seat two won, rated), and its rating change
/// applied once, whichever of `nodes` is asked (each player 1.0 before the game).
pub async fn seat_two_won_rated_once(
    players: [&mut TestClient; 2],
    game: &GameInfo,
    nodes: &[&Node],
) {
    for client in players {
        match client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, .. } => assert_eq!(result.winner, Some(Seat::Two)),
            _ => unreachable!(),
        }
        client
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
    let (loser, winner) = (&game.players.one.name, &game.players.two.name);
    for node in nodes {
        let won = node.player(winner).await;
        let lost = node.player(loser).await;
        assert_eq!(won["rating"], 1.5, "{won}");
        assert_eq!(won["history"].as_array().unwrap().len(), 1, "{won}");
        assert_eq!(lost["rating"], 1.0, "{lost}");
        assert_eq!(lost["history"].as_array().unwrap().len(), 1, "{lost}");
    }
}

/// The game `client` starts.
pub async fn started(client: &mut TestClient) -> GameId {
    client.game_start().await.0.game_id
}

/// `client` joins the unrated blitz pool (everyone's rating stays 1.0 there, so any two
/// waiting are paired at once); the answer, whatever it is.
pub async fn join_unrated(client: &mut TestClient) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: false,
        })
        .await
}

pub async fn queued_unrated(client: &mut TestClient) {
    let queued = join_unrated(client).await;
    assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
}
