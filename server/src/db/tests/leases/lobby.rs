//! The lobby's lease: one node holds it; no game claim takes it; once its node's lease
//! lapses, one other node claims it, with the next token, and the node that held it
//! finds it lost at its next renewal.

use super::*;
use crate::msg::LOBBY_LEASE;

#[tokio::test]
async fn the_lobbys_lease_is_held_by_one_node_and_claimed_once_when_it_lapses() {
    let cluster = Cluster::new();
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    assert_eq!(
        LOBBY_LEASE.to_string(),
        "00000000-0000-0000-0000-000000000000"
    );
    assert_eq!(a.claim_lobby().await.unwrap(), Some(1));
    assert_eq!(a.claim_lobby().await.unwrap(), None, "held already");
    assert_eq!(b.claim_lobby().await.unwrap(), None, "a holds it");
    assert_eq!(cluster.lease(LOBBY_LEASE), Some(("a".into(), 1)));

    cluster.lapse("a");
    // A game's claim leaves it alone: it is the lobby's claim's.
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(LOBBY_LEASE), Some(("a".into(), 1)));
    assert_eq!(b.claim_lobby().await.unwrap(), Some(2));
    assert_eq!(c.claim_lobby().await.unwrap(), None, "b holds it now");
    assert_eq!(cluster.lease(LOBBY_LEASE), Some(("b".into(), 2)));
    assert_eq!(a.renew_leases(None).await.unwrap().lost, [LOBBY_LEASE]);
    // Lost, a's lobby stops; only then may a claim it again (once b's lapses).
    assert_eq!(a.claim_lobby().await.unwrap(), None, "its lobby still runs");
    a.forget_moved(LOBBY_LEASE).await;
    assert_eq!(a.claim_lobby().await.unwrap(), None, "b holds it");
    assert_eq!(b.renew_leases(None).await.unwrap().lost, []);
    for db in [a, b, c] {
        db.shutdown().await.unwrap();
    }
}
