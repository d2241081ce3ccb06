//! Cluster mode (issue 26), the lobby across nodes: real `elementals-server` processes on
//! one PostgreSQL database and Redis, players waiting on different nodes.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{Challenge, ClientMsg, Seek, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

/// Seat two's 2 beats seat one's 5 and moves one square towards -3: three such rounds win.
const TWO_WINS: (u16, u16) = (5, 2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_queued_on_two_nodes_are_paired_and_play_a_rated_game_rated_once() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut on_a = TestClient::connect_at(a.addr).await;
    on_a.register("ann").await;
    let mut on_b = TestClient::connect_at(b.addr).await;
    on_b.register("bob").await;
    on_a.join_pool(Variant::CLASSIC, "blitz").await;
    on_b.join_pool(Variant::CLASSIC, "blitz").await;
    let (game, seat_a) = on_a.game_start().await;
    let (game_b, seat_b) = on_b.game_start().await;
    assert_eq!(game.game_id, game_b.game_id);
    assert_ne!(seat_a, seat_b);
    assert!(game.rated);
    let (mut one, mut two) = if seat_a == Seat::One {
        (on_a, on_b)
    } else {
        (on_b, on_a)
    };
    for round in 1..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    seat_two_won_rated_once([&mut one, &mut two], &game, &[&a, &b]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_who_left_or_disconnected_on_one_node_is_not_paired_from_another() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut left = TestClient::connect_at(a.addr).await;
    left.register("ann").await;
    left.join_pool(Variant::CLASSIC, "blitz").await;
    let id = left.id();
    assert_ok(&left.request(ClientMsg::LeavePool { id }).await);
    let id = left.id();
    assert_error(
        &left.request(ClientMsg::LeavePool { id }).await,
        ErrorCode::NotQueued,
    );
    let mut gone = TestClient::connect_at(a.addr).await;
    gone.register("cid").await;
    gone.join_pool(Variant::CLASSIC, "blitz").await;
    gone.close().await;
    // Counted on B once A has withdrawn it: nobody else waits in the pool.
    let mut waiting = TestClient::connect_at(b.addr).await;
    waiting.register("bob").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let id = waiting.id();
        match waiting.request(ClientMsg::LobbyCounts { id }).await {
            ServerMsg::Counts { pools, .. } if pools.is_empty() => break,
            ServerMsg::Counts { pools, .. } => {
                assert!(tokio::time::Instant::now() < deadline, "{pools:?}")
            }
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    waiting.join_pool(Variant::CLASSIC, "blitz").await;
    // B's lobby ticks it through the pool: it waits there alone, unpaired.
    match waiting
        .expect("queue_status", |m| {
            matches!(
                m,
                ServerMsg::QueueStatus { .. } | ServerMsg::GameStart { .. }
            )
        })
        .await
    {
        ServerMsg::QueueStatus {
            players_waiting, ..
        } => assert_eq!(players_waiting, 1),
        other => panic!("paired with a player who had gone: {other:?}"),
    }
    // And A's players see B's in the cluster's counts.
    let mut counter = TestClient::connect_at(a.addr).await;
    counter.register("dee").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let id = counter.id();
        match counter.request(ClientMsg::LobbyCounts { id }).await {
            ServerMsg::Counts { pools, .. } if pools.iter().any(|p| p.waiting == 1) => break,
            ServerMsg::Counts { pools, .. } => {
                assert!(tokio::time::Instant::now() < deadline, "{pools:?}")
            }
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn seek_at(client: &mut TestClient) -> Seek {
    let id = client.id();
    match client
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: true,
        })
        .await
    {
        ServerMsg::SeekCreated { seek, .. } => seek,
        other => panic!("{other:?}"),
    }
}

async fn seeks_at(client: &mut TestClient) -> Vec<Seek> {
    let id = client.id();
    match client.request(ClientMsg::ListSeeks { id }).await {
        ServerMsg::Seeks { seeks, .. } => seeks,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seek_made_on_one_node_is_listed_and_accepted_on_another() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut maker = TestClient::connect_at(a.addr).await;
    maker.register("ann").await;
    let mut other = TestClient::connect_at(b.addr).await;
    other.register("cid").await;
    let mut taker = TestClient::connect_at(b.addr).await;
    taker.register("bob").await;
    let seek = seek_at(&mut maker).await;
    let theirs = seek_at(&mut other).await;
    assert_ne!(
        seek.seek_id, theirs.seek_id,
        "ids are unique in the cluster"
    );
    // Every node lists every node's seeks.
    for client in [&mut maker, &mut taker] {
        let ids: Vec<u64> = seeks_at(client).await.iter().map(|s| s.seek_id).collect();
        assert!(
            ids.contains(&seek.seek_id) && ids.contains(&theirs.seek_id),
            "{ids:?}"
        );
    }
    // One's own seek, from another node: refused.
    let id = maker.id();
    assert_error(
        &maker
            .request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await,
        ErrorCode::OwnSeek,
    );
    let id = taker.id();
    assert_ok(
        &taker
            .request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await,
    );
    maker
        .expect(
            "seek_removed",
            |m| matches!(m, ServerMsg::SeekRemoved { seek_id } if *seek_id == seek.seek_id),
        )
        .await;
    let (game, seat_maker) = maker.game_start().await;
    let (game_b, seat_taker) = taker.game_start().await;
    assert_eq!(game.game_id, game_b.game_id);
    assert_ne!(seat_maker, seat_taker);
    assert!(game.rated);
    // Taken once: accepting it again, from either node, finds it gone.
    let id = other.id();
    assert_error(
        &other
            .request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await,
        ErrorCode::UnknownSeek,
    );
    let ids: Vec<u64> = seeks_at(&mut other)
        .await
        .iter()
        .map(|s| s.seek_id)
        .collect();
    assert_eq!(ids, vec![theirs.seek_id]);
    // A seek's maker who leaves takes it off every node's list.
    other.close().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !seeks_at(&mut taker).await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the seek outlived its maker"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn challenge_at(client: &mut TestClient, opponent: &str) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Challenge {
            id,
            opponent: opponent.into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: true,
        })
        .await
}

async fn challenge_received(client: &mut TestClient) -> Challenge {
    match client
        .expect("challenge_received", |m| {
            matches!(m, ServerMsg::ChallengeReceived { .. })
        })
        .await
    {
        ServerMsg::ChallengeReceived { challenge } => challenge,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_reaches_a_player_on_another_node_who_declines_then_accepts() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut from = TestClient::connect_at(a.addr).await;
    from.register("ann").await;
    let mut to = TestClient::connect_at(b.addr).await;
    to.register("Bob").await;
    // Nobody of that name is online anywhere.
    assert_error(
        &challenge_at(&mut from, "nobody").await,
        ErrorCode::UnknownPlayer,
    );
    // Declined on B: A's player hears it.
    let sent = match challenge_at(&mut from, "bob").await {
        ServerMsg::ChallengeSent { challenge, .. } => challenge,
        other => panic!("{other:?}"),
    };
    assert_eq!(sent.to, "Bob", "the name as signed up");
    assert_eq!(challenge_received(&mut to).await, sent);
    let id = to.id();
    assert_ok(
        &to.request(ClientMsg::DeclineChallenge {
            id,
            challenge_id: sent.challenge_id,
        })
        .await,
    );
    from.expect("challenge_declined", |m| {
        matches!(m, ServerMsg::ChallengeDeclined { challenge_id } if *challenge_id == sent.challenge_id)
    })
    .await;
    // Cancelled on A: B's player hears it, and can no longer accept it.
    let cancelled = match challenge_at(&mut from, "bob").await {
        ServerMsg::ChallengeSent { challenge, .. } => challenge,
        other => panic!("{other:?}"),
    };
    challenge_received(&mut to).await;
    let id = from.id();
    assert_ok(
        &from
            .request(ClientMsg::CancelChallenge {
                id,
                challenge_id: cancelled.challenge_id,
            })
            .await,
    );
    to.expect("challenge_cancelled", |m| {
        matches!(m, ServerMsg::ChallengeCancelled { challenge_id } if *challenge_id == cancelled.challenge_id)
    })
    .await;
    let id = to.id();
    assert_error(
        &to.request(ClientMsg::AcceptChallenge {
            id,
            challenge_id: cancelled.challenge_id,
        })
        .await,
        ErrorCode::UnknownChallenge,
    );
    // Accepted on B: the game starts for both.
    let accepted = match challenge_at(&mut from, "bob").await {
        ServerMsg::ChallengeSent { challenge, .. } => challenge,
        other => panic!("{other:?}"),
    };
    challenge_received(&mut to).await;
    let id = to.id();
    assert_ok(
        &to.request(ClientMsg::AcceptChallenge {
            id,
            challenge_id: accepted.challenge_id,
        })
        .await,
    );
    let (game, seat_from) = from.game_start().await;
    let (game_to, seat_to) = to.game_start().await;
    assert_eq!(game.game_id, game_to.game_id);
    assert_ne!(seat_from, seat_to);
    assert!(game.rated);
    // Answered once: not again.
    let id = to.id();
    assert_error(
        &to.request(ClientMsg::AcceptChallenge {
            id,
            challenge_id: accepted.challenge_id,
        })
        .await,
        ErrorCode::UnknownChallenge,
    );
}

/// How long a node's owner key outlives its last refresh (`directory::PRESENCE_TTL`).
const PRESENCE_TTL: std::time::Duration = std::time::Duration::from_secs(15);

/// The cluster's lobby entries left in Redis: pool members, seeks, challenges.
fn lobby_entries(cluster: &Cluster) -> (u64, u64, u64) {
    let mut con = cluster.redis();
    let name = &cluster.name;
    let pools: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{name}:pools"))
        .query(&mut con)
        .unwrap();
    let mut members = 0;
    for pool in pools {
        let n: u64 = redis::cmd("ZCARD")
            .arg(format!("{name}:pool:{pool}"))
            .query(&mut con)
            .unwrap();
        members += n;
    }
    let hlen = |con: &mut redis::Connection, key: &str| -> u64 {
        redis::cmd("HLEN")
            .arg(format!("{name}:{key}"))
            .query(con)
            .unwrap()
    };
    let seeks = hlen(&mut con, "seeks");
    let challenges = hlen(&mut con, "challenges");
    (members, seeks, challenges)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_pool_member_seek_and_challenge_are_swept_once_its_presence_expires() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut pooled = TestClient::connect_at(a.addr).await;
    pooled.register("ann").await;
    pooled.join_pool(Variant::CLASSIC, "blitz").await;
    let mut seeker = TestClient::connect_at(a.addr).await;
    seeker.register("cid").await;
    let seek = seek_at(&mut seeker).await;
    let mut challenger = TestClient::connect_at(a.addr).await;
    challenger.register("dee").await;
    let mut bob = TestClient::connect_at(b.addr).await;
    bob.register("bob").await;
    let sent = match challenge_at(&mut challenger, "bob").await {
        ServerMsg::ChallengeSent { challenge, .. } => challenge,
        other => panic!("{other:?}"),
    };
    assert_eq!(challenge_received(&mut bob).await, sent);
    assert!(seeks_at(&mut bob)
        .await
        .iter()
        .any(|s| s.seek_id == seek.seek_id));
    assert_eq!(lobby_entries(&cluster), (1, 1, 1));

    let killed = tokio::time::Instant::now();
    a.kill().await;
    drop((pooled, seeker, challenger));
    // Swept by B's lobby once A's presence has expired, at its next tick: the challenged
    // player hears of it, and nothing of A's is left in Redis.
    bob.expect_within("challenge_cancelled", PRESENCE_TTL + WAIT, |m| {
        matches!(m, ServerMsg::ChallengeCancelled { challenge_id } if *challenge_id == sent.challenge_id)
    })
    .await;
    let swept = killed.elapsed();
    assert!(
        swept < PRESENCE_TTL + std::time::Duration::from_secs(3),
        "swept {swept:?} after kill -9"
    );
    assert_eq!(lobby_entries(&cluster), (0, 0, 0));
    // The lobby has counted the pools since (in the tick that swept them).
    let id = bob.id();
    match bob.request(ClientMsg::LobbyCounts { id }).await {
        ServerMsg::Counts { pools, .. } => assert!(pools.is_empty(), "{pools:?}"),
        other => panic!("{other:?}"),
    }
    assert!(seeks_at(&mut bob).await.is_empty());
}
