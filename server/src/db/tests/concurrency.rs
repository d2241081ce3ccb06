//! Many games recorded at once, as when a wave of games ends together: all of them land,
//! each rated from where the previous game left its players.

use std::collections::HashMap;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::*;

type Answer = DbResult<Option<SeatPair<RatingChange>>>;

/// `Db::record_game`, as a request for `in_one_batch`.
fn record_game(db: &Db, record: GameRecord) -> BoxFuture<'static, Answer> {
    let db = db.clone();
    async move { db.record_game(record).await }.boxed()
}

/// Runs `requests` in one batch of the writer, in the order given: the writer is held
/// while each is queued behind the one before it, then released. Their answers, in order.
async fn in_one_batch(
    db: &Db,
    requests: impl IntoIterator<Item = BoxFuture<'static, Answer>>,
) -> Vec<Answer> {
    let release = db.hold_writer().await;
    let mut calls = Vec::new();
    for (queued, request) in requests.into_iter().enumerate() {
        calls.push(tokio::spawn(request));
        while db.queued_requests() <= queued {
            tokio::task::yield_now().await;
        }
    }
    drop(release);
    futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|answer| answer.expect("the request's task"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_games_all_land_with_chained_ratings() {
    let t = open_db();
    let mut players = Vec::new();
    for i in 0..10 {
        players.push(register(&t.db, &format!("player{i}")).await);
    }
    let mut tasks = Vec::new();
    for i in 0..200 {
        let record = won(&players[i % 10], &players[(i * 7 + 3) % 10], Seat::One);
        let db = t.db.clone();
        tasks.push(tokio::spawn(async move { db.record_game(record).await }));
    }
    for task in tasks {
        assert!(task.await.unwrap().unwrap().is_some());
    }
    assert_eq!(count(&t.path, "games"), 200);
    assert_eq!(count(&t.path, "rating_history"), 400);

    // Applied one after another: each change starts where another ended, from the
    // starting rating to the stored one. (All 200 games end at the same millisecond, so
    // the history's order says nothing about the order they were applied in; the chain is
    // found from the values alone.)
    let side = side_connection(&t.path);
    let (mut wins, mut losses) = (0, 0);
    for account in &players {
        let mut statement = side
            .prepare(r#"SELECT "before", "after" FROM rating_history WHERE account_id = ?1"#)
            .unwrap();
        let changes: Vec<(f64, f64)> = statement
            .query_map([account.id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let stored = fetch(&t.db, account).await;
        assert_eq!(changes.len() as u32, stored.wins + stored.losses);
        assert!(
            chains(&changes, 1.0, stored.rating),
            "{}: {changes:?} do not chain from 1.0 to {}",
            account.name,
            stored.rating
        );
        wins += stored.wins;
        losses += stored.losses;
    }
    assert_eq!((wins, losses), (200, 200));
}

/// Whether `changes`, taken in some order, each start where the one before ended, the
/// first at `start` and the last ending at `end`: a path through the ratings that uses
/// every change once (Hierholzer's walk, then checked edge by edge). A lost update, two
/// changes from the same stored rating, leaves no such path.
fn chains(changes: &[(f64, f64)], start: f64, end: f64) -> bool {
    let edge = |(before, after): (f64, f64)| (before.to_bits(), after.to_bits());
    let mut leaving: HashMap<u64, Vec<u64>> = HashMap::new();
    for &change in changes {
        let (before, after) = edge(change);
        leaving.entry(before).or_default().push(after);
    }
    let mut stack = vec![start.to_bits()];
    let mut path = Vec::new();
    while let Some(&at) = stack.last() {
        match leaving.get_mut(&at).and_then(Vec::pop) {
            Some(next) => stack.push(next),
            None => path.extend(stack.pop()),
        }
    }
    path.reverse();
    let mut walked: Vec<(u64, u64)> = path.windows(2).map(|w| (w[0], w[1])).collect();
    let mut expected: Vec<(u64, u64)> = changes.iter().copied().map(edge).collect();
    walked.sort_unstable();
    expected.sort_unstable();
    path.first() == Some(&start.to_bits())
        && path.last() == Some(&end.to_bits())
        && walked == expected
}

#[test]
fn chains_finds_an_order_and_refuses_a_lost_update() {
    assert!(chains(&[(1.5, 2.0), (1.0, 1.5)], 1.0, 2.0));
    assert!(chains(&[], 1.0, 1.0));
    // Back and forth through one rating, in any order.
    assert!(chains(&[(1.5, 1.0), (1.0, 1.5), (1.0, 1.5)], 1.0, 1.5));
    // Two changes from 1.0: one of them was rated from a rating already replaced.
    assert!(!chains(&[(1.0, 1.5), (1.0, 0.5)], 1.0, 0.5));
    assert!(!chains(&[(1.0, 1.5)], 1.0, 2.0));
    assert!(!chains(&[(1.0, 1.5), (2.0, 2.5)], 1.0, 2.5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_games_throughput() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..2000 {
        let winner = if i % 2 == 0 { Seat::One } else { Seat::Two };
        let record = won(&ann, &bob, winner);
        let db = t.db.clone();
        tasks.push(tokio::spawn(async move { db.record_game(record).await }));
    }
    for task in tasks {
        assert!(task.await.unwrap().unwrap().is_some());
    }
    let elapsed = started.elapsed();
    println!(
        "2000 rated games recorded in {elapsed:?} ({:.0} games/s)",
        2000.0 / elapsed.as_secs_f64()
    );
    assert_eq!(count(&t.path, "games"), 2000);
}

/// Two server processes on one PostgreSQL database (two `Db`s, each with its own writer):
/// 200 games between ten accounts, each handed to both writers at once. Each game is
/// recorded once, and every rating change starts where another ended: no update is lost
/// to the other writer, and the row locks taken in id order never deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_on_one_postgres_database_record_each_game_once_and_lose_no_update() {
    let pg = testing::TestPostgres::create();
    let path = PathBuf::from(pg.url());
    let first = Db::open(&path).unwrap();
    let second = Db::open(&path).unwrap();
    let mut players = Vec::new();
    for i in 0..10 {
        players.push(register(&first, &format!("player{i}")).await);
    }
    let mut tasks = Vec::new();
    for i in 0..200 {
        let record = won(&players[i % 10], &players[(i * 7 + 3) % 10], Seat::One);
        for db in [first.clone(), second.clone()] {
            let record = record.clone();
            tasks.push(tokio::spawn(async move { db.record_game(record).await }));
        }
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap().unwrap().expect("a rated win"));
    }
    // Both writers answer a game with the same changes: the second found the first's.
    for pair in answers.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    assert_eq!(count(&path, "games"), 200);
    assert_eq!(count(&path, "rating_history"), 400);
    let url = pg.url().to_owned();
    let ids: Vec<AccountId> = players.iter().map(|p| p.id).collect();
    let histories: Vec<Vec<(f64, f64)>> = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        ids.iter()
            .map(|id| {
                client
                    .query(
                        r#"SELECT "before", "after" FROM rating_history WHERE account_id = $1"#,
                        &[id],
                    )
                    .unwrap()
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect()
            })
            .collect()
    })
    .join()
    .unwrap();
    let (mut wins, mut losses) = (0, 0);
    for (account, changes) in players.iter().zip(&histories) {
        let stored = fetch(&second, account).await;
        assert_eq!(changes.len() as u32, stored.wins + stored.losses);
        assert!(
            chains(changes, 1.0, stored.rating),
            "{}: {changes:?} do not chain from 1.0 to {}",
            account.name,
            stored.rating
        );
        wins += stored.wins;
        losses += stored.losses;
    }
    assert_eq!((wins, losses), (200, 200));
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}

/// One batch holding the same game three times and a game naming an account that does not
/// exist, on each backend: the game is recorded once and all three answers carry its
/// changes; the bad record fails alone (on PostgreSQL the bulk write of the run fails, and
/// each game is then written alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_a_game_thrice_and_a_bad_record_records_the_game_once() {
    for t in open_both() {
        let ann = register(&t.db, "ann").await;
        let bob = register(&t.db, "bob").await;
        let record = won(&ann, &bob, Seat::One);
        let mut ghost = bob.clone();
        ghost.id += 1_000;
        let bad = won(&ann, &ghost, Seat::Two);
        let requests =
            [record.clone(), bad, record.clone(), record.clone()].map(|r| record_game(&t.db, r));
        let answers = in_one_batch(&t.db, requests).await;
        assert!(answers[1].is_err(), "{:?}", answers[1]);
        let changes = answers[0].clone().unwrap().expect("rated");
        for answer in [&answers[2], &answers[3]] {
            assert_eq!(answer.clone().unwrap(), Some(changes));
        }
        assert_eq!(count(&t.path, "games"), 1);
        assert_eq!(count(&t.path, "rating_history"), 2);
        assert_eq!(fetch(&t.db, &ann).await.wins, 1);
        assert_eq!(fetch(&t.db, &bob).await.losses, 1);
    }
}

/// One batch: a run of records that fails in bulk (a game naming no account), a request
/// that ends the run, then a second run rating the same two accounts. The second run
/// rates from what the first wrote, on each backend (on PostgreSQL, not from the ratings
/// the batch read as it locked the accounts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_after_a_failed_run_rates_from_what_the_failed_run_wrote() {
    for t in open_both() {
        let ann = register(&t.db, "ann").await;
        let bob = register(&t.db, "bob").await;
        let mut ghost = bob.clone();
        ghost.id += 1_000;
        // The lookup between the two runs ends the first.
        let lookup = {
            let db = t.db.clone();
            async move { db.account_by_name("ann".into()).await.map(|_| None) }.boxed()
        };
        let requests = vec![
            record_game(&t.db, won(&ann, &bob, Seat::One)),
            record_game(&t.db, won(&ann, &ghost, Seat::Two)),
            lookup,
            record_game(&t.db, won(&ann, &bob, Seat::One)),
        ];
        let answers = in_one_batch(&t.db, requests).await;
        assert!(answers[1].is_err(), "{:?}", answers[1]);
        let first = answers[0].clone().unwrap().expect("rated");
        let second = answers[3].clone().unwrap().expect("rated");
        assert_eq!(second.one.before, first.one.after);
        assert_eq!(second.two.before, first.two.after);
        assert_eq!(fetch(&t.db, &ann).await.rating, second.one.after);
        assert_eq!(fetch(&t.db, &ann).await.wins, 2);
    }
}
