//! Many games recorded at once, as when a wave of games ends together: all of them land,
//! each rated from where the previous game left its players.

use super::*;

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

    // Applied one after another: each change starts where the previous one ended.
    let side = side_connection(&t.path);
    let (mut wins, mut losses) = (0, 0);
    for account in &players {
        let mut statement = side
            .prepare(
                r#"SELECT "before", "after" FROM rating_history
                   WHERE account_id = ?1 ORDER BY rowid"#,
            )
            .unwrap();
        let chain: Vec<(f64, f64)> = statement
            .query_map([account.id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut rating = 1.0;
        for (before, after) in chain {
            assert_eq!(before, rating, "{}", account.name);
            rating = after;
        }
        let stored = fetch(&t.db, account).await;
        assert_eq!(stored.rating, rating, "{}", account.name);
        wins += stored.wins;
        losses += stored.losses;
    }
    assert_eq!((wins, losses), (200, 200));
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
