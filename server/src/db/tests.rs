//! The persistence writer, driven through `Db` against a temporary database file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use elementals_protocol::messages::{EndReason, GameId, GameResult, SeatPair};
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use tempfile::TempDir;

use super::*;
use crate::record::RecordPlayer;

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

#[tokio::test]
async fn a_session_is_valid_until_it_expires_or_is_revoked() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let token = [7u8; 32];
        t.db.insert_session(token, ann.id, 5_000, 10).await.unwrap();

        let session = t.db.session(token, 4_999).await.unwrap().unwrap();
        assert_eq!(session.account, ann);
        assert_eq!(session.expires_at, 5_000);
        assert_eq!(t.db.session(token, 5_000).await.unwrap(), None);
        assert_eq!(t.db.session([8u8; 32], 0).await.unwrap(), None);

        t.db.revoke_session(token).await.unwrap();
        assert_eq!(t.db.session(token, 0).await.unwrap(), None);
    }
}

#[tokio::test]
async fn new_players_winner_gains_a_half_and_loser_stays_on_the_floor() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        // The record's ratings are what was shown at the start; the writer rates from storage.
        let mut record = won(&ann, &bob, Seat::One);
        record.players.one.rating = 9.0;

        let changes = t.db.record_game(record).await.unwrap().unwrap();
        let half = RatingChange {
            before: 1.0,
            after: 1.5,
        };
        let floor = RatingChange {
            before: 1.0,
            after: 1.0,
        };
        assert_eq!(changes, SeatPair::new(half, floor));

        let ann = fetch(&t.db, &ann).await;
        let bob = fetch(&t.db, &bob).await;
        assert_eq!((ann.rating, ann.wins, ann.losses), (1.5, 1, 0));
        assert_eq!((bob.rating, bob.wins, bob.losses), (1.0, 0, 1));
    }
}

#[tokio::test]
async fn equal_players_at_1_3_go_to_1_8_and_the_floor() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    set_rating(&t, ann.id, 1.3).await;
    set_rating(&t, bob.id, 1.3).await;

    let changes =
        t.db.record_game(won(&ann, &bob, Seat::Two))
            .await
            .unwrap()
            .unwrap();
    let (winner, loser) = rate_win(1.3, 1.3);
    assert_eq!(changes, SeatPair::new(loser, winner));
    assert!((changes.two.after - 1.8).abs() < 1e-12, "{changes:?}");
    assert_eq!(changes.one.after, 1.0);
    assert_eq!(fetch(&t.db, &bob).await.rating, changes.two.after);
    assert_eq!(fetch(&t.db, &ann).await.rating, 1.0);
}

#[tokio::test]
async fn a_game_of_an_account_against_itself_is_stored_once_unrated() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let record = won(&ann, &ann, Seat::One);
        let id = record.game_id.to_string();
        // Stored, not refused: a refusal left its log to be retried at every start.
        assert_eq!(t.db.record_game(record.clone()).await.unwrap(), None);
        assert_eq!(t.db.record_game(record).await.unwrap(), None);
        let stored = t.db.game_record(id).await.unwrap().unwrap();
        assert_eq!(stored["rated"], false, "{stored}");
        let ann = fetch(&t.db, &ann).await;
        assert_eq!(
            (ann.rating, ann.wins, ann.losses, ann.draws),
            (1.0, 0, 0, 0)
        );
        assert_eq!(count(&t.path, "games"), 1);
        assert_eq!(count(&t.path, "rating_history"), 0);
        assert_eq!(count(&t.path, "games WHERE NOT rated"), 1);
    }
}

#[tokio::test]
async fn a_game_recorded_twice_counts_once() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let record = won(&ann, &bob, Seat::One);

        let first = t.db.record_game(record.clone()).await.unwrap();
        let second = t.db.record_game(record).await.unwrap();
        assert!(first.is_some());
        assert_eq!(first, second);
        let ann = fetch(&t.db, &ann).await;
        assert_eq!((ann.rating, ann.wins), (1.5, 1));
        assert_eq!(count(&t.path, "games"), 1);
        assert_eq!(count(&t.path, "rating_history"), 2);
    }
}

