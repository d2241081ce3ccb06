//! Cluster mode, challenges across nodes, with real server processes: a player signed in
//! on another node a moment ago is found; a pooled player whose challenge is accepted on
//! another node waits in no pool.

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_whose_challenge_is_accepted_on_another_node_waits_in_no_pool() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    // B's writes to Redis are slow: Quin's presence takes 300 ms to reach it.
    let b = cluster
        .node_with("b", &[("ELEMENTALS_REDIS_WRITE_DELAY_MS", "300")])
        .await;
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
    // Ray joins Pat's pool: nobody waits there.
    let mut ray = signed_in(&b, "ray").await;
    queued_unrated(&mut ray).await;
    let id = ray.id();
    let left = ray.request(ClientMsg::LeavePool { id }).await;
    assert!(
        matches!(left, ServerMsg::Ok { .. }),
        "Ray was paired with Pat, who plays Quin: {left:?}"
    );
}

/// `from` challenges `to` (unrated blitz), who hears of it; the challenge's id. `to` may
/// have signed in on another node a moment ago: its `authenticated` came once every node
/// could find it by name.
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
