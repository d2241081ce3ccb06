//! Cluster mode's leases on PostgreSQL: two nodes' `Db`s on one database. A game's lease
//! is taken with its first step and goes with its record; a lapsed one is claimed once,
//! with the next token and the game's log; the node that lost it writes nothing more of
//! the game, neither steps nor record. A node's lease lapses by hand (the database's clock
//! decides it, not the test's).

use crate::record::GameSetup;
use crate::record::{LogEntry, LogStep};

use super::*;

struct Cluster {
    path: PathBuf,
    _pg: testing::TestPostgres,
}

impl Cluster {
    fn new() -> Cluster {
        let pg = testing::TestPostgres::create();
        Cluster {
            path: PathBuf::from(pg.url()),
            _pg: pg,
        }
    }

    fn node(&self, id: &str) -> Db {
        Db::open_leased(&self.path, DEFAULT_GAME_LOG_SYNC_INTERVAL, id.into(), LEASE).unwrap()
    }

    /// Every lease as (node, token).
    fn lease(&self, game: GameId) -> Option<(String, i64)> {
        let url = self.path.to_str().unwrap().to_owned();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            client
                .query_opt(
                    "SELECT node_id, token FROM game_leases WHERE game_id = $1",
                    &[&game.to_string()],
                )
                .unwrap()
                .map(|row| (row.get(0), row.get(1)))
        })
        .join()
        .unwrap()
    }

    /// Node `node`'s lease, and so every game's it holds, lapses now.
    fn lapse(&self, node: &str) {
        execute(
            &self.path,
            &format!(
                "UPDATE node_leases SET expires_at = now() - interval '1 second'
                 WHERE node_id = '{node}'"
            ),
        );
    }

    fn steps_of(&self, game: GameId) -> i64 {
        count(&self.path, &format!("game_log WHERE game_id = '{game}'"))
    }
}

fn setup(one: &AccountRow, two: &AccountRow) -> GameSetup {
    GameSetup {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player(one), player(two)),
    }
}

/// Steps `from..to` of a game (each a `Restarted`, after a `Start` at 0).
fn steps(setup: &GameSetup, from: u64, to: u64) -> Vec<LogStep> {
    (from..to)
        .map(|step| LogStep {
            step,
            at: 1_700_000_000_000 + step,
            banks_us: SeatPair::new(60_000_000, 60_000_000),
            seq: step,
            entry: match step {
                0 => LogEntry::Start {
                    setup: setup.clone(),
                    started_at: 1_700_000_000_000,
                },
                _ => LogEntry::Restarted { voided: None },
            },
        })
        .collect()
}

/// Two players and a game of theirs with three steps logged by `db`.
async fn game_on(db: &Db) -> (GameSetup, AccountRow, AccountRow) {
    let n = uuid::Uuid::new_v4().simple().to_string();
    let one = register(db, &format!("one{}", &n[..8])).await;
    let two = register(db, &format!("two{}", &n[..8])).await;
    let setup = setup(&one, &two);
    db.append_log(setup.game_id, &steps(&setup, 0, 3))
        .await
        .unwrap();
    (setup, one, two)
}

fn record_of(setup: &GameSetup, one: &AccountRow, two: &AccountRow) -> GameRecord {
    GameRecord {
        game_id: setup.game_id,
        ..won(one, two, Seat::Two)
    }
}

#[tokio::test]
async fn a_games_first_step_takes_its_lease_and_its_record_lets_it_go() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let (setup, one, two) = game_on(&a).await;
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);

    assert!(a
        .record_game(record_of(&setup, &one, &two))
        .await
        .unwrap()
        .is_some());
    assert_eq!(cluster.lease(setup.game_id), None);
    assert_eq!(cluster.steps_of(setup.game_id), 0);
    // Recorded, so no longer held: not reported lost by the next renewal.
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    a.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_lease_that_has_not_lapsed_is_not_claimed() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 1)));
    a.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_lapsed_lease_is_claimed_once_with_the_next_token_and_the_games_log() {
    let cluster = Cluster::new();
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    let (setup, _, _) = game_on(&a).await;
    cluster.lapse("a");

    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].game_id, setup.game_id);
    assert_eq!(claimed[0].steps.len(), 3);
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    assert!(c.claim_lapsed().await.unwrap().is_empty());
    assert!(b.claim_lapsed().await.unwrap().is_empty());

    // The claimer goes on from the log's next step; the node that lost it writes nothing.
    b.append_log(setup.game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    assert!(matches!(
        a.append_log(setup.game_id, &steps(&setup, 3, 4)).await,
        Err(DbError::LeaseLost { game_id }) if game_id == setup.game_id
    ));
    assert_eq!(cluster.steps_of(setup.game_id), 4);
    assert_eq!(b.renew_leases(None).await.unwrap().lost, []);
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    for db in [a, b, c] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_node_renewing_after_its_lease_lapsed_starts_a_new_epoch_and_its_games_stay_lapsed() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    let renewed_once = cluster.lease(setup.game_id);
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    assert_eq!(cluster.lease(setup.game_id), renewed_once);
    // A's lease lapses (on its own clock it has stopped its games by then); its renewal
    // comes back, but the game it held is lost to it and still lapsed for every node.
    cluster.lapse("a");
    assert_eq!(a.renew_leases(None).await.unwrap().lost, [setup.game_id]);
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "a renewal brings back no game nobody runs"
    );
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    // A's new games are its own, under its new epoch: not lapsed.
    let (other, _, _) = game_on(&a).await;
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert_eq!(cluster.lease(other.game_id), Some(("a".into(), 1)));
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

