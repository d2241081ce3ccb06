//! Cluster mode (issue 26): a node cut off from Redis while the cluster goes on (real
//! server processes; the node reaches Redis through a TCP proxy of the test's own, which
//! the test cuts and restores). What it missed meanwhile is read again when it rejoins:
//! a game that ended elsewhere leaves its live list. A link that stalls (held open,
//! nothing flowing) is noticed as a cut one is.

use crate::cluster_support::*;
use crate::common::*;
use crate::recovery_support::{resume_at, TWO_WINS};
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::ErrorCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_ended_while_a_node_was_cut_off_from_redis_leaves_its_live_list() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    // B, first, runs the lobby: the game runs there.
    let b = cluster.node("b").await;
    let a = cluster.node_through("a", &proxy).await;
    let (mut one, mut two, game) = paired_at(b.addr, "eve", "fox").await;
    let g = game.game_id;
    a.until_listed(&[g]).await;

    // A is cut off while the game ends on B: the news of its end is lost to A.
    proxy.cut();
    a.until_health(503).await;
    two.resign(g).await;
    for player in [&mut one, &mut two] {
        player
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
    }
    b.until_unlisted(g).await;

    // Back: A reads the directory again and lists the game no more.
    proxy.restore();
    a.until_health(200).await;
    a.until_unlisted(g).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_redis_link_stalls_answers_503_and_serves_the_cluster_again_once_it_flows() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    // B, first, runs the lobby.
    let b = cluster.node("b").await;
    let a = cluster
        .node_through_with("a", &proxy, &[("ELEMENTALS_REDIS_SILENCE_MS", "1500")])
        .await;
    // A's link to Redis stalls: the connections stay open, nothing flows. A says so.
    proxy.pause();
    a.until_health(503).await;
    // Flowing again: A subscribes again, and a player on A is paired through the lobby
    // on B with a player on B.
    proxy.resume();
    a.until_health(200).await;
    let mut ann = signed_in(&a, "ann").await;
    let mut bob = signed_in(&b, "bob").await;
    bob.join_pool(Variant::CLASSIC, "blitz").await;
    ann.join_pool(Variant::CLASSIC, "blitz").await;
    let game = ann.game_start().await.0.game_id;
    assert_eq!(bob.game_start().await.0.game_id, game);
}

/// A node's link to Redis stalls for longer than the node timeout of the node a player of
/// its game is on: there the player's move is answered `unknown_game` ("the game's node is
/// gone"). Flowing again, the game's node judges the move after all; its answer is
/// dropped on the player's node, so the client hears one answer to its request, then
/// the game's events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_answered_for_a_stalled_node_is_answered_once() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    // B, first, runs the lobby, and takes a node silent for 2 s for dead.
    let b = cluster
        .node_with("b", &[("ELEMENTALS_NODE_TIMEOUT_MS", "2000")])
        .await;
    // A waits out a stall of its link shorter than 8 s: it keeps its subscription, and
    // what was sent to it meanwhile comes once the link flows.
    let a = cluster
        .node_through_with("a", &proxy, &[("ELEMENTALS_REDIS_SILENCE_MS", "8000")])
        .await;
    let (one, mut two, game) = paired_at(a.addr, "gus", "hal").await;
    let g = game.game_id;
    b.until_listed(&[g]).await;
    // Seat one goes to B: its moves cross Redis to the game on A.
    let (mut one_on_b, _) = resume_at(b.addr, &one.token.clone().unwrap()).await;
    drop(one);

    proxy.pause();
    let nonce = rand::random();
    let answer = one_on_b.commit(g, 1, Seat::One, TWO_WINS.0, nonce).await;
    assert_error(&answer, ErrorCode::UnknownGame);
    let request = answer.reply_id().expect("an answer to the request");
    proxy.resume();

    // A hears the move after all: it is judged and its players hear of it.
    two.expect("seat one's commit", |m| {
        matches!(
            m,
            ServerMsg::Committed {
                seat: Seat::One,
                round: 1,
                ..
            }
        )
    })
    .await;
    // Seat one hears it too, and no second answer to its request before it (the game
    // answers a move before its events).
    loop {
        let msg = one_on_b.recv().await;
        assert_ne!(msg.reply_id(), Some(request), "a second answer: {msg:?}");
        if matches!(
            msg,
            ServerMsg::Committed {
                seat: Seat::One,
                round: 1,
                ..
            }
        ) {
            break;
        }
    }
    // And B serves the connection as before: a request of its now is answered once.
    one_on_b.assert_open().await;
}

/// A node whose link to Redis stalls while the other node hears Redis gives its games up:
/// its players are told `game_moved` (close 1012), and the other node claims the game,
/// where both players resume and finish it, round 1 kept, rated once, while the first
/// node is still cut off. Flowing again, that node serves the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_redis_gives_its_games_to_a_node_that_hears_it() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    let b = cluster.node("b").await;
    let a = cluster
        .node_through_with("a", &proxy, &[("ELEMENTALS_REDIS_SILENCE_MS", "1500")])
        .await;
    let (mut one, mut two, game) = paired_at(a.addr, "ivy", "jon").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, TWO_WINS).await;
    let tokens = [one.token.clone().unwrap(), two.token.clone().unwrap()];

    proxy.pause();
    // Within a silence, a renewal and B's next word in the database (a few seconds).
    for player in [&mut one, &mut two] {
        player
            .expect_within(
                "game_moved",
                WAIT,
                |m| matches!(m, ServerMsg::Notice { code, .. } if code == "game_moved"),
            )
            .await;
        assert_eq!(player.closed_with().await, Some(1012));
    }
    until("the game running on B", WAIT, async || {
        metric_at(b.addr, "elementals_live_games").await == 1
    })
    .await;
    let (mut one, snapshot) = resume_at(b.addr, &tokens[0]).await;
    assert_eq!(snapshot.expect("seated on B").game.game_id, g);
    let (mut two, _) = resume_at(b.addr, &tokens[1]).await;
    one.expect("round 2 again", |m| {
        matches!(m, ServerMsg::RoundStart { round: 2, .. })
    })
    .await;
    for round in 2..=3 {
        play_round(&mut one, &mut two, g, round, TWO_WINS).await;
    }
    seat_two_won_rated_once([&mut one, &mut two], &game, &[&b]).await;

    proxy.resume();
    a.until_health(200).await;
}
