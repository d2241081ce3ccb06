//! Cluster mode (issue 26), the lobby's races with challenges across nodes, with real
//! server processes: a pooled player whose challenge is accepted on another node waits in
//! no pool, nor does one left there by a join that raced the acceptance.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_whose_challenge_is_accepted_on_another_node_waits_in_no_pool() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    // Pat waits in a pool on A and challenges Quin, on B, who accepts.
    let mut pat = signed_in(&a, "pat").await;
    queued_unrated(&mut pat).await;
    let mut quin = signed_in(&b, "quin").await;
    let challenge_id = challenged(&mut pat, &mut quin, "quin").await;
    let id = quin.id();
    assert_ok(
        &quin
            .request(ClientMsg::AcceptChallenge { id, challenge_id })
            .await,
    );
    let game = started(&mut quin).await;
    assert_eq!(started(&mut pat).await, game);
    // Long after (its marks lapsed), Ray joins Pat's pool: nobody waits there.
    marks_lapsed(&cluster);
    let mut ray = signed_in(&b, "ray").await;
    queued_unrated(&mut ray).await;
    let id = ray.id();
    let left = ray.request(ClientMsg::LeavePool { id }).await;
    assert!(
        matches!(left, ServerMsg::Ok { .. }),
        "Ray was paired with Pat, who plays Quin: {left:?}"
    );
}

/// `from` challenges `to` (unrated blitz), who hears of it; the challenge's id.
async fn challenged(from: &mut TestClient, to: &mut TestClient, to_name: &str) -> u64 {
    let id = from.id();
    let sent = from
        .request(ClientMsg::Challenge {
            id,
            opponent: to_name.into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: false,
        })
        .await;
    let ServerMsg::ChallengeSent { challenge, .. } = sent else {
        panic!("{sent:?}");
    };
    to.expect("challenge_received", |m| {
        matches!(m, ServerMsg::ChallengeReceived { .. })
    })
    .await;
    challenge.challenge_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_seated_by_another_node_but_still_in_the_pool_is_withdrawn_there() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    // Pat waits in a pool on A and has challenged Quin, on B, who accepts.
    let mut pat = signed_in(&a, "pat").await;
    queued_unrated(&mut pat).await;
    let mut quin = signed_in(&b, "quin").await;
    let challenge_id = challenged(&mut pat, &mut quin, "quin").await;
    // As a join of Pat's racing the acceptance would (handled on A before A heard of the
    // game, it puts Pat back in the pool), Pat's pool is left to hold them: hidden from
    // the script that takes both players out of every pool with members.
    let mut con = cluster.redis();
    let pools = format!("{}:pools", cluster.name);
    let pool: Vec<String> = redis::cmd("SMEMBERS").arg(&pools).query(&mut con).unwrap();
    redis::cmd("DEL").arg(&pools).query::<()>(&mut con).unwrap();
    let id = quin.id();
    assert_ok(
        &quin
            .request(ClientMsg::AcceptChallenge { id, challenge_id })
            .await,
    );
    let game = started(&mut quin).await;
    assert_eq!(started(&mut pat).await, game);
    redis::cmd("SADD")
        .arg(&pools)
        .arg(&pool)
        .query::<()>(&mut con)
        .unwrap();
    // Pat, seated (and marked seating by the game for 2 s), waits in no pool once A's
    // lobby has looked (its tick, each second): no pairing can take them once the mark
    // lapses.
    let members = format!("{}:pool:{}", cluster.name, pool[0]);
    let deadline = Instant::now() + WAIT;
    while redis::cmd("ZCARD")
        .arg(&members)
        .query::<u64>(&mut con)
        .unwrap()
        > 0
    {
        assert!(
            Instant::now() < deadline,
            "Pat, seated, still waits in a pool"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    marks_lapsed(&cluster);
    let mut ray = signed_in(&b, "ray").await;
    queued_unrated(&mut ray).await;
    let id = ray.id();
    let left = ray.request(ClientMsg::LeavePool { id }).await;
    assert!(
        matches!(left, ServerMsg::Ok { .. }),
        "Ray was paired with Pat, who plays Quin: {left:?}"
    );
}
