//! A node cut off from Redis (each renewal says how long since it last heard it) gives
//! its leases up, its row lapsing at once for the others to claim, only when another node
//! alive has heard Redis since; if none has (Redis itself is down), it keeps them.

use super::*;
use std::time::Duration;

/// Node `node` last heard Redis `secs` seconds ago, as its last renewal said.
fn heard_ago(cluster: &Cluster, node: &str, secs: u32) {
    execute(
        &cluster.path,
        &format!(
            "UPDATE node_leases SET redis_at = now() - interval '{secs} seconds'
             WHERE node_id = '{node}'"
        ),
    );
}

#[tokio::test]
async fn a_node_cut_off_from_redis_gives_its_games_up_when_another_node_hears_redis() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    // B hears Redis (its renewal says so); A last heard it 10 s ago.
    assert_eq!(b.renew_leases(None).await.unwrap(), Renewed::default());
    let renewed = a.renew_leases(Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(
        renewed,
        Renewed {
            lost: Vec::new(),
            given_back: true
        }
    );
    // As the lease loop does: every lease held is lost here.
    a.lose_all_leases();
    // A's row lapsed at once: B claims the game at its next claim, with its log, and A
    // can write nothing more of it.
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(
        claimed.iter().map(|log| log.game_id).collect::<Vec<_>>(),
        [setup.game_id]
    );
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    assert!(matches!(
        a.append_log(setup.game_id, &steps(&setup, 3, 4)).await,
        Err(DbError::LeaseLost { game_id }) if game_id == setup.game_id
    ));
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_node_cut_off_from_redis_keeps_its_games_when_no_other_node_heard_redis_since() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    // Redis is down for both: B last heard it 9 s ago, A 10 s ago (within a heartbeat and
    // a detection of each other, `HEARD_LATER`).
    heard_ago(&cluster, "b", 9);
    let renewed = a.renew_leases(Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(renewed, Renewed::default());
    // Renewed as ever: nobody may claim the game.
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));
    a.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_node_that_has_not_said_it_hears_redis_yet_takes_no_node_s_games() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    // B has just opened the database (its bus not yet listening): it has said nothing of
    // Redis, and A, cut off, keeps its games.
    let renewed = a.renew_leases(Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(renewed, Renewed::default());
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}