/// The lease loop's clock counts a lapse from when the last renewal was sent, the
/// database's from when it applied it: a renewal sent just after the node's own lapse (its
/// games stopped) can find its row not yet expired, and renew the old epoch. The node starts
/// a new epoch all the same before its next claim, so the stopped game's lease lapses and is
/// claimed (here by the node itself, once its actor has stopped), not left alive with
/// nobody running the game.
#[tokio::test]
async fn a_node_whose_leases_lapsed_on_its_own_clock_starts_a_new_epoch_though_its_row_is_live() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let (setup, _, _) = game_on(&a).await;
    assert_eq!(a.lose_all_leases(), 1);
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    a.forget_moved(setup.game_id).await;
    let claimed = a.claim_lapsed().await.unwrap();
    assert_eq!(
        claimed.iter().map(|log| log.game_id).collect::<Vec<_>>(),
        [setup.game_id]
    );
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 2)));
    // Held again under the new epoch: renewed, not lost.
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    a.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_token_moved_on_refuses_the_next_step_and_renewal_reports_it() {
    let cluster = Cluster::new();
    let a = cluster.node("a");
    let (setup, _, _) = game_on(&a).await;
    execute(&cluster.path, "UPDATE game_leases SET token = token + 1");
    assert_eq!(a.renew_leases(None).await.unwrap().lost, [setup.game_id]);
    // Reported once: the game is no longer this node's.
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    assert!(matches!(
        a.append_log(setup.game_id, &steps(&setup, 3, 4)).await,
        Err(DbError::LeaseLost { .. })
    ));
    assert_eq!(cluster.steps_of(setup.game_id), 3);

    // Found at its step, without a renewal in between, just the same.
    let (other, _, _) = game_on(&a).await;
    execute(
        &cluster.path,
        &format!(
            "UPDATE game_leases SET token = token + 1 WHERE game_id = '{}'",
            other.game_id
        ),
    );
    assert!(matches!(
        a.append_log(other.game_id, &steps(&other, 3, 4)).await,
        Err(DbError::LeaseLost { .. })
    ));
    assert_eq!(cluster.steps_of(other.game_id), 3);
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    a.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_node_whose_record_was_refused_may_claim_the_game_again_later() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, one, two) = game_on(&a).await;
    cluster.lapse("a");
    assert_eq!(b.claim_lapsed().await.unwrap().len(), 1);
    // A finds the lease lost at its renewal (not to be claimed back while its actor
    // runs), and its finished game's record is refused: the actor is done with it.
    assert_eq!(a.renew_leases(None).await.unwrap().lost, [setup.game_id]);
    assert!(matches!(
        a.record_game(record_of(&setup, &one, &two)).await,
        Err(DbError::LeaseLost { .. })
    ));
    // B dies in its turn: A claims the game like any other node would.
    cluster.lapse("b");
    let claimed = a.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1, "the game is not kept as lost by A");
    assert_eq!(cluster.lease(setup.game_id), Some(("a".into(), 3)));
    for db in [a, b] {
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_record_without_the_lease_is_refused_and_the_claimers_is_applied_once() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, one, two) = game_on(&a).await;
    cluster.lapse("a");
    assert_eq!(b.claim_lapsed().await.unwrap().len(), 1);

    let record = record_of(&setup, &one, &two);
    assert!(matches!(
        a.record_game(record.clone()).await,
        Err(DbError::LeaseLost { .. })
    ));
    assert_eq!(count(&cluster.path, "games"), 0);
    let changes = b.record_game(record.clone()).await.unwrap().unwrap();
    assert_eq!(changes.two.after, 1.5);
    // Recorded now: the loser of the race is answered the first record's changes, and
    // nothing is applied twice.
    assert_eq!(a.record_game(record).await.unwrap(), Some(changes));
    assert_eq!(count(&cluster.path, "rating_history"), 2);
    assert_eq!(fetch(&b, &two).await.rating, 1.5);
    assert_eq!(cluster.lease(setup.game_id), None);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn at_startup_a_node_claims_its_own_leases_and_games_logged_without_one() {
    let cluster = Cluster::new();
    // A game logged by a single node without leases, and one by node a.
    let single = Db::open(&cluster.path).unwrap();
    let (unleased, _, _) = game_on(&single).await;
    single.shutdown().await.unwrap();
    let a = cluster.node("a");
    let (own, _, _) = game_on(&a).await;
    // Node b starts while a runs: a's game is not b's to take.
    let b = cluster.node("b");
    let claimed: Vec<GameId> = b
        .unfinished_games()
        .await
        .unwrap()
        .iter()
        .map(|log| log.game_id)
        .collect();
    assert_eq!(claimed, [unleased.game_id]);
    assert_eq!(cluster.lease(unleased.game_id), Some(("b".into(), 1)));
    a.shutdown().await.unwrap();

    // Node a restarts: its game is its own again, under a new token.
    let a = cluster.node("a");
    let claimed = a.unfinished_games().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].game_id, own.game_id);
    assert_eq!(cluster.lease(own.game_id), Some(("a".into(), 2)));
    a.append_log(own.game_id, &steps(&own, 3, 4)).await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_node_that_shuts_down_lets_its_leases_lapse_for_the_others_at_once() {
    let cluster = Cluster::new();
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let (setup, _, _) = game_on(&a).await;
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    a.shutdown().await.unwrap();
    let claimed = b.claim_lapsed().await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].game_id, setup.game_id);
    assert_eq!(cluster.lease(setup.game_id), Some(("b".into(), 2)));
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_sleeping_games_lease_is_no_nodes_and_one_of_two_waking_nodes_takes_it() {
    let cluster = Cluster::new();
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    let (setup, one, two) = game_on(&a).await;
    let game_id = setup.game_id;
    let sleeper = Sleeper {
        game_id,
        due_ms: 1,
        seats: SeatPair::new(one.id, two.id),
        summary: None,
    };
    // Committed, the step log forgets it: the next append finds no lease held.
    a.hibernate(sleeper.clone()).await.unwrap();
    assert_eq!(cluster.lease(game_id), Some((String::new(), 1)));
    // Neither renewed (it is not lost) nor claimed, however long it sleeps.
    assert_eq!(a.renew_leases(None).await.unwrap().lost, []);
    assert!(b.claim_lapsed().await.unwrap().is_empty());
    assert!(a.append_log(game_id, &steps(&setup, 3, 4)).await.is_err());

    // B and C wake it at once: one reads its log and holds its lease, with the next token.
    let (by_b, by_c) = tokio::join!(b.game_logs(vec![game_id]), c.game_logs(vec![game_id]));
    let (by_b, by_c) = (by_b.unwrap(), by_c.unwrap());
    assert_eq!(by_b.len() + by_c.len(), 1, "{by_b:?} {by_c:?}");
    let (winner, loser, name) = match by_b.len() {
        1 => (&b, &c, "b"),
        _ => (&c, &b, "c"),
    };
    assert_eq!(by_b.iter().chain(&by_c).next().unwrap().steps.len(), 3);
    assert_eq!(cluster.lease(game_id), Some((name.to_owned(), 2)));
    assert_eq!(count(&cluster.path, "game_wakeups"), 0);
    assert!(winner.game_logs(vec![game_id]).await.unwrap().is_empty());

    // The winner goes on from the log's next step; nobody else writes.
    winner
        .append_log(game_id, &steps(&setup, 3, 4))
        .await
        .unwrap();
    for other in [&a, loser] {
        assert!(other
            .append_log(game_id, &steps(&setup, 4, 5))
            .await
            .is_err());
    }
    assert_eq!(cluster.steps_of(game_id), 4);
    // A node without the lease cannot put it to sleep either.
    assert!(matches!(
        a.hibernate(sleeper).await,
        Err(DbError::LeaseLost { .. })
    ));
    assert_eq!(count(&cluster.path, "game_wakeups"), 0);
    assert_eq!(winner.renew_leases(None).await.unwrap().lost, []);
    for db in [a, b, c] {
        db.shutdown().await.unwrap();
    }
}

mod claims;
mod cut_off;
mod in_flight;
mod lobby;
mod numbers;
mod orphans;
