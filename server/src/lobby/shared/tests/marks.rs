//! The seating marks against Redis: a pairing passes over a marked neighbour for the
//! nearest unmarked one.

use super::*;

impl Pools {
    /// Marks `account` seating, as a pairing elsewhere would have.
    async fn mark(&self, account: AccountId) {
        let mut con = self.pools.con();
        ::redis::cmd("SET")
            .arg(format!("{}{account}", self.pools.seating_prefix()))
            .arg(1)
            .arg("PX")
            .arg(60_000)
            .query_async::<()>(&mut con)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_marked_nearest_neighbour_is_passed_over_for_the_nearest_unmarked_one() {
    let p = pools().await;
    let k = key();
    // Below 1.0: 0.95 and 0.9 marked, then 0.85; above: 1.2 (in the window, but farther).
    for (account, rating) in [(1, 0.95), (2, 0.9), (3, 0.85), (4, 1.2)] {
        p.pools.join(&k, &member(account, rating)).await.unwrap();
    }
    p.mark(1).await;
    p.mark(2).await;
    let other = paired_with(p.pools.join(&k, &member(5, 1.0)).await.unwrap());
    assert_eq!(other.map(|m| m.account), Some(3), "0.15 away, unmarked");
    // The marked members wait on, unpaired.
    assert_eq!(p.pools.counts().await.unwrap(), vec![(k.clone(), 3)]);
    // Above 0.8, past the two marked ones, the nearest unmarked is 1.2: out of the window.
    assert!(matches!(
        p.pools.join(&k, &member(6, 0.8)).await.unwrap(),
        Paired::Waiting { waiting: 4, .. }
    ));
}
