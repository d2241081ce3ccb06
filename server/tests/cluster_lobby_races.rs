//! Cluster mode (issue 26), the lobby's races across nodes, with real server processes:
//! a pooled player who accepts a seek while another node pairs them ends up in one game;
//! a player paired by another node may queue again as soon as that game is over; a node
//! cut off from Redis for longer than its presence lasts puts its swept pool members and
//! seeks back when it rejoins.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{ClientMsg, GameId, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use std::time::Duration;
use tokio::time::Instant;

/// Attempts at the race; each is a few Redis round trips.
const ATTEMPTS: usize = 8;

async fn signed_in(node: &Node, name: &str) -> TestClient {
    let mut client = TestClient::connect_at(node.addr).await;
    client.register(name).await;
    client
}

async fn seek_at(client: &mut TestClient) -> u64 {
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

/// The game `client` starts.
async fn started(client: &mut TestClient) -> GameId {
    client.game_start().await.0.game_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_accepting_a_seek_as_another_node_pairs_them_plays_one_game() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut by_seek = 0;
    for attempt in 0..ATTEMPTS {
        // Pat waits in a pool on A; on B, Mo has a seek open and Quin is about to join
        // Pat's pool. Pat accepts the seek as Quin joins.
        let mut pat = signed_in(&a, &format!("pat{attempt}")).await;
        let mut mo = signed_in(&b, &format!("mo{attempt}")).await;
        let mut quin = signed_in(&b, &format!("quin{attempt}")).await;
        pat.join_pool(Variant::CLASSIC, "blitz").await;
        let seek_id = seek_at(&mut mo).await;
        let (accept, join) = (pat.id(), quin.id());
        let (accepted, queued) = tokio::join!(
            pat.request(ClientMsg::AcceptSeek {
                id: accept,
                seek_id
            }),
            quin.request(ClientMsg::JoinPool {
                id: join,
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
            }),
        );
        assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
        let by_accept = match &accepted {
            ServerMsg::Ok { .. } => true,
            ServerMsg::Error { code, .. } => {
                assert!(
                    matches!(code, ErrorCode::AlreadyInGame | ErrorCode::UnknownSeek),
                    "{accepted:?}"
                );
                false
            }
            other => panic!("{other:?}"),
        };
        // Quin was paired (with Pat, the pool's only other member) unless it still waits.
        let id = quin.id();
        let by_pool = match quin.request(ClientMsg::LeavePool { id }).await {
            ServerMsg::Ok { .. } => false,
            ServerMsg::Error {
                code: ErrorCode::NotQueued,
                ..
            } => true,
            other => panic!("{other:?}"),
        };
        assert!(
            by_accept != by_pool,
            "attempt {attempt}: Pat is in exactly one game (seek: {by_accept}, pool: {by_pool})"
        );
        let game = started(&mut pat).await;
        let other = if by_accept { &mut mo } else { &mut quin };
        assert_eq!(started(other).await, game);
        if by_accept {
            by_seek += 1;
            // The seek is gone for its maker, who cannot cancel it.
        } else {
            let id = mo.id();
            assert_ok(&mo.request(ClientMsg::CancelSeek { id, seek_id }).await);
        }
        pat.resign(game).await;
        for client in [pat, mo, quin] {
            client.close().await;
        }
    }
    eprintln!("{by_seek} of {ATTEMPTS} attempts went to the seek");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_paired_by_another_node_queues_again_as_soon_as_the_game_is_over() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut pat = signed_in(&a, "pat").await;
    let mut quin = signed_in(&b, "quin").await;
    // Paired by B, on Quin's arrival: A's lobby hears of it only through the cluster.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = started(&mut pat).await;
    assert_eq!(started(&mut quin).await, game);
    pat.resign(game).await;
    pat.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    // At once, well within A's next lobby tick.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let id = pat.id();
    assert_ok(&pat.request(ClientMsg::LeavePool { id }).await);
}

/// Whether `client`'s node sees nobody in any pool and no seek open.
async fn lobby_empty(client: &mut TestClient) -> bool {
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

/// How long a node's owner key outlives its last refresh (`directory::PRESENCE_TTL`).
const PRESENCE_TTL: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_past_its_presence_puts_its_swept_pool_member_and_seek_back() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    let a = cluster.node_through("a", &proxy).await;
    let b = cluster.node("b").await;
    let mut pat = signed_in(&a, "pat").await;
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let mut mo = signed_in(&a, "moe").await;
    let seek_id = seek_at(&mut mo).await;
    let mut quin = signed_in(&b, "quin").await;
    assert!(!lobby_empty(&mut quin).await);

    // A cut off until B has taken it for dead and swept its lobby entries.
    proxy.cut();
    a.until_health(503).await;
    let deadline = Instant::now() + PRESENCE_TTL + WAIT;
    while !lobby_empty(&mut quin).await {
        assert!(Instant::now() < deadline, "A's entries are not swept");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Back: Pat waits in the pool again (and Quin is paired with Pat), Mo's seek is listed
    // again (and Rae, on B, accepts it). Neither of them did anything.
    proxy.restore();
    a.until_health(200).await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = started(&mut quin).await;
    assert_eq!(started(&mut pat).await, game);
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
    let seeked = started(&mut rae).await;
    assert_eq!(started(&mut mo).await, seeked);
}
