//! Cluster mode (issue 26), the lobby with Redis out of reach, with real server processes:
//! a leave or a seek's cancel that Redis did not take changes nothing, and done again once
//! Redis is back it leaves nothing in Redis for another node to pair or accept; nor does a
//! seek whose maker disconnected meanwhile; a node cut
//! off from Redis for longer than its presence lasts puts its swept pool members and seeks
//! back when it rejoins.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::ErrorCode;
use std::time::Duration;
use tokio::time::Instant;

/// How long a node's owner key outlives its last refresh (`directory::PRESENCE_TTL`).
const PRESENCE_TTL: Duration = Duration::from_secs(15);

/// `request()` (made anew each time) asked until it is answered other than `internal`
/// (the lobby's connection to Redis is made again at its next tick, after the node's
/// own); that answer.
async fn once_redis_answers(
    client: &mut TestClient,
    request: impl Fn(&mut TestClient) -> ClientMsg,
) -> ServerMsg {
    let deadline = Instant::now() + WAIT;
    loop {
        let msg = request(client);
        match client.request(msg).await {
            ServerMsg::Error {
                code: ErrorCode::Internal,
                ..
            } => assert!(Instant::now() < deadline, "Redis is not reached again"),
            answer => return answer,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `node`'s open WebSocket connections, from its `/metrics`.
async fn connections(node: &Node) -> u64 {
    let (status, body) = node.http_get("/metrics").await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix("elementals_connections "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no elementals_connections in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_cancel_or_disconnect_that_redis_missed_is_done_once_it_is_back() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    let a = cluster.node_through("a", &proxy).await;
    let b = cluster.node("b").await;
    let mut pat = signed_in(&a, "pat").await;
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let mut moe = signed_in(&a, "moe").await;
    let seek_id = seek_id_at(&mut moe).await;
    let mut rae = signed_in(&a, "rae").await;
    seek_id_at(&mut rae).await;

    // A cut off: Pat's leave and Moe's cancel are answered `internal`; Rae disconnects.
    proxy.cut();
    let leave = |c: &mut TestClient| ClientMsg::LeavePool { id: c.id() };
    let cancel = move |c: &mut TestClient| ClientMsg::CancelSeek {
        id: c.id(),
        seek_id,
    };
    let (left, cancelled) = (leave(&mut pat), cancel(&mut moe));
    for answer in [pat.request(left).await, moe.request(cancelled).await] {
        assert!(
            matches!(
                answer,
                ServerMsg::Error {
                    code: ErrorCode::Internal,
                    ..
                }
            ),
            "{answer:?}"
        );
    }

    let open = connections(&a).await;
    rae.close().await;
    let deadline = Instant::now() + WAIT;
    while connections(&a).await == open {
        assert!(Instant::now() < deadline, "Rae's connection is not closed");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The lobby has had Rae's `gone` (queued as the connection ended) before this.
    let id = pat.id();
    let counted = pat.request(ClientMsg::LobbyCounts { id }).await;
    assert!(matches!(counted, ServerMsg::Counts { .. }), "{counted:?}");

    // Back, Pat and Moe ask again: each is done as if asked for the first time.
    proxy.restore();
    a.until_health(200).await;
    assert_ok(&once_redis_answers(&mut pat, leave).await);
    assert_ok(&once_redis_answers(&mut moe, cancel).await);
    // Nobody waits and no seek is listed (Rae's is withdrawn too), for B either: Quin,
    // joining, waits alone.
    let mut quin = signed_in(&b, "quin").await;
    until_lobby_empty(&mut quin, WAIT, "Pat waits, or a seek is listed").await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let id = quin.id();
    assert_ok(&quin.request(ClientMsg::LeavePool { id }).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_past_its_presence_puts_its_swept_pool_member_and_seek_back() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    let a = cluster.node_through("a", &proxy).await;
    let b = cluster.node("b").await;
    let mut pat = signed_in(&a, "pat").await;
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let mut mo = signed_in(&a, "moe").await;
    let seek_id = seek_id_at(&mut mo).await;
    let mut quin = signed_in(&b, "quin").await;
    assert!(!lobby_empty(&mut quin).await);

    // A cut off until B has taken it for dead and swept its lobby entries.
    proxy.cut();
    a.until_health(503).await;
    until_lobby_empty(&mut quin, PRESENCE_TTL + WAIT, "A's entries are not swept").await;

    // Back: Pat waits in the pool again (and Quin is paired with Pat), Mo's seek is listed
    // again (and Rae, on B, accepts it). Neither of them did anything.
    proxy.restore();
    a.until_health(200).await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = quin.game_start().await.0.game_id;
    assert_eq!(pat.game_start().await.0.game_id, game);
    let mut rae = signed_in(&b, "rae").await;
    let deadline = Instant::now() + WAIT;
    loop {
        let id = rae.id();
        match rae.request(ClientMsg::AcceptSeek { id, seek_id }).await {
            ServerMsg::Ok { .. } => break,
            ServerMsg::Error {
                code: ErrorCode::UnknownSeek,
                ..
            } => assert!(Instant::now() < deadline, "the seek is not listed again"),
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let seeked = rae.game_start().await.0.game_id;
    assert_eq!(mo.game_start().await.0.game_id, seeked);
}
