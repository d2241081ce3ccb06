//! Cluster mode (issue 26, the bus across nodes): real `elementals-server` processes on
//! one PostgreSQL database and Redis, clients on different nodes than their games.

use crate::cluster_support::*;
use crate::common::*;
use crate::recovery_support::{resume_at, watch_at};
use elementals_protocol::messages::{ClientMsg, GameInfo, GameSnapshot, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

/// Seat two's 2 beats seat one's 5 and moves one square towards -3: three such rounds win.
const TWO_WINS: (u16, u16) = (5, 2);

/// Ann and Bob paired on `a`, then Bob signed in again on `b` once `b` lists the game: the
/// game runs on `a`, its players are on `a` and `b`. Also returns Bob's snapshot there.
async fn two_moved_to(
    a: &Node,
    b: &Node,
) -> (TestClient, TestClient, GameInfo, Option<GameSnapshot>) {
    let (one, two, game) = paired_at(a.addr, "ann", "bob").await;
    let token = two.token.clone().unwrap();
    two.close().await;
    b.until_listed(&[game.game_id]).await;
    let (two, snapshot) = resume_at(b.addr, &token).await;
    (one, two, game, snapshot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_on_a_third_node_gets_every_event_in_order() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let c = cluster.node("c").await;
    // The game on A, its players on A and B, its spectator on C.
    let (mut one, mut two, game, _) = two_moved_to(&a, &b).await;
    c.until_listed(&[game.game_id]).await;
    let (mut spectator, snapshot) = watch_at(c.addr, game.game_id).await;
    assert_eq!(snapshot.game.game_id, game.game_id);
    // The game's node counts the spectator C serves, and every node's list says so.
    for node in [&a, &b, &c] {
        node.until_spectators(game.game_id, 1).await;
    }
    for round in 1..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    watched_to_the_end(&mut spectator, &snapshot, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_started_together_on_a_new_database_all_come_up() {
    let cluster = Cluster::new();
    // Each migrates the new database first (`node` fails if one exits while starting).
    let (a, b, c) = tokio::join!(cluster.node("a"), cluster.node("b"), cluster.node("c"));
    for node in [&a, &b, &c] {
        node.until_health(200).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_resumes_through_another_node_and_finishes_the_game_rated_once() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, two, game) = paired_at(a.addr, "ann", "bob").await;
    let token = two.token.clone().unwrap();
    let mut two = two;
    play_round(&mut one, &mut two, game.game_id, 1, TWO_WINS).await;
    b.until_listed(&[game.game_id]).await;
    // Signed in on B while still connected to A: one connection per account, across nodes.
    let (on_b, snapshot) = resume_at(b.addr, &token).await;
    let snapshot = snapshot.expect("the game's snapshot, from node A, through node B");
    two.expect(
        "superseded",
        |m| matches!(m, ServerMsg::Notice { code, .. } if code == "superseded"),
    )
    .await;
    assert_eq!(two.closed_with().await, Some(4000));
    let mut two = on_b;
    assert_eq!(snapshot.game.game_id, game.game_id);
    for round in 2..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    seat_two_won_rated_once([&mut one, &mut two], &game, &[&a, &b]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_games_and_the_online_count_cover_every_node() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (_one, _two, on_a) = paired_at(a.addr, "ann", "bob").await;
    let (mut three, _four, on_b) = paired_at(b.addr, "cid", "dee").await;
    let both = [on_a.game_id, on_b.game_id];
    a.until_listed(&both).await;
    b.until_listed(&both).await;
    // Each node's /metrics says so too, once it has heard the other's heartbeat. Each
    // game runs on its players' node, wherever the lobby runs.
    let deadline = tokio::time::Instant::now() + WAIT;
    for (node, owned, remote) in [(&a, 1, 1), (&b, 1, 1)] {
        let expected = [
            format!("elementals_cluster_games_owned {owned}"),
            format!("elementals_cluster_remote_games {remote}"),
            "elementals_cluster_nodes_alive 2".to_owned(),
            "elementals_cluster_redis_up 1".to_owned(),
        ];
        until(
            format!("{expected:?} at {}", node.addr),
            deadline,
            async || {
                let (_, metrics) = node.http_get("/metrics").await;
                if expected.iter().all(|line| metrics.contains(line.as_str())) {
                    Ok(())
                } else {
                    Err(metrics)
                }
            },
        )
        .await;
    }
    // Each node counts the other's users once it has said it is alive (every second).
    let every = std::time::Duration::from_millis(200);
    until_every("4 online", WAIT, every, async || {
        let id = three.id();
        match three.request(ClientMsg::LobbyCounts { id }).await {
            ServerMsg::Counts { online, .. } => equal(online, 4),
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_to_a_game_whose_node_is_gone_is_answered() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (_one, mut two, game, snapshot) = two_moved_to(&a, &b).await;
    assert!(snapshot.is_some());
    a.kill().await;
    let answer = tokio::time::timeout(WAIT, two.commit(game.game_id, 1, Seat::Two, 2, [7; 32]))
        .await
        .expect("answered, not left waiting");
    assert_error(&answer, ErrorCode::UnknownGame);
    // And the node still serves: a ping is answered.
    let id = two.id();
    assert!(matches!(
        two.request(ClientMsg::Ping { id }).await,
        ServerMsg::Pong { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lost_and_back_empty_loses_no_game_and_no_spectator() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::through(&proxy);
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, mut two, game, _) = two_moved_to(&a, &b).await;
    let (mut spectator, _) = watch_at(b.addr, game.game_id).await;
    play_round(&mut one, &mut two, game.game_id, 1, TWO_WINS).await;

    // Redis out of reach, and back without anything it held.
    proxy.cut();
    // A node that hears no Redis says so to its load balancer, until it hears it again.
    b.until_health(503).await;
    cluster.forget_keys();
    proxy.restore();
    b.until_health(200).await;
    // Node B, subscribed again, has the spectator watch again: a fresh snapshot.
    let snapshot = match spectator
        .expect("a fresh snapshot", |m| {
            matches!(m, ServerMsg::Snapshot { id: None, .. })
        })
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => snapshot,
        _ => unreachable!(),
    };
    assert_eq!(snapshot.round, 2);
    // Node A wrote its game back into the directory.
    let hash = format!("{}:games", cluster.name);
    until(format!("the game in {hash} again"), WAIT, async || {
        redis::cmd("HEXISTS")
            .arg(&hash)
            .arg(game.game_id.to_string())
            .query::<bool>(&mut cluster.redis())
            .unwrap()
    })
    .await;
    for round in 2..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    seen_once_in_order_after(&mut spectator, snapshot.seq).await;
    let (loser, winner) = (&game.players.one.name, &game.players.two.name);
    two.expect("rating_update", |m| {
        matches!(m, ServerMsg::RatingUpdate { .. })
    })
    .await;
    assert_eq!(b.player(winner).await["rating"], 1.5);
    assert_eq!(
        a.player(loser).await["history"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_on_an_emptied_redis_takes_no_live_nodes_number_and_one_forgotten_stops() {
    let cluster = Cluster::new();
    // Short leases: the forgotten node's renewal (a third of it) comes soon.
    let short = [("ELEMENTALS_LEASE_MS", "900")];
    let a = cluster.node_with("a", &short).await;
    let b = cluster.node_with("b", &short).await;
    // Redis restarted empty, say, and C starts at once, before A and B say again who they
    // are: it takes a number neither runs under.
    cluster.forget_keys();
    let c = cluster.node_with("c", &short).await;
    let mut numbers = vec![a.number().await, b.number().await, c.number().await];
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), 3, "{numbers:?}");
    // C's row forgotten (as one silent an hour is): another node may take its number, so
    // C stops at its next renewal, with an error.
    cluster.sql("WITH gone AS (DELETE FROM node_leases WHERE node_id = 'c' RETURNING 1) SELECT count(*) FROM gone");
    let status = c.stopped(WAIT).await;
    assert!(!status.success(), "{status:?}");
    // The others serve on.
    assert_eq!(a.http_get("/healthz").await.0, 200);
    assert_eq!(b.http_get("/healthz").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_ended_with_its_node_holds_its_players_seats_only_until_the_claims_time() {
    let cluster = Cluster::new();
    // Short enough to wait out, long enough that B's own leases (the lobby's among them)
    // do not lapse under a loaded machine's late renewals: B forgets A's games 3 s + 2 × 2 s
    // after A falls silent.
    let short = [
        ("ELEMENTALS_LEASE_MS", "2000"),
        ("ELEMENTALS_NODE_TIMEOUT_MS", "3000"),
    ];
    // B, first, runs the lobby; A dies as its game's end is logged, before it tells
    // anyone (B then claims the game and records it: a game over, which it runs not).
    let b = cluster.node_with("b", &short).await;
    let crash = [short[0], short[1], ("ELEMENTALS_CRASH_AT", "end_logged")];
    let a = cluster.node_with("a", &crash).await;
    let (mut one, mut two, game) = paired_at(a.addr, "ann", "bob").await;
    b.until_listed(&[game.game_id]).await;
    let token = two.token.clone().unwrap();
    for round in 1..=2 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    // The last round: both commit and reveal; A logs the end and dies.
    let g = game.game_id;
    assert_ok(&one.commit(g, 3, Seat::One, TWO_WINS.0, [1; 32]).await);
    assert_ok(&two.commit(g, 3, Seat::Two, TWO_WINS.1, [2; 32]).await);
    assert_ok(&one.reveal(g, 3, TWO_WINS.0, [1; 32]).await);
    // Its answer may or may not come before A dies: not waited for.
    let id = two.id();
    two.send(&ClientMsg::Reveal {
        id,
        game_id: g,
        round: 3,
        pick: TWO_WINS.1,
        nonce: vec![2; 32],
    })
    .await;
    a.stopped(WAIT).await;
    // Bob, on B: seated in the game B still lists at first (its node may yet be claimed),
    // then free to play again once no node has claimed it in the claim's time.
    let (mut bob, _) = resume_at(b.addr, &token).await;
    let every = std::time::Duration::from_millis(200);
    until_every(
        "Bob free of the game that ended with its node",
        WAIT,
        every,
        async || {
            let id = bob.id();
            let join = ClientMsg::JoinPool {
                id,
                variant: elementals_protocol::rules::Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
            };
            // Anything but `queued` is looked at again (a moment's `internal` or
            // `unavailable` while the game is claimed and recorded too); a wait that
            // fails shows the last answer.
            match bob.request(join).await {
                ServerMsg::Queued { .. } => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(b.live_games().await, Some(vec![]));
}

/// The fresh snapshot a spectator gets once a dead node's game runs again elsewhere: a
/// node takes it once the dead node's lease lapses (6 s) at its next claim (each second),
/// longer than `WAIT` on a loaded machine.
async fn snapshot_after_takeover(spectator: &mut TestClient) -> GameSnapshot {
    match spectator
        .expect_within("a fresh snapshot", 3 * WAIT, |m| {
            matches!(m, ServerMsg::Snapshot { id: None, .. })
        })
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => snapshot,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_restarted_on_another_node_keeps_its_players_and_spectators_elsewhere() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, two, game) = paired_at(a.addr, "ann", "bob").await;
    let (one_token, two_token) = (one.token.clone().unwrap(), two.token.clone().unwrap());
    b.until_listed(&[game.game_id]).await;
    let (mut two, _) = resume_at(b.addr, &two_token).await;
    let (mut spectator, _) = watch_at(b.addr, game.game_id).await;
    play_round(&mut one, &mut two, game.game_id, 1, TWO_WINS).await;

    // Node A dies; a new node on the same database restores the game from its log.
    a.kill().await;
    drop(one);
    let a2 = cluster.node("a2").await;
    // B's spectator now watches it there: a fresh snapshot from the game's new node.
    let snapshot = snapshot_after_takeover(&mut spectator).await;
    assert_eq!(snapshot.round, 2);
    // Player one comes back on the new node, player two (still on B) asks for the game.
    let (mut one, resumed) = resume_at(a2.addr, &one_token).await;
    assert_eq!(resumed.expect("seated").game.game_id, game.game_id);
    let id = two.id();
    match two
        .request(ClientMsg::Sync {
            id,
            game_id: game.game_id,
        })
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => assert_eq!(snapshot.round, 2),
        other => panic!("{other:?}"),
    }
    for round in 2..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    seen_once_in_order_after(&mut spectator, snapshot.seq).await;
    two.expect("rating_update", |m| {
        matches!(m, ServerMsg::RatingUpdate { .. })
    })
    .await;
    let (loser, winner) = (&game.players.one.name, &game.players.two.name);
    let won = b.player(winner).await;
    assert_eq!(won["rating"], 1.5, "{won}");
    assert_eq!(won["history"].as_array().unwrap().len(), 1, "{won}");
    let lost = a2.player(loser).await;
    assert_eq!(lost["history"].as_array().unwrap().len(), 1, "{lost}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_taken_over_by_its_spectators_node_is_watched_there() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, two, game) = paired_at(a.addr, "ann", "bob").await;
    let (one_token, two_token) = (one.token.clone().unwrap(), two.token.clone().unwrap());
    b.until_listed(&[game.game_id]).await;
    let (mut spectator, _) = watch_at(b.addr, game.game_id).await;
    let (mut two, _) = resume_at(b.addr, &two_token).await;
    play_round(&mut one, &mut two, game.game_id, 1, TWO_WINS).await;

    // Node A dies; B, the only node left, claims the game once A's lease lapses. Its
    // spectator, until then watching over Redis, now watches it on B itself: a fresh
    // snapshot, then every event once (B left the game's channel).
    a.kill().await;
    drop(one);
    let snapshot = snapshot_after_takeover(&mut spectator).await;
    assert_eq!(snapshot.round, 2);
    let (mut one, resumed) = resume_at(b.addr, &one_token).await;
    assert_eq!(resumed.expect("seated").game.game_id, game.game_id);
    let id = two.id();
    two.request(ClientMsg::Sync {
        id,
        game_id: game.game_id,
    })
    .await;
    for round in 2..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    let seen = events_until_over(&mut spectator).await;
    let after: Vec<u64> = seen.iter().filter_map(ServerMsg::seq).collect();
    let expected: Vec<u64> = (snapshot.seq + 1..=snapshot.seq + after.len() as u64).collect();
    assert_eq!(after, expected, "each event once, in order: {seen:?}");
}

#[tokio::test]
async fn a_cluster_node_refuses_to_start_without_postgresql_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_elementals-server"))
        .arg("--listen=127.0.0.1:0")
        .arg("--database")
        .arg(dir.path().join("node.db"))
        .arg(format!("--redis={REDIS}"))
        .env("RUST_LOG", "off")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("needs a PostgreSQL database"), "{said}");
    assert!(!dir.path().join("node.db").exists(), "nothing was opened");
}
