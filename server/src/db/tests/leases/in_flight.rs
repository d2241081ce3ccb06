//! Leases under transactions still in flight: a claim waits for a step batch that holds
//! its game's lease, a renewal and a step batch never wait on each other, and a renewal
//! racing this node's own claim back loses no game.

use super::*;

#[tokio::test]
async fn a_lease_locked_by_a_write_in_flight_is_claimed_only_after_it_with_its_steps() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    a.shutdown().await.unwrap();
    cluster.lapse("a");
    // Node a's last batch, in flight: its lease locked and checked, a step written, not
    // yet committed (on a connection of the test's, as the step log's thread does it).
    let (go, commit) = std::sync::mpsc::channel::<()>();
    let (locked_tx, locked) = tokio::sync::oneshot::channel();
    let url = cluster.path.to_str().unwrap().to_owned();
    let game = setup.game_id.to_string();
    let step = crate::db::journal::encode(&steps(&setup, 3, 4))
        .unwrap()
        .remove(0)
        .1;
    let writer = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut tx = client.transaction().unwrap();
        let held = tx
            .query(
                "SELECT game_id FROM game_leases WHERE game_id = $1 AND node_id = 'a'
                 AND token = 1 FOR KEY SHARE",
                &[&game],
            )
            .unwrap();
        assert_eq!(held.len(), 1);
        tx.execute(
            "INSERT INTO game_log (game_id, step, entry) VALUES ($1, 3, $2)",
            &[&game, &step],
        )
        .unwrap();
        locked_tx.send(()).unwrap();
        commit.recv().unwrap();
        tx.commit().unwrap();
    });
    locked.await.unwrap();
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));

    go.send(()).unwrap();
    tokio::task::spawn_blocking(move || writer.join().unwrap())
        .await
        .unwrap();
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].steps.len(), 4, "the committed write is replayed");
    b.append_log(setup.game_id, &steps(&setup, 4, 5))
        .await
        .unwrap();
    b.shutdown().await.unwrap();
}

/// Runs `sql` (on `$1`, the game's id, touching one row) in a transaction on a
/// connection of the test's, as another of the node's threads would, and holds the
/// transaction open until the returned sender is used or dropped.
async fn in_flight(
    cluster: &Cluster,
    game: GameId,
    sql: &'static str,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (go, commit) = std::sync::mpsc::channel::<()>();
    let (locked_tx, locked) = tokio::sync::oneshot::channel();
    let url = cluster.path.to_str().unwrap().to_owned();
    let held = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut tx = client.transaction().unwrap();
        assert_eq!(tx.execute(sql, &[&game.to_string()]).unwrap(), 1);
        locked_tx.send(()).unwrap();
        let _ = commit.recv();
        tx.commit().unwrap();
    });
    locked.await.unwrap();
    (go, held)
}

#[tokio::test]
async fn a_renewal_in_flight_delays_no_step_and_a_step_in_flight_no_renewal() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let (setup, _, _) = game_on(&a).await;
    let bound = std::time::Duration::from_secs(20);
    // A renewal not yet committed (its node's row locked, as the renewer's thread makes
    // it): the step is committed all the same.
    let (go, renewal) = in_flight(
        &cluster,
        setup.game_id,
        "UPDATE node_leases SET expires_at = now() + interval '6 seconds'
         WHERE node_id = (SELECT node_id FROM game_leases WHERE game_id = $1)",
    )
    .await;
    let step = steps(&setup, 3, 4);
    tokio::time::timeout(bound, a.append_log(setup.game_id, &step))
        .await
        .expect("the step does not wait for the renewal")
        .unwrap();
    assert_eq!(cluster.steps_of(setup.game_id), 4);
    drop(go);
    tokio::task::spawn_blocking(move || renewal.join().unwrap())
        .await
        .unwrap();
    // A step batch not yet committed, its lease locked as the step log locks it: the
    // node's renewal goes through all the same.
    let (go, batch) = in_flight(
        &cluster,
        setup.game_id,
        "SELECT game_id FROM game_leases WHERE game_id = $1 FOR KEY SHARE",
    )
    .await;
    let renewed = tokio::time::timeout(bound, a.renew_leases(None))
        .await
        .expect("the renewal does not wait for the step batch");
    assert_eq!(renewed.unwrap().lost, []);
    drop(go);
    tokio::task::spawn_blocking(move || batch.join().unwrap())
        .await
        .unwrap();
    a.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_renewal_while_this_node_claims_its_own_lapsed_lease_back_loses_no_game() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let (setup, _, _) = game_on(&a).await;
    // The game's lease is of the node's last epoch (its first step read the epoch as a
    // renewal started the next one), so lapsed while the game runs on here: a's own claim
    // takes it back, token 1 to 2. A renewal made between the claim's commit and its
    // holding the new token still reads for token 1, and finds it gone.
    execute(
        &cluster.path,
        "UPDATE node_leases SET epoch = epoch + 1 WHERE node_id = 'a'",
    );
    let (committed, go) = a.leases.as_ref().unwrap().pause_next_claim();
    let claim = tokio::spawn({
        let a = a.clone();
        async move { a.claim_lapsed().await }
    });
    tokio::task::spawn_blocking(move || committed.recv())
        .await
        .unwrap()
        .expect("the claim commits");
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 2)));
    let renewed = a.renew_leases(None).await.unwrap();
    drop(go);
    let claimed = claim.await.unwrap().unwrap();
    assert!(claimed.is_empty(), "a game running here is not restored");
    assert_eq!(
        renewed.lost,
        [],
        "a game claimed back by its own node is not lost"
    );

    // It goes on here under the new token.
    a.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 2)));
    a.shutdown().await.unwrap();
}
