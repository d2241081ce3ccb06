//! Cluster mode (issue 26): a node cut off from Redis while the cluster goes on (real
//! server processes; the node reaches Redis through a TCP proxy of the test's own, which
//! the test cuts and restores). What it missed meanwhile is read again when it rejoins:
//! a game that ended elsewhere leaves its live list.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::ServerMsg;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_ended_while_a_node_was_cut_off_from_redis_leaves_its_live_list() {
    let proxy = Proxy::start().await;
    let cluster = Cluster::new();
    let a = cluster.node_through("a", &proxy).await;
    let b = cluster.node("b").await;
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
