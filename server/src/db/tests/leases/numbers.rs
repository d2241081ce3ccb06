//! A node's number in the cluster: taken with its row, the lowest no row holds, unique
//! however many nodes start at once; kept by a node started again under its id; given
//! again only once its row is forgotten, and the node that finds its row forgotten is
//! told its number is lost.

use super::*;
use tokio::time::{timeout, Duration};

#[tokio::test]
async fn node_numbers_are_unique_kept_under_the_same_id_and_lost_with_a_forgotten_row() {
    let cluster = Cluster::new();
    // Eight nodes open the database at once: eight numbers, 1 to 8.
    let opening: Vec<_> = (0..8)
        .map(|i| {
            let path = cluster.path.clone();
            std::thread::spawn(move || {
                Db::open_leased(
                    &path,
                    DEFAULT_GAME_LOG_SYNC_INTERVAL,
                    format!("n{i}"),
                    LEASE,
                )
                .unwrap()
            })
        })
        .collect();
    let nodes: Vec<Db> = opening.into_iter().map(|t| t.join().unwrap()).collect();
    let mut numbers: Vec<u16> = nodes.iter().map(|n| n.node_number().unwrap()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=8).collect::<Vec<u16>>());

    // Node n3 starts again under its id: its number is its own still.
    let n3 = nodes[3].node_number();
    drop(nodes);
    assert_eq!(cluster.node("n3").node_number(), n3);

    // A node whose row is forgotten (silent an hour, `claim.rs`): its number goes to
    // the next node to start, and its own next renewal finds it lost.
    let a = cluster.node("a");
    let number = a.node_number().unwrap();
    assert_eq!(number, 9);
    execute(&cluster.path, "DELETE FROM node_leases WHERE node_id = 'a'");
    assert_eq!(cluster.node("b").node_number(), Some(number));
    assert!(
        timeout(Duration::from_millis(50), a.node_number_lost())
            .await
            .is_err(),
        "not lost until the node hears it"
    );
    a.renew_leases(None).await.unwrap();
    timeout(Duration::from_secs(5), a.node_number_lost())
        .await
        .expect("the renewal finds the number lost");
    // Without leases (one process, not a cluster), there is no number to lose.
    for lone in open_both() {
        assert_eq!(lone.db.node_number(), None);
    }
}
