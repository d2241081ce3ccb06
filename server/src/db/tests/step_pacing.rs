//! PostgreSQL's step log paces its commits by the sync interval, as SQLite's journal paces
//! its syncs: appends that come within the interval after a batch began share the next
//! commit (one transaction: their rows' `xmin` is the same), and an append after a quiet
//! spell is committed at once.

use std::time::Duration;

use crate::record::GameSetup;
use crate::record::{LogEntry, LogStep};

use super::*;

/// A new game's first step, of two fresh players.
async fn first_step(db: &Db) -> (GameId, Vec<LogStep>) {
    let n = uuid::Uuid::new_v4().simple().to_string();
    let one = register(db, &format!("one{}", &n[..8])).await;
    let two = register(db, &format!("two{}", &n[..8])).await;
    let setup = GameSetup {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player(&one), player(&two)),
    };
    let step = LogStep {
        step: 0,
        at: 1_700_000_000_000,
        banks_us: SeatPair::new(60_000_000, 60_000_000),
        seq: 0,
        entry: LogEntry::Start {
            setup: setup.clone(),
            started_at: 1_700_000_000_000,
        },
    };
    (setup.game_id, vec![step])
}

/// The transactions that wrote the games' rows in `game_log`.
fn writers(path: &Path, games: &[GameId]) -> i64 {
    let ids: Vec<String> = games.iter().map(|g| format!("'{g}'")).collect();
    count(
        path,
        &format!(
            "(SELECT DISTINCT xmin::text FROM game_log WHERE game_id IN ({})) AS w",
            ids.join(",")
        ),
    )
}

#[tokio::test]
async fn appends_that_come_within_the_interval_share_the_next_commit() {
    let pg = testing::TestPostgres::create();
    let path = PathBuf::from(pg.url());
    let interval = Duration::from_millis(400);
    let db = Db::open_with_sync_interval(&path, interval).unwrap();
    let (a, b, c) = (
        first_step(&db).await,
        first_step(&db).await,
        first_step(&db).await,
    );

    let sent = std::time::Instant::now();
    db.append_log(a.0, &a.1).await.unwrap();
    // A batch began a moment ago: these two wait for the rest of its interval, and go
    // in one transaction.
    let (second, third) = tokio::join!(db.append_log(b.0, &b.1), db.append_log(c.0, &c.1));
    second.unwrap();
    third.unwrap();
    assert!(
        sent.elapsed() >= interval,
        "the second commit began within the interval of the first"
    );
    assert_eq!(writers(&path, &[b.0, c.0]), 1, "one commit for both");
    assert_eq!(writers(&path, &[a.0, b.0, c.0]), 2);
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_append_after_a_quiet_spell_is_committed_at_once() {
    let pg = testing::TestPostgres::create();
    let path = PathBuf::from(pg.url());
    // An interval no test would outlive: the first append must not wait for it.
    let db = Db::open_with_sync_interval(&path, Duration::from_secs(3600)).unwrap();
    let (game, steps) = first_step(&db).await;
    tokio::time::timeout(Duration::from_secs(60), db.append_log(game, &steps))
        .await
        .expect("the append waited for the interval")
        .unwrap();
    assert_eq!(
        count(&path, &format!("game_log WHERE game_id = '{game}'")),
        1
    );
    db.shutdown().await.unwrap();
}