#[test]
fn recording_a_game_writes_no_index_that_nothing_reads() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let indexes = |table: &str| -> Vec<String> {
        conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 ORDER BY name",
        )
        .unwrap()
        .query_map([table], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    // The games' primary key's own index, and one per seat that a player's list of games
    // reads (`history.rs`). The rating history is a WITHOUT ROWID table kept in its key's
    // order, (account, time, game): no index beside it.
    assert_eq!(
        indexes("games"),
        ["games_by_one", "games_by_two", "sqlite_autoindex_games_1"]
    );
    assert_eq!(indexes("rating_history"), Vec::<String>::new());
    assert!(conn
        .prepare("SELECT rowid FROM rating_history")
        .is_err_and(|e| e.to_string().contains("no such column")));
}

#[test]
fn a_recorded_games_changes_and_a_players_history_are_read_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let plan = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", games::RECORDED_CHANGES))
        .unwrap()
        .query_map(["id"], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    // Three look-ups by key, no scan: the lookup needs no index by game alone (dropped
    // by migration 3).
    assert_eq!(plan.len(), 3, "{plan:?}");
    for (step, key) in plan.iter().zip([
        "(id=?)",
        "(account_id=? AND at=? AND game_id=?)",
        "(account_id=? AND at=? AND game_id=?)",
    ]) {
        assert!(
            step.starts_with("SEARCH") && step.ends_with(key),
            "{plan:?}"
        );
    }
    // A player's page reads their part of the history's key backwards: no sort.
    let plan = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", accounts::PLAYER_HISTORY))
        .unwrap()
        .query_map(rusqlite::params![1, 200, 0], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(
        plan,
        ["SEARCH rating_history USING PRIMARY KEY (account_id=?)"]
    );
}

#[tokio::test]
async fn unrated_guest_drawn_and_aborted_games_change_no_rating() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let guest = t.db.create_guest().await.unwrap();
        let games = [
            game(&ann, &bob, false, Some(Seat::One), EndReason::Edge),
            game(&ann, &guest, true, Some(Seat::One), EndReason::Resignation),
            game(&ann, &bob, true, None, EndReason::DrawAgreed),
            game(&ann, &bob, true, None, EndReason::Aborted),
            game(&ann, &bob, true, None, EndReason::ServerAborted),
            game(&ann, &bob, true, None, EndReason::MaxRounds),
        ];
        for record in games {
            let id = record.game_id.to_string();
            assert_eq!(t.db.record_game(record).await.unwrap(), None);
            assert!(t.db.game_record(id).await.unwrap().is_some());
        }
        for account in [&ann, &bob] {
            let stored = fetch(&t.db, account).await;
            // Only the agreed draw is counted, as a draw.
            assert_eq!(
                (stored.rating, stored.wins, stored.losses, stored.draws),
                (1.0, 0, 0, 1)
            );
        }
        let guest = fetch(&t.db, &guest).await;
        assert_eq!((guest.rating, guest.losses, guest.draws), (1.0, 0, 0));
        assert_eq!(count(&t.path, "rating_history"), 0);
    }
}

#[tokio::test]
async fn data_survives_shutdown_and_reopening() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    let record = won(&ann, &bob, Seat::One);
    let id = record.game_id.to_string();
    let changes = t.db.record_game(record.clone()).await.unwrap();
    t.db.shutdown().await.unwrap();

    let closed = t.db.account_by_id(ann.id).await;
    assert!(matches!(closed, Err(DbError::Closed)), "{closed:?}");
    assert!(matches!(t.db.shutdown().await, Err(DbError::Closed)));

    for _ in 0..2 {
        let db = Db::open(&t.path).unwrap();
        assert_eq!(fetch(&db, &ann).await.rating, 1.5);
        assert!(db.game_record(id.clone()).await.unwrap().is_some());
        // Already recorded before the restart: still exactly once.
        assert_eq!(db.record_game(record.clone()).await.unwrap(), changes);
        db.shutdown().await.unwrap();
    }
    let version: i64 = side_connection(&t.path)
        .query_row(
            "SELECT MAX(version) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, schema::current_version());
}

