//! The cluster's pools against the Redis at 127.0.0.1:6379 (`.ci/services` starts it),
//! each test under a key prefix of its own, deleted at its end.

use std::collections::HashSet;

use elementals_protocol::messages::{Challenge, PlayerInfo, Seek};
use elementals_protocol::TimeControl;

use super::*;
use crate::lobby::Member;

mod marks;

const REDIS: &str = "redis://127.0.0.1:6379";

struct Pools {
    pools: SharedPools,
    name: String,
}

impl Drop for Pools {
    fn drop(&mut self) {
        let mut con = ::redis::Client::open(REDIS)
            .unwrap()
            .get_connection()
            .unwrap();
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{}:*", self.name))
            .query(&mut con)
            .unwrap();
        if !keys.is_empty() {
            ::redis::cmd("DEL").arg(keys).query::<()>(&mut con).unwrap();
        }
    }
}

async fn pools() -> Pools {
    let name = format!("unit-pools-{:016x}", rand::random::<u64>());
    let pools = SharedPools::connect(REDIS, &name, 1)
        .await
        .expect("this test needs Redis at 127.0.0.1:6379: start it with `bash .ci/services`");
    let p = Pools { pools, name };
    p.set_alive(NODE, true).await;
    p
}

/// The node of the tests' members.
const NODE: u64 = 7;

impl Pools {
    /// Node `node` alive (its owner key set) or dead.
    async fn set_alive(&self, node: u64, alive: bool) {
        let mut con = self.pools.con();
        let key = format!("{}{node}", self.pools.owner_prefix());
        let cmd = if alive {
            let mut cmd = ::redis::cmd("SET");
            cmd.arg(key).arg("unit");
            cmd
        } else {
            let mut cmd = ::redis::cmd("DEL");
            cmd.arg(key);
            cmd
        };
        cmd.query_async::<()>(&mut con).await.unwrap();
    }
}

fn key() -> SharedKey {
    SharedKey {
        variant: Variant::CLASSIC,
        preset: "blitz".into(),
        rated: true,
    }
}

/// Every preset, correspondence ones too (`corr-1d`: a dash inside the name's second part),
/// names a pool whose Redis name reads back as the same pool.
#[test]
fn every_preset_names_a_pool_that_reads_back() {
    for (preset, _) in elementals_protocol::TimeControl::PRESETS {
        for rated in [true, false] {
            let pool = SharedKey {
                preset: preset.into(),
                rated,
                ..key()
            };
            assert_eq!(SharedKey::parse(&pool.name()), Some(pool));
        }
    }
}

fn member(account: AccountId, rating: f64) -> Member {
    Member {
        account,
        info: PlayerInfo {
            name: format!("p{account}"),
            rating,
            guest: false,
            bot: false,
        },
        conn_id: (NODE << 48) | account as u64,
    }
}

impl Pools {
    /// Moves `account`'s joining time `secs` seconds back, as if it had waited that long.
    async fn backdate(&self, key: &SharedKey, account: AccountId, secs: u64) {
        let mut con = self.pools.con();
        let field = format!("{account}:t");
        let since: i64 = ::redis::cmd("HGET")
            .arg(self.pools.hash(key))
            .arg(&field)
            .query_async(&mut con)
            .await
            .unwrap();
        let earlier = since - 1000 * secs as i64;
        ::redis::cmd("HSET")
            .arg(self.pools.hash(key))
            .arg(&field)
            .arg(earlier)
            .query_async::<()>(&mut con)
            .await
            .unwrap();
    }
}

fn paired_with(p: Paired) -> Option<Member> {
    match p {
        Paired::With(m, _) => Some(m),
        _ => None,
    }
}

