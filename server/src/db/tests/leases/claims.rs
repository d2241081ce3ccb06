//! Claims of lapsed leases: a claim takes by their keys the leases its search found,
//! each only if still lapsed under its lock; and the rows of nodes gone, deleted once no
//! lease names them (by a claim an hour on, or by the node itself as it shuts down).

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

/// The nodes that have a row in `node_leases`, by id.
fn node_rows(cluster: &Cluster) -> Vec<String> {
    let url = cluster.path.to_str().unwrap().to_owned();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .query("SELECT node_id FROM node_leases ORDER BY node_id", &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    })
    .join()
    .unwrap()
}

#[tokio::test]
async fn a_claim_forgets_a_node_gone_an_hour_once_no_lease_names_it() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    a.shutdown().await.unwrap();
    // A has been gone 61 minutes, holding its game; two nodes without games have been
    // gone 61 and 59 minutes.
    execute(
        &cluster.path,
        "UPDATE node_leases SET expires_at = now() - interval '61 minutes' WHERE node_id = 'a';
         INSERT INTO node_leases (node_id, epoch, expires_at)
         VALUES ('gone', 4, now() - interval '61 minutes'),
                ('recent', 2, now() - interval '59 minutes')",
    );
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    assert_eq!(
        node_rows(&cluster),
        ["a", "b", "recent"],
        "a's row stays while its lease names it"
    );
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(node_rows(&cluster), ["b", "recent"]);

    // A comes back: its row is made again, and its new games are its own.
    let a = cluster.node("a");
    assert!(a.unfinished_games().await.unwrap().is_empty());
    let (other, _, _) = game_on(&a).await;
    assert_eq!(cluster.lease(other.game_id), Some(("a".into(), 1)));
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(node_rows(&cluster), ["a", "b", "recent"]);
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_node_that_shuts_down_drops_its_row_unless_a_lease_names_it() {
    let cluster = Cluster::new();
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    let (recorded, one, two) = game_on(&a).await;
    let (held, _, _) = game_on(&b).await;
    assert!(a
        .record_game(record_of(&recorded, &one, &two))
        .await
        .unwrap()
        .is_some());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    // A's game is recorded: nothing needs its row. B's lease needs B's, lapsed, to be
    // claimed.
    assert_eq!(node_rows(&cluster), ["b", "c"]);
    let claimed = c.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].game_id, held.game_id);
    c.shutdown().await.unwrap();
    assert_eq!(
        node_rows(&cluster),
        ["b", "c"],
        "c holds the game it claimed; b's row waits for a claim an hour on"
    );
}

#[tokio::test]
async fn at_startup_a_node_takes_back_at_most_a_claims_worth_of_its_games_and_the_rest_lapse() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let mut games = Vec::new();
    for _ in 0..5 {
        games.push(game_on(&a).await.0.game_id);
    }
    a.shutdown().await.unwrap();
    // A restarts within its lease (as if killed and started again at once): its row has
    // not expired, so its games are not lapsed for the other nodes.
    execute(
        &cluster.path,
        "UPDATE node_leases SET expires_at = now() + interval '1 minute' WHERE node_id = 'a'",
    );
    let b = cluster.node("b");
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    let a = cluster.node("a");
    a.leases.as_ref().unwrap().limit_claims(3);
    let mut restored: Vec<GameId> = a
        .unfinished_games()
        .await
        .unwrap()
        .iter()
        .map(|log| log.game_id)
        .collect();
    assert_eq!(restored.len(), 3);
    // The other two lapsed with A's last epoch: the next claim takes them, here B's.
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 2);
    restored.extend(claimed.iter().map(|log| log.game_id));
    restored.sort_unstable_by_key(|id| id.0);
    games.sort_unstable_by_key(|id| id.0);
    assert_eq!(restored, games);
    for game in &games {
        let (node, token) = cluster.lease(*game).unwrap();
        assert_eq!(token, 2, "{game} taken once");
        let db = if node == "a" { &a } else { &b };
        assert_eq!(db.renew_leases(None).await.unwrap().lost, []);
    }
    assert!(a.claim_lapsed().await.unwrap().is_empty());
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}
