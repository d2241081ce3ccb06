//! Cluster mode, the lobby (on node B) with node A cut off from Redis, with real server
//! processes: a leave or a seek's cancel that could not reach the lobby changes nothing,
//! and done again once A is back it leaves nothing for another node to pair or accept;
//! nor does a seek whose maker disconnected meanwhile (A tells the lobby which of its
//! connections are open as it rejoins); a node cut off for longer than the others wait
//! for it (its pool members and seeks dropped by the lobby) puts them back as it rejoins.

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::ErrorCode;
use std::time::Duration;

/// How long a node silent on the bus is taken to be alive: 3 s here
/// (`--node-timeout-ms`, 5 s by default), for every node of these tests.
const NODE_TIMEOUT: Duration = Duration::from_secs(3);
const SHORT: [(&str, &str); 1] = [("ELEMENTALS_NODE_TIMEOUT_MS", "3000")];

/// `request()` (made anew each time) asked until it is answered other than `internal`
/// (the lobby is out of reach until A hears it again); that answer.
async fn once_redis_answers(
    client: &mut TestClient,
    request: impl Fn(&mut TestClient) -> ClientMsg,
) -> ServerMsg {
    let every = Duration::from_millis(100);
    until_every("Redis reached again", WAIT, every, async || {
        let msg = request(client);
        match client.request(msg).await {
            ServerMsg::Error {
                code: ErrorCode::Internal,
                ..
            } => None,
            answer => Some(answer),
        }
    })
    .await
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
    // B, first, runs the lobby.
    let b = cluster.node_with("b", &SHORT).await;
    let a = cluster.node_through_with("a", &proxy, &SHORT).await;
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
    until("Rae's connection closed", WAIT, async || {
        connections(&a).await != open
    })
    .await;
    // Back, Pat and Moe ask again: each is done as if asked for the first time.
    proxy.restore();
    a.until_health(200).await;
    assert_ok(&once_redis_answers(&mut pat, leave).await);
    assert_ok(&once_redis_answers(&mut moe, cancel).await);
    // Nobody waits and no seek is listed (Rae's is withdrawn too), for B either: Quin,
    // joining, waits alone.
    let mut quin = signed_in(&b, "quin").await;
    until_lobby_empty(&mut quin, WAIT, "nobody waiting, no seek listed").await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let id = quin.id();
    assert_ok(&quin.request(ClientMsg::LeavePool { id }).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_past_its_presence_puts_its_swept_pool_member_and_seek_back() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    // B, first, runs the lobby.
    let b = cluster.node_with("b", &SHORT).await;
    let a = cluster.node_through_with("a", &proxy, &SHORT).await;
    let mut pat = signed_in(&a, "pat").await;
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let mut mo = signed_in(&a, "moe").await;
    let seek_id = seek_id_at(&mut mo).await;
    let mut quin = signed_in(&b, "quin").await;
    assert!(!lobby_empty(&mut quin).await);

    // A cut off until B has taken it for dead and the lobby has dropped its entries.
    proxy.cut();
    a.until_health(503).await;
    until_lobby_empty(&mut quin, NODE_TIMEOUT + WAIT, "A's entries dropped").await;

    // Back: Pat waits in the pool again (and Quin is paired with Pat), Mo's seek is listed
    // again (and Rae, on B, accepts it). Neither of them did anything.
    proxy.restore();
    a.until_health(200).await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = quin.game_start().await.0.game_id;
    assert_eq!(pat.game_start().await.0.game_id, game);
    let mut rae = signed_in(&b, "rae").await;
    let every = Duration::from_millis(250);
    until_every("the seek listed again", WAIT, every, async || {
        let id = rae.id();
        match rae.request(ClientMsg::AcceptSeek { id, seek_id }).await {
            ServerMsg::Ok { .. } => true,
            ServerMsg::Error {
                code: ErrorCode::UnknownSeek,
                ..
            } => false,
            other => panic!("{other:?}"),
        }
    })
    .await;
    let seeked = rae.game_start().await.0.game_id;
    assert_eq!(mo.game_start().await.0.game_id, seeked);
}