#[tokio::test]
async fn a_pair_is_made_once_the_wider_window_covers_the_distance() {
    let p = pools().await;
    let k = key();
    // 0.5 apart: beyond the first window (0.25), within it after 5 s (0.25 + 0.05 * 5).
    assert!(matches!(
        p.pools.join(&k, &member(1, 1.0)).await.unwrap(),
        Paired::Waiting { waiting: 1, .. }
    ));
    assert!(matches!(
        p.pools.join(&k, &member(2, 1.5)).await.unwrap(),
        Paired::Waiting { waiting: 2, .. }
    ));
    p.backdate(&k, 1, 4).await;
    for account in [1, 2] {
        assert!(
            matches!(
                p.pools.pair(&k, account, None).await.unwrap(),
                Paired::Waiting { waiting: 2, .. }
            ),
            "0.45 < 0.5 after 4 s"
        );
    }
    // The one who waited longest decides, whichever of the two asks.
    p.backdate(&k, 1, 2).await;
    let other =
        paired_with(p.pools.pair(&k, 2, None).await.unwrap()).expect("0.55 >= 0.5 after 6 s");
    assert_eq!(other.account, 1);
    assert_eq!(other.conn_id, member(1, 1.0).conn_id);
    assert_eq!(other.info, member(1, 1.0).info);
    // Both have left the pool.
    for account in [1, 2] {
        assert!(matches!(
            p.pools.pair(&k, account, None).await.unwrap(),
            Paired::NotWaiting
        ));
    }
    assert!(p.pools.counts().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_newcomer_takes_the_nearest_and_at_equal_distance_the_lower_id() {
    let p = pools().await;
    let k = key();
    for (account, rating) in [(7, 1.0), (4, 1.4), (9, 2.0)] {
        p.pools.join(&k, &member(account, rating)).await.unwrap();
    }
    // 1.2 is 0.2 from both 1.0 and 1.4: the lower id, 4.
    let other = paired_with(p.pools.join(&k, &member(5, 1.2)).await.unwrap()).unwrap();
    assert_eq!(other.account, 4);
    // 1.9 is nearer 2.0 than 1.0 is.
    let other = paired_with(p.pools.join(&k, &member(6, 1.9)).await.unwrap()).unwrap();
    assert_eq!(other.account, 9);
    assert_eq!(p.pools.counts().await.unwrap(), vec![(k.clone(), 1)]);
    // The same account again, from another connection: refused.
    assert!(matches!(
        p.pools.join(&k, &member(7, 1.0)).await.unwrap(),
        Paired::AlreadyWaiting
    ));
}

#[tokio::test]
async fn a_member_who_left_is_never_paired() {
    let p = pools().await;
    let k = key();
    p.pools.join(&k, &member(1, 1.0)).await.unwrap();
    assert!(p.pools.leave(&k, 1).await.unwrap());
    assert!(!p.pools.leave(&k, 1).await.unwrap(), "already gone");
    assert!(matches!(
        p.pools.join(&k, &member(2, 1.0)).await.unwrap(),
        Paired::Waiting { waiting: 1, .. }
    ));
    assert!(matches!(
        p.pools.pair(&k, 1, None).await.unwrap(),
        Paired::NotWaiting
    ));
    // Another pool is another pool.
    let unrated = SharedKey {
        rated: false,
        ..key()
    };
    assert!(matches!(
        p.pools.join(&unrated, &member(3, 1.0)).await.unwrap(),
        Paired::Waiting { waiting: 1, .. }
    ));
    let mut counts = p.pools.counts().await.unwrap();
    counts.sort_by_key(|c| c.0.rated);
    assert_eq!(counts, vec![(unrated, 1), (k, 1)]);
}

#[tokio::test]
async fn a_member_whose_node_died_is_dropped_not_paired() {
    let p = pools().await;
    let k = key();
    let mut far = member(1, 1.0);
    far.conn_id = (8 << 48) | 1;
    p.set_alive(8, true).await;
    p.pools.join(&k, &far).await.unwrap();
    p.set_alive(8, false).await;
    assert!(matches!(
        p.pools.join(&k, &member(2, 1.0)).await.unwrap(),
        Paired::Waiting { waiting: 1, .. }
    ));
    assert!(matches!(
        p.pools.pair(&k, 1, None).await.unwrap(),
        Paired::NotWaiting
    ));
    // A live node's member is paired as ever.
    assert_eq!(
        paired_with(p.pools.join(&k, &member(3, 1.1)).await.unwrap()).map(|m| m.account),
        Some(2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tickers_never_pair_a_member_twice() {
    let p = pools().await;
    let k = key();
    const MEMBERS: AccountId = 120;
    // Close enough that everyone is compatible with their neighbours.
    for account in 1..=MEMBERS {
        let rating = 1.0 + (account % 17) as f64 * 0.01;
        p.pools.join(&k, &member(account, rating)).await.unwrap();
        // Each newcomer may pair at once; count those pairs too.
    }
    // Start from whatever is still waiting, then let four tickers (four nodes) race.
    let mut tickers = Vec::new();
    for t in 0..4 {
        let pools = p.pools.clone();
        let k = k.clone();
        tickers.push(tokio::spawn(async move {
            let mut pairs = Vec::new();
            for i in 0..MEMBERS {
                let account = (i + t * 31) % MEMBERS + 1;
                if let Paired::With(other, _) = pools.pair(&k, account, None).await.unwrap() {
                    pairs.push((account, other.account));
                }
            }
            pairs
        }));
    }
    let mut pairs = Vec::new();
    for t in tickers {
        pairs.extend(t.await.unwrap());
    }
    let mut seen = HashSet::new();
    for (a, b) in &pairs {
        assert_ne!(a, b);
        assert!(
            seen.insert(*a) && seen.insert(*b),
            "{a} or {b} paired twice"
        );
    }
    let waiting: u32 = p.pools.counts().await.unwrap().iter().map(|c| c.1).sum();
    // Those paired on joining are neither waiting nor in `pairs`: every member is in
    // exactly one place.
    assert_eq!(
        u64::from(waiting) + seen.len() as u64 + joined_pairs(&p, &k, &seen).await,
        MEMBERS as u64
    );
    assert!(
        waiting <= 1,
        "compatible neighbours are all paired: {waiting} wait"
    );
}

/// Members neither waiting nor paired by the tickers: paired as they joined.
async fn joined_pairs(p: &Pools, k: &SharedKey, ticked: &HashSet<AccountId>) -> u64 {
    let mut con = p.pools.con();
    let waiting: Vec<AccountId> = ::redis::cmd("ZRANGE")
        .arg(p.pools.zset(k))
        .arg(0)
        .arg(-1)
        .query_async(&mut con)
        .await
        .unwrap();
    (1..=120)
        .filter(|a| !ticked.contains(a) && !waiting.contains(a))
        .count() as u64
}

#[tokio::test]
async fn a_dead_nodes_members_seeks_and_challenges_are_swept_once_by_a_live_node() {
    let p = pools().await;
    // Node 7 (the members' node) and node 1 (the sweeper) each sweep once: both are
    // known to have lobby state, and nobody is dead.
    let seven = SharedPools::connect(REDIS, &p.name, NODE as u16)
        .await
        .unwrap();
    p.set_alive(1, true).await;
    assert_eq!(seven.sweep_dead().await.unwrap(), Swept::default());
    assert_eq!(p.pools.sweep_dead().await.unwrap(), Swept::default());
    let k = key();
    // Far apart in rating: they wait on.
    for (account, rating) in [(1, 1.0), (2, 30.0)] {
        assert!(matches!(
            seven.join(&k, &member(account, rating)).await.unwrap(),
            Paired::Waiting { .. }
        ));
    }
    let seek = Seek {
        seek_id: seven.first_id() + 1,
        by: member(1, 1.0).info,
        variant: Variant::CLASSIC,
        time_control: TimeControl::preset("blitz").unwrap(),
        rated: true,
    };
    seven.put_seek(&seek, &member(1, 1.0)).await.unwrap();
    let to_conn = (1 << 48) | 99;
    let challenge = SharedChallenge {
        challenge: Challenge {
            challenge_id: seven.first_id() + 2,
            from: member(2, 30.0).info,
            to: "p99".into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: true,
        },
        from: member(2, 30.0),
        to: 99,
        to_conn,
    };
    seven.put_challenge(&challenge).await.unwrap();
    // Node 1's own seek stays.
    let own = Seek {
        seek_id: p.pools.first_id() + 1,
        ..seek.clone()
    };
    let maker = Member {
        conn_id: (1 << 48) | 3,
        ..member(3, 1.0)
    };
    p.pools.put_seek(&own, &maker).await.unwrap();
    assert_eq!(p.pools.sweep_dead().await.unwrap(), Swept::default());

    p.set_alive(NODE, false).await;
    let swept = p.pools.sweep_dead().await.unwrap();
    assert_eq!(
        swept,
        Swept {
            members: 2,
            seeks: 1,
            challenges: vec![(challenge.challenge.challenge_id, to_conn)],
        }
    );
    // Once: the next sweep, by either node, finds nothing more.
    assert_eq!(p.pools.sweep_dead().await.unwrap(), Swept::default());
    assert_eq!(seven.sweep_dead().await.unwrap(), Swept::default());
    assert!(p.pools.counts().await.unwrap().is_empty());
    let seeks: Vec<u64> = p
        .pools
        .seeks()
        .await
        .unwrap()
        .iter()
        .map(|s| s.seek_id)
        .collect();
    assert_eq!(seeks, [own.seek_id]);
    assert!(p
        .pools
        .get_challenge(challenge.challenge.challenge_id)
        .await
        .unwrap()
        .is_none());
}
