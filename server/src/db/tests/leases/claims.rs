//! Claims of lapsed leases: a claim takes by their keys the leases its search found,
//! each only if still lapsed under its lock.

use super::*;

#[tokio::test]
async fn a_lease_claimed_elsewhere_between_a_claims_search_and_its_update_is_left_alone() {
    let cluster = Cluster::new();
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    let (setup, _, _) = game_on(&a).await;
    cluster.lapse("a");
    // B's claim has found the lapsed lease, and waits before taking it.
    let (searched, go) = b.leases.as_ref().unwrap().pause_next_claim_search();
    let by_b = tokio::spawn({
        let b = b.clone();
        async move { b.claim_lapsed().await }
    });
    tokio::task::spawn_blocking(move || searched.recv())
        .await
        .unwrap()
        .expect("b's claim searches");
    // C takes it meanwhile: live again, under c.
    let by_c = c.claim_lapsed().await.unwrap();
    assert_eq!(by_c.len(), 1);
    assert_eq!(cluster.lease(setup.game_id), Some(("c".into(), 2)));

    drop(go);
    let by_b = by_b.await.unwrap().unwrap();
    assert!(by_b.is_empty(), "c's live lease is not b's to take");
    assert_eq!(cluster.lease(setup.game_id), Some(("c".into(), 2)));
    c.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    for db in [a, b, c] {
        db.shutdown().await.unwrap();
    }
}