#[tokio::test]
async fn the_leaderboard_ranks_registered_players_by_rating_then_name() {
    for t in open_both() {
        register(&t.db, "ann").await;
        let bob = register(&t.db, "Bob").await;
        register(&t.db, "cat").await;
        let guest = t.db.create_guest().await.unwrap();
        set_rating(&t, bob.id, 2.0).await;
        set_rating(&t, guest.id, 9.0).await;

        let board =
            t.db.leaderboard(Page {
                limit: 10,
                offset: 0,
            })
            .await
            .unwrap();
        let names: Vec<&str> = board.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names, ["Bob", "ann", "cat"]);
        assert_eq!(board[0].rating, 2.0);
        let page = |limit, offset| Page { limit, offset };
        let names = |rows: Vec<LeaderRow>| rows.into_iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(
            names(t.db.leaderboard(page(2, 0)).await.unwrap()),
            ["Bob", "ann"]
        );
        assert_eq!(names(t.db.leaderboard(page(2, 2)).await.unwrap()), ["cat"]);
        assert!(t.db.leaderboard(page(2, 3)).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_player_page_lists_rating_history_newest_first() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let mut first = won(&ann, &bob, Seat::One);
        first.ended_at = 10_000;
        let mut second = won(&ann, &bob, Seat::Two);
        second.ended_at = 20_000;
        let first_id = first.game_id.to_string();
        let second_id = second.game_id.to_string();
        t.db.record_game(first).await.unwrap();
        t.db.record_game(second).await.unwrap();

        let page =
            t.db.player_page("ANN".into(), FULL_HISTORY)
                .await
                .unwrap()
                .unwrap();
        assert_eq!(page.name, "Ann");
        assert_eq!((page.wins, page.losses, page.draws), (1, 1, 0));
        let games: Vec<&str> = page.history.iter().map(|h| h.game_id.as_str()).collect();
        assert_eq!(games, [second_id.as_str(), first_id.as_str()]);
        assert_eq!(page.history[0].at, 20_000);
        assert_eq!(page.history[0].before, page.history[1].after);
        assert_eq!(page.rating, page.history[0].after);
        assert_eq!(
            t.db.player_page("nobody".into(), FULL_HISTORY)
                .await
                .unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn a_game_record_reads_back_as_the_json_it_was() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let record = won(&ann, &bob, Seat::Two);
        let id = record.game_id.to_string();
        t.db.record_game(record.clone()).await.unwrap();

        let expected = serde_json::to_value(&record).unwrap();
        assert_eq!(
            t.db.game_record(id.clone()).await.unwrap(),
            Some(expected.clone())
        );
        assert_eq!(
            t.db.game_record(id.to_uppercase()).await.unwrap(),
            Some(expected)
        );
        let unknown = GameId(uuid::Uuid::new_v4()).to_string();
        assert_eq!(t.db.game_record(unknown).await.unwrap(), None);
        assert_eq!(t.db.game_record("not-a-game".into()).await.unwrap(), None);
    }
}

#[cfg(target_os = "linux")]
/// Many games at once through `Db`.
mod concurrency;

/// The batching loop itself, fed a queue prepared before it starts.
mod writer_loop;

/// How a game's record is stored, and read back from what earlier servers stored.
mod stored;

/// The live games' logs (the journal, and the table earlier versions kept them in).
mod journal;

/// The game log under bad input and faults.
mod journal_faults;

#[cfg(test)]
mod leases;
