//! The persistence writer, driven through `Db` against a temporary database file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use elementals_protocol::messages::{EndReason, GameId, GameResult, SeatPair};
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use tempfile::TempDir;

use super::*;
use crate::record::{AccountId, RecordPlayer};

/// A player page's whole history (as much as a page holds).
const FULL_HISTORY: Page = Page {
    limit: 200,
    offset: 0,
};

pub(super) struct TestDb {
    pub db: Db,
    /// The SQLite file, or the PostgreSQL URL: `Db::open` takes either.
    pub path: PathBuf,
    _dir: TempDir,
    /// Dropped after `db`'s fields... and dropping it drops the database.
    _pg: Option<testing::TestPostgres>,
}

pub(super) fn open_db() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elementals.db");
    let db = Db::open(&path).unwrap();
    TestDb {
        db,
        path,
        _dir: dir,
        _pg: None,
    }
}

/// A fresh database of each backend: SQLite, then PostgreSQL (a database of its own,
/// dropped with the `TestDb`).
pub(super) fn open_both() -> Vec<TestDb> {
    let pg = testing::TestPostgres::create();
    let path = PathBuf::from(pg.url());
    let db = Db::open(&path).unwrap();
    vec![
        open_db(),
        TestDb {
            db,
            path,
            _dir: tempfile::tempdir().unwrap(),
            _pg: Some(pg),
        },
    ]
}

pub(super) async fn register(db: &Db, name: &str) -> AccountRow {
    db.create_account(name.into(), format!("hash-of-{name}"))
        .await
        .unwrap()
}

/// A second connection, as an operator's shell would open, to seed or inspect rows.
pub(super) fn side_connection(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

async fn set_rating(t: &TestDb, account: AccountId, rating: f64) {
    t.db.flush().await.unwrap();
    execute(
        &t.path,
        &format!("UPDATE accounts SET rating = {rating:?} WHERE id = {account}"),
    );
}

/// Runs `sql` on a side connection to either backend, as an operator would.
pub(super) fn execute(path: &Path, sql: &str) {
    match Location::of(path) {
        Location::Sqlite(path) => {
            side_connection(path).execute_batch(sql).unwrap();
        }
        Location::Postgres(url) => {
            let (url, sql) = (url.to_owned(), sql.to_owned());
            std::thread::spawn(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                client.batch_execute(&sql).unwrap();
            })
            .join()
            .unwrap();
        }
    }
}

/// The rows of `table`, on either backend.
pub(super) fn count(path: &Path, table: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table}");
    match Location::of(path) {
        Location::Sqlite(path) => side_connection(path)
            .query_row(&sql, [], |r| r.get(0))
            .unwrap(),
        Location::Postgres(url) => {
            let url = url.to_owned();
            std::thread::spawn(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                client.query_one(&sql, &[]).unwrap().get(0)
            })
            .join()
            .unwrap()
        }
    }
}

pub(super) fn player(account: &AccountRow) -> RecordPlayer {
    RecordPlayer {
        account_id: account.id,
        name: account.name.clone(),
        guest: account.guest,
        rating: account.rating,
    }
}

pub(super) fn game(
    one: &AccountRow,
    two: &AccountRow,
    rated: bool,
    winner: Option<Seat>,
    reason: EndReason,
) -> GameRecord {
    GameRecord {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::new(5, 2, 3).unwrap(),
        time_control: TimeControl::BLITZ,
        rated,
        players: SeatPair::new(player(one), player(two)),
        started_at: 1_000,
        ended_at: 2_000,
        result: GameResult { winner, reason },
        rounds: Vec::new(),
        final_clocks_ms: SeatPair::new(60_000, 50_000),
    }
}

/// A rated game won at the edge by `winner`.
pub(super) fn won(one: &AccountRow, two: &AccountRow, winner: Seat) -> GameRecord {
    game(one, two, true, Some(winner), EndReason::Edge)
}

pub(super) async fn fetch(db: &Db, account: &AccountRow) -> AccountRow {
    db.account_by_id(account.id).await.unwrap().unwrap()
}

