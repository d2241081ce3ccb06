//! Cluster mode, the one lobby across nodes: real `elementals-server` processes on one
//! PostgreSQL database and Redis, players waiting on different nodes.

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{Challenge, ClientMsg, Seek, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

/// Seat two's 2 beats seat one's 5 and moves one square towards -3: three such rounds win.
const TWO_WINS: (u16, u16) = (5, 2);

/// Between two asks of the lobby's counts while a test waits on them (each is a request
/// the lobby answers, across the bus).
const COUNTS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

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
    until_every("nobody counted in a pool", WAIT, COUNTS_EVERY, async || {
        let id = waiting.id();
        match waiting.request(ClientMsg::LobbyCounts { id }).await {
            ServerMsg::Counts { pools, .. } if pools.is_empty() => Ok(()),
            ServerMsg::Counts { pools, .. } => Err(format!("{pools:?}")),
            other => panic!("{other:?}"),
        }
    })
    .await;
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
    until_every("B's player counted on A", WAIT, COUNTS_EVERY, async || {
        let id = counter.id();
        match counter.request(ClientMsg::LobbyCounts { id }).await {
            ServerMsg::Counts { pools, .. } if pools.iter().any(|p| p.waiting == 1) => Ok(()),
            ServerMsg::Counts { pools, .. } => Err(format!("{pools:?}")),
            other => panic!("{other:?}"),
        }
    })
    .await;
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
    let every = std::time::Duration::from_millis(100);
    until_every("the seek gone with its maker", WAIT, every, async || {
        seeks_at(&mut taker).await.is_empty()
    })
    .await;
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

/// How long a node silent on the bus is taken to be alive: 3 s for this test's nodes
/// (`--node-timeout-ms`, 5 s by default).
const NODE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_pool_member_seek_and_challenge_are_dropped_once_it_is_taken_for_dead() {
    let cluster = Cluster::new();
    // A, first, runs the lobby; B's players wait in it.
    let short = [("ELEMENTALS_NODE_TIMEOUT_MS", "3000")];
    let a = cluster.node_with("a", &short).await;
    let b = cluster.node_with("b", &short).await;
    let mut pooled = TestClient::connect_at(b.addr).await;
    pooled.register("ann").await;
    pooled.join_pool(Variant::CLASSIC, "blitz").await;
    let mut seeker = TestClient::connect_at(b.addr).await;
    seeker.register("cid").await;
    let seek = seek_at(&mut seeker).await;
    let mut challenger = TestClient::connect_at(b.addr).await;
    challenger.register("dee").await;
    let mut bob = TestClient::connect_at(a.addr).await;
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

    let killed = tokio::time::Instant::now();
    b.kill().await;
    drop((pooled, seeker, challenger));
    // Dropped by the lobby at its first tick after B is taken for dead: the challenged
    // player hears of it, and nothing of B's is left.
    bob.expect_within("challenge_cancelled", NODE_TIMEOUT + WAIT, |m| {
        matches!(m, ServerMsg::ChallengeCancelled { challenge_id } if *challenge_id == sent.challenge_id)
    })
    .await;
    let dropped = killed.elapsed();
    assert!(
        dropped < NODE_TIMEOUT + std::time::Duration::from_secs(3),
        "dropped {dropped:?} after kill -9"
    );
    assert!(seeks_at(&mut bob).await.is_empty());
    // The pools are counted at the lobby's next tick.
    until_lobby_empty(&mut bob, WAIT, "B's pool member dropped").await;
}

/// The lobby's node (A, first) loses the start of the game it pairs for two players on B,
/// as with a write to Redis whose outcome is unknown: the game does not show, so the lobby
/// starts it again on B, once, and it is played there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_start_lost_on_its_way_is_sent_again_and_the_game_runs_once() {
    // A start shows within twice the node timeout, or goes again.
    const START_WAIT: std::time::Duration = std::time::Duration::from_secs(4);
    let cluster = Cluster::new();
    let short = ("ELEMENTALS_NODE_TIMEOUT_MS", "2000");
    let a = cluster
        .node_with("a", &[short, ("ELEMENTALS_LOSE_GAME_STARTS", "1")])
        .await;
    let b = cluster.node_with("b", &[short]).await;
    let mut ann = signed_in(&b, "ann").await;
    let mut bob = signed_in(&b, "bob").await;
    ann.join_pool(Variant::CLASSIC, "blitz").await;
    bob.join_pool(Variant::CLASSIC, "blitz").await;
    let mut told = Vec::new();
    for client in [&mut ann, &mut bob] {
        let start = client
            .expect_within("game_start", START_WAIT + WAIT, |m| {
                matches!(m, ServerMsg::GameStart { .. })
            })
            .await;
        let ServerMsg::GameStart { game, seat } = start else {
            unreachable!()
        };
        told.push((game, seat));
    }
    let [(game, seat_ann), (game_bob, _)] = &told[..] else {
        unreachable!()
    };
    assert_eq!(game.game_id, game_bob.game_id);
    let (mut one, mut two) = if *seat_ann == Seat::One {
        (ann, bob)
    } else {
        (bob, ann)
    };
    play_round(&mut one, &mut two, game.game_id, 1, TWO_WINS).await;
    let started = metric_at(a.addr, "elementals_games_started_total").await
        + metric_at(b.addr, "elementals_games_started_total").await;
    assert_eq!(started, 1, "one start ran the game");
}
