//! A lease that names this node at its epoch but that the node does not know it holds (the
//! commit that took it applied, its answer lost) is released after two orphan scans, and
//! claimed; one it holds never is.

use super::*;
use crate::db::pg::ORPHAN_SCAN_EVERY;

#[tokio::test]
async fn a_lease_this_node_does_not_know_it_holds_is_released_and_claimed() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    // A forgets it holds the game, as when the answer to the commit that took it was lost.
    a.leases.as_ref().unwrap().forget(&setup.game_id);
    // Its row renewed, nobody may claim the game...
    a.renew_leases(None).await.unwrap();
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    // ...until two scans have found the lease unknown to it: then it is released.
    for _ in 1..2 * ORPHAN_SCAN_EVERY {
        a.renew_leases(None).await.unwrap();
    }
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(
        claimed.iter().map(|log| log.game_id).collect::<Vec<_>>(),
        [setup.game_id]
    );
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_lease_this_node_holds_is_never_released_by_the_orphan_scan() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    for _ in 0..3 * ORPHAN_SCAN_EVERY {
        assert_eq!(a.renew_leases(None).await.unwrap(), Renewed::default());
    }
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));
    a.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}