#[tokio::test]
async fn accounts_are_found_by_name_in_any_case() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        assert_eq!(ann.name, "Ann");
        assert_eq!(ann.password_hash.as_deref(), Some("hash-of-Ann"));
        assert!(!ann.guest);
        assert_eq!(
            (ann.rating, ann.wins, ann.losses, ann.draws),
            (1.0, 0, 0, 0)
        );

        assert_eq!(
            t.db.account_by_name("aNN".into()).await.unwrap(),
            Some(ann.clone())
        );
        assert_eq!(t.db.account_by_id(ann.id).await.unwrap(), Some(ann.clone()));
        assert_eq!(t.db.account_by_name("Bob".into()).await.unwrap(), None);
        assert_eq!(t.db.account_by_id(ann.id + 1).await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_taken_name_is_refused_in_any_case() {
    for t in open_both() {
        register(&t.db, "Ann").await;
        let again = t.db.create_account("ANN".into(), "other".into()).await;
        assert!(matches!(again, Err(DbError::NameTaken)), "{again:?}");
    }
}

#[tokio::test]
async fn guests_get_distinct_generated_names() {
    for t in open_both() {
        let mut names = HashSet::new();
        for _ in 0..100 {
            let guest = t.db.create_guest().await.unwrap();
            let symbols = guest.name.strip_prefix("guest-").unwrap();
            assert_eq!(symbols.len(), 10, "{}", guest.name);
            assert!(
                symbols
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
                "{}",
                guest.name
            );
            assert!(guest.guest);
            assert_eq!(guest.password_hash, None);
            assert!(names.insert(guest.name));
        }
    }
}

/// A use of a session that leaves its expiry where it is.
pub(super) const KEEP: Slide = Slide { below: 0, to: 0 };

#[tokio::test]
async fn a_session_is_valid_until_it_expires_or_is_revoked() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let token = [7u8; 32];
        t.db.insert_session(token, ann.id, 5_000, 10).await.unwrap();

        let session = t.db.session(token, 4_999, KEEP).await.unwrap().unwrap();
        assert_eq!(session.account, ann);
        assert_eq!(session.expires_at, 5_000);
        assert_eq!(t.db.session(token, 5_000, KEEP).await.unwrap(), None);
        assert_eq!(t.db.session([8u8; 32], 0, KEEP).await.unwrap(), None);

        t.db.revoke_session(token).await.unwrap();
        assert_eq!(t.db.session(token, 0, KEEP).await.unwrap(), None);
    }
}

/// A use moves the expiry of a session that expires before `below` to `to`, and only
/// then: the stored row says so; an expired session stays expired.
#[tokio::test]
async fn a_use_slides_a_sessions_expiry_only_when_it_lags() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let token = [9u8; 32];
        t.db.insert_session(token, ann.id, 5_000, 10).await.unwrap();
        let slide = |below, to| Slide { below, to };

        let kept = t.db.session(token, 1_000, slide(5_000, 9_000)).await;
        assert_eq!(
            kept.unwrap().unwrap().expires_at,
            5_000,
            "not before `below`"
        );
        let moved = t.db.session(token, 1_000, slide(5_001, 9_000)).await;
        assert_eq!(moved.unwrap().unwrap().expires_at, 9_000);
        let stored = t.db.session(token, 8_999, KEEP).await.unwrap().unwrap();
        assert_eq!(stored.expires_at, 9_000);
        let late = t.db.session(token, 9_000, slide(20_000, 30_000)).await;
        assert_eq!(late.unwrap(), None);
        assert_eq!(t.db.session(token, 9_000, KEEP).await.unwrap(), None);
    }
}

/// The rating rules and records, through `Db`.
mod ratings;

/// What is read back: the leaderboard, player pages, records.
mod pages;

#[cfg(target_os = "linux")]
/// Many games at once through `Db`.
mod concurrency;

/// The batching loop itself, fed a queue prepared before it starts.
mod writer_loop;

/// How a game's record is stored, and read back.
mod stored;

/// The live games' logs: SQLite's journal file.
mod journal;

/// The game log under bad input and faults.
mod journal_faults;

/// Hibernated games' logs moved out of SQLite's game log and back.
mod sleeping;

/// Cluster mode's leases on PostgreSQL: taken, fenced, renewed, claimed, given up.
mod leases;

/// PostgreSQL's step log: commits paced by the sync interval.
mod step_pacing;
