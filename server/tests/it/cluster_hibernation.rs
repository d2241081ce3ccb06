//! Hibernation in cluster mode (issues 26 and 27), over real processes on one PostgreSQL
//! database and Redis: a correspondence game whose players are both away goes to sleep,
//! letting its lease go, so that it runs on no node; a command on any node wakes it there,
//! once cluster-wide; its deadline wakes it on one node, even after the node that put it
//! to sleep was killed; a deadline that passed while the whole cluster was down moves to
//! 30 s after it came back. Every node lists it while it sleeps.

use crate::cluster_support::*;
use crate::common::*;
use crate::recovery_support::{resume_at, watch_at};
use elementals_protocol::messages::{GameId, GameSnapshot, OwedAction, Phase, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::TimeControl;

/// Games sleep after 1 s without a command if nothing is due for 10 minutes.
const HIBERNATING: [(&str, &str); 3] = [
    ("ELEMENTALS_HIBERNATE_AFTER_SECS", "1"),
    ("ELEMENTALS_HIBERNATE_MIN_DEADLINE_SECS", "600"),
    // The tests poll the JSON API.
    ("ELEMENTALS_HTTP_REQUESTS_PER_IP", "0"),
];

/// `name` from `node`'s `/metrics` (0 if absent).
async fn metric(node: &Node, name: &str) -> u64 {
    let (_, body) = node.http_get("/metrics").await;
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// The sum of `name` over `nodes`.
async fn total(nodes: &[&Node], name: &str) -> u64 {
    let mut sum = 0;
    for node in nodes {
        sum += metric(node, name).await;
    }
    sum
}

/// `play_and_leave_at` on `node` with a game of `corr-1d` between `a` and `b`; returns
/// once the game sleeps: its wake-up row written, its lease no node's, and no node runs it.
async fn put_to_sleep(cluster: &Cluster, node: &Node, a: &str, b: &str) -> LeftGame {
    let asleep = play_and_leave_at(node.addr, a, b, TimeControl::CORR_1D).await;
    let game_id = asleep.game.game_id;
    let row = format!("SELECT count(*) FROM game_wakeups WHERE game_id = '{game_id}'");
    let lease =
        format!("SELECT count(*) FROM game_leases WHERE game_id = '{game_id}' AND node_id = ''");
    until("the game sleeps, its lease no node's", WAIT, async || {
        cluster.sql(&row) == 1 && cluster.sql(&lease) == 1
    })
    .await;
    until(
        "its node counts it asleep and runs nothing",
        WAIT,
        async || {
            metric(node, "elementals_hibernated_games").await == 1
                && metric(node, "elementals_live_games").await == 0
        },
    )
    .await;
    asleep
}

/// Waits until each of `nodes` has heard that one game sleeps.
async fn heard_asleep(nodes: &[&Node]) {
    for node in nodes {
        until("the node has heard the game sleeps", WAIT, async || {
            metric(node, "elementals_hibernated_games").await == 1
        })
        .await;
    }
}

/// Signs in with `token` at `node`: the snapshot of the sleeping game, woken, in round 2.
async fn come_back(node: &Node, token: &str, game_id: GameId) -> (TestClient, GameSnapshot) {
    let (client, snapshot) = resume_at(node.addr, token).await;
    let snapshot = snapshot.expect("the sleeping game's snapshot");
    assert_eq!(snapshot.game.game_id, game_id);
    assert_eq!(snapshot.round, 2);
    (client, snapshot)
}

/// Round 2 played to its result on the woken game (seat one's commitment from before it
/// slept opens with its reveal), then seat one resigns: seat two wins, rated once.
async fn finish(asleep: &LeftGame, mut one: TestClient, mut two: TestClient, nodes: &[&Node]) {
    let game_id = asleep.game.game_id;
    let nonce_two = rand::random::<[u8; 32]>();
    assert_ok(&two.commit(game_id, 2, Seat::Two, 1, nonce_two).await);
    for client in [&mut one, &mut two] {
        client
            .expect("reveal_phase", |m| {
                matches!(m, ServerMsg::RevealPhase { round: 2, .. })
            })
            .await;
    }
    reveal_round_two_and_resign(asleep, &mut one, &mut two, nonce_two).await;
    seat_two_won_rated_once([&mut one, &mut two], &asleep.game, nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_asleep_in_a_cluster_wakes_on_another_node_and_finishes_rated_once() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_with("b", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "ann", "bob").await;
    let game_id = asleep.game.game_id;
    heard_asleep(&[&a, &b]).await;
    // Seat two comes back on B: B wakes the game and runs it.
    let (two, snapshot) = come_back(&b, &asleep.tokens.1, game_id).await;
    assert_eq!(snapshot.phase, Phase::Commit);
    assert!(snapshot.committed.one && !snapshot.committed.two);
    assert_eq!(metric(&b, "elementals_games_woken_total").await, 1);
    assert_eq!(metric(&a, "elementals_games_woken_total").await, 0);
    assert_eq!(cluster.sql("SELECT count(*) FROM game_wakeups"), 0);
    let lease = format!(
        "SELECT l.token FROM game_leases l JOIN node_leases n \
         ON n.node_id = l.node_id AND n.epoch = l.epoch \
         WHERE l.game_id = '{game_id}' AND l.node_id = 'b' AND n.expires_at > now()"
    );
    assert_eq!(cluster.sql(&lease), 2, "B's lease, one token past A's");
    for node in [&a, &b] {
        until("no node takes it for asleep", WAIT, async || {
            metric(node, "elementals_hibernated_games").await == 0
        })
        .await;
    }
    // Seat one comes back on A, which runs nothing of it: its moves go to B.
    a.until_listed(&[game_id]).await;
    let (one, _) = come_back(&a, &asleep.tokens.0, game_id).await;
    finish(&asleep, one, two, &[&a, &b]).await;
    assert_eq!(total(&[&a, &b], "elementals_games_woken_total").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_coming_back_on_two_nodes_at_once_wake_the_game_once() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_with("b", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "cat", "dan").await;
    let game_id = asleep.game.game_id;
    heard_asleep(&[&a, &b]).await;
    // Both sign in at once, each on another node: both nodes try to wake it.
    let ((one, s1), (two, s2)) = tokio::join!(
        come_back(&a, &asleep.tokens.0, game_id),
        come_back(&b, &asleep.tokens.1, game_id),
    );
    assert_eq!((s1.phase, s2.phase), (Phase::Commit, Phase::Commit));
    assert_eq!(total(&[&a, &b], "elementals_games_woken_total").await, 1);
    let runs = total(&[&a, &b], "elementals_live_games").await;
    assert_eq!(runs, 1, "one node runs it");
    finish(&asleep, one, two, &[&a, &b]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_games_and_a_spectator_on_other_nodes_find_a_sleeping_game_as_it_stands() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_with("b", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "gil", "hal").await;
    let game_id = asleep.game.game_id;
    heard_asleep(&[&a, &b]).await;
    // Both nodes list it while it sleeps (B from what A said as it went to sleep).
    a.until_listed(&[game_id]).await;
    b.until_listed(&[game_id]).await;
    // Seat two asks B for its games (no connection: nothing else wakes it): B wakes it and
    // lists it, owing seat two's commit in round 2.
    let games = http_my_games(b.addr, &asleep.tokens.1).await;
    assert_eq!(games.len(), 1, "{games:?}");
    assert_eq!(games[0].game_id, game_id);
    assert_eq!((games[0].round, games[0].phase), (2, Phase::Commit));
    let owed: Vec<_> = games[0].owed.iter().map(|o| (o.seat, o.action)).collect();
    assert_eq!(owed, [(Seat::Two, OwedAction::Commit)]);
    assert_eq!(metric(&b, "elementals_games_woken_total").await, 1);
    // A spectator on A watches it where it runs now.
    until("A hears it woke", WAIT, async || {
        metric(&a, "elementals_hibernated_games").await == 0
    })
    .await;
    a.until_listed(&[game_id]).await;
    let (_spectator, snapshot) = watch_at(a.addr, game_id).await;
    assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Commit));
    b.until_spectators(game_id, 1).await;
    assert_eq!(total(&[&a, &b], "elementals_games_woken_total").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_redis_as_a_game_fell_asleep_learns_it_once_back() {
    let cluster = Cluster::new();
    let proxy = Proxy::start().await;
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_through_with("b", &proxy, &HIBERNATING).await;
    // B hears nothing while the game goes to sleep on A.
    proxy.cut();
    b.until_health(503).await;
    let asleep = put_to_sleep(&cluster, &a, "ivy", "jon").await;
    assert_eq!(metric(&b, "elementals_hibernated_games").await, 0);
    // Back, B reads the sleeping games from storage, and its player wakes the game there.
    proxy.restore();
    // Rejoining takes up to a few seconds of backoff, then its sweeper's next look (10 s).
    until("B hears it sleeps", 2 * WAIT, async || {
        metric(&b, "elementals_hibernated_games").await == 1
    })
    .await;
    let game_id = asleep.game.game_id;
    let (_two, snapshot) = come_back(&b, &asleep.tokens.1, game_id).await;
    assert_eq!(snapshot.phase, Phase::Commit);
    assert_eq!(metric(&b, "elementals_games_woken_total").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_deadline_wakes_it_on_one_node_to_a_loss_on_time_after_its_node_is_killed() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_with("b", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "eve", "fay").await;
    let game_id = asleep.game.game_id;
    // The node that put it to sleep dies; nothing of the game was on it.
    a.kill().await;
    // Two days pass for two new nodes (their wall clocks ahead, a test hook): seat two's
    // day to commit has run out. Both sweepers find the game due; one wakes it.
    let ahead: Vec<(&str, &str)> = HIBERNATING
        .into_iter()
        .chain([("ELEMENTALS_CLOCK_AHEAD_SECS", "172800")])
        .collect();
    let (c, d) = tokio::join!(
        cluster.node_with("c", &ahead),
        cluster.node_with("d", &ahead)
    );
    let (one, two) = (&asleep.game.players.one.name, &asleep.game.players.two.name);
    until("seat two's loss on time is recorded", WAIT, async || {
        wins_and_losses_at(b.addr, two).await == (0, 1)
    })
    .await;
    assert_eq!(wins_and_losses_at(b.addr, one).await, (1, 0));
    let record = game_record_at(b.addr, game_id).await;
    assert_eq!(record["result"]["reason"], "time", "{record}");
    assert_eq!(
        total(&[&b, &c, &d], "elementals_games_woken_total").await,
        1
    );
    let won = b.player(one).await;
    assert_eq!(won["rating"], 1.5, "{won}");
    assert_eq!(
        won["history"].as_array().unwrap().len(),
        1,
        "rated once: {won}"
    );
    // Nothing of it is left to wake or claim.
    assert_eq!(cluster.sql("SELECT count(*) FROM game_wakeups"), 0);
    // (The lobby's lease, under the nil id, is no game's.)
    assert_eq!(cluster.sql("SELECT count(*) FROM game_leases WHERE game_id <> '00000000-0000-0000-0000-000000000000'"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_passed_while_the_whole_cluster_was_down_moves_to_30_s_after_it_came_back() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let b = cluster.node_with("b", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "kim", "lou").await;
    // Every node dies, and their leases lapse: the cluster is down.
    a.kill().await;
    b.kill().await;
    until("no node's lease is live", WAIT, async || {
        cluster.sql("SELECT count(*) FROM node_leases WHERE expires_at > now()") == 0
    })
    .await;
    // Two days later (its wall clock ahead, a test hook) a node starts: seat two's day to
    // commit has passed, and seat two, back at once, finds the game on with 30 s left.
    let ahead: Vec<(&str, &str)> = HIBERNATING
        .into_iter()
        .chain([("ELEMENTALS_CLOCK_AHEAD_SECS", "172800")])
        .collect();
    let c = cluster.node_with("c", &ahead).await;
    let (_two, snapshot) = come_back(&c, &asleep.tokens.1, asleep.game.game_id).await;
    assert_eq!(snapshot.phase, Phase::Commit);
    assert!(snapshot.result.is_none(), "{snapshot:?}");
    assert!(snapshot.clocks.running.two, "{snapshot:?}");
    assert!(
        (15_000..=30_000).contains(&snapshot.clocks.two_ms),
        "{snapshot:?}"
    );
    assert_eq!(metric(&c, "elementals_games_woken_total").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_machine_clock_is_ahead_keeps_the_clusters_clock_for_sleeping_games() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", &HIBERNATING).await;
    let asleep = put_to_sleep(&cluster, &a, "max", "nia").await;
    // The node that put it to sleep dies (nothing of the game was on it), so that the one
    // below is the only node to judge it.
    a.kill().await;
    // A node starts on a machine whose clock is two days ahead (a test hook): it keeps the
    // database's clock, as every node does, so seat two's day to commit has not run out
    // there either. Seat two comes back through it and finds the game on, its day left.
    let ahead: Vec<(&str, &str)> = HIBERNATING
        .into_iter()
        .chain([("ELEMENTALS_SYSTEM_CLOCK_AHEAD_SECS", "172800")])
        .collect();
    let b = cluster.node_with("b", &ahead).await;
    let (_two, snapshot) = come_back(&b, &asleep.tokens.1, asleep.game.game_id).await;
    assert!(snapshot.result.is_none(), "{snapshot:?}");
    assert_eq!(snapshot.phase, Phase::Commit);
    assert!(snapshot.clocks.running.two, "{snapshot:?}");
    let day_ms = 24 * 3_600_000;
    assert!(
        (day_ms - 600_000..=day_ms).contains(&snapshot.clocks.two_ms),
        "{snapshot:?}"
    );
    assert_eq!(metric(&b, "elementals_games_woken_total").await, 1);
}
