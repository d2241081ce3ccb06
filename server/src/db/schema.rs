//! Opening the database file: connection settings and the numbered schema migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version`: migration `i` (counting from 1)
//! has run exactly when `user_version >= i`. Each migration and its version bump commit
//! together, so a crash mid-migration leaves the previous version intact.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{DbError, DbResult};

/// How long a statement waits on a lock held by another connection (an operator's
/// `sqlite3` shell, a backup) before failing, rather than failing at once.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The migrations, in order. Append only: never edit one that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: accounts, sessions, games and rating history.
    r#"
    CREATE TABLE accounts (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL UNIQUE COLLATE NOCASE,
        password_hash TEXT NULL,
        guest         INTEGER NOT NULL DEFAULT 0,
        rating        REAL NOT NULL DEFAULT 1.0,
        wins          INTEGER NOT NULL DEFAULT 0,
        losses        INTEGER NOT NULL DEFAULT 0,
        draws         INTEGER NOT NULL DEFAULT 0,
        created_at    INTEGER NOT NULL
    );
    -- The leaderboard reads registered accounts best first, ties by name.
    CREATE INDEX accounts_leaderboard ON accounts (guest, rating DESC, name);

    CREATE TABLE sessions (
        token_hash BLOB PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked    INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_account ON sessions (account_id);

    CREATE TABLE games (
        id         TEXT PRIMARY KEY,
        rated      INTEGER NOT NULL,
        one_id     INTEGER NOT NULL REFERENCES accounts (id),
        two_id     INTEGER NOT NULL REFERENCES accounts (id),
        winner     INTEGER NULL CHECK (winner IN (1, 2)),
        reason     TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at   INTEGER NOT NULL,
        rounds     INTEGER NOT NULL,
        record     TEXT NOT NULL
    );
    CREATE INDEX games_by_one ON games (one_id, ended_at);
    CREATE INDEX games_by_two ON games (two_id, ended_at);

    CREATE TABLE rating_history (
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        game_id    TEXT NOT NULL REFERENCES games (id),
        "before"   REAL NOT NULL,
        "after"    REAL NOT NULL,
        at         INTEGER NOT NULL,
        PRIMARY KEY (account_id, game_id)
    );
    -- A player's page lists their history newest first.
    CREATE INDEX rating_history_by_time ON rating_history (account_id, at DESC);
    -- A repeated record_game looks up the changes of one game.
    CREATE INDEX rating_history_by_game ON rating_history (game_id);
    "#,
    // 2: the durable log of games in progress (see `gamelog`): one row per step, appended
    // before the step is acknowledged, deleted with the transaction that records the game.
    // A rowid table: rows append at its end, so a batch of steps from many games writes
    // a few pages, not one page per game as a table keyed by game would (about three
    // times the throughput in `benches/gamelog.rs`); the unique index finds a game's steps.
    r#"
    CREATE TABLE game_log (
        game_id TEXT NOT NULL,
        step    INTEGER NOT NULL,
        entry   TEXT NOT NULL
    );
    CREATE UNIQUE INDEX game_log_steps ON game_log (game_id, step);
    "#,
    // 3: `rating_history_by_game` dropped. Its one reader, the look-up of a game's changes
    // when the game is recorded again, knows both accounts, so the primary key
    // (account_id, game_id) serves it; every rated game wrote two entries into it, at
    // random places (game ids are random).
    "DROP INDEX IF EXISTS rating_history_by_game;",
    // 4: `games_by_one` and `games_by_two` dropped. No query reads them (a player's games
    // are not listed anywhere yet), and each recorded game wrote an entry into each, at
    // its players' places: with thousands of accounts, two more pages of every batch to
    // write twice (WAL, then checkpoint). The persistence bench over 20,000 accounts
    // (BENCHMARKS.md §5) measured the cost. Listing a player's games will want an index
    // of its own, chosen with that query and that bench in hand.
    "DROP INDEX IF EXISTS games_by_one; DROP INDEX IF EXISTS games_by_two;",
    // 5: `rating_history` kept in the order it is read, (account, time, game), as a
    // WITHOUT ROWID table. Before, every rated game wrote each of its two changes three
    // times: a row at the end of the table, an entry in the primary key's index
    // (account, game) and one in `rating_history_by_time`; the last two at the
    // account's place, a page of its own with thousands of accounts. Now a change is one
    // entry at the account's place. The player page reads it newest first by key; the
    // look-up of a game's changes knows the account, the time (the game's end) and the
    // game. A game is rated only when its record is first stored, so (account, game) stays
    // unique without an index of its own. The copy goes in key order: appended, so its
    // pages fill, and twice as fast (2,000,000 changes in 7 s here).
    r#"
    CREATE TABLE rating_history_by_account (
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        at         INTEGER NOT NULL,
        game_id    TEXT NOT NULL REFERENCES games (id),
        "before"   REAL NOT NULL,
        "after"    REAL NOT NULL,
        PRIMARY KEY (account_id, at, game_id)
    ) WITHOUT ROWID;
    INSERT INTO rating_history_by_account (account_id, at, game_id, "before", "after")
        SELECT account_id, at, game_id, "before", "after" FROM rating_history
        ORDER BY account_id, at, game_id;
    DROP TABLE rating_history;
    ALTER TABLE rating_history_by_account RENAME TO rating_history;
    "#,
    // 6: pruning (`accounts::prune_sessions`, `accounts::prune_guests`). A revoked session
    // is deleted rather than flagged, so the flagged ones go; expired sessions are found
    // by their expiry. `played` marks a guest with a game on record (set as the game is
    // recorded; here from the records already stored): such a guest is kept, since its
    // games name it. Guests that may be pruned are found, oldest first, in an index of
    // their own.
    r#"
    DELETE FROM sessions WHERE revoked = 1;
    CREATE INDEX sessions_by_expiry ON sessions (expires_at);
    ALTER TABLE accounts ADD COLUMN played INTEGER NOT NULL DEFAULT 0;
    UPDATE accounts SET played = 1
        WHERE guest = 1 AND (id IN (SELECT one_id FROM games) OR id IN (SELECT two_id FROM games));
    CREATE INDEX accounts_idle_guests ON accounts (created_at) WHERE guest = 1 AND played = 0;
    "#,
];

/// Open (creating if needed) the file, set the connection up and bring the schema up to date.
pub(super) fn open(path: &Path) -> DbResult<Connection> {
    let mut conn = Connection::open(path)?;
    configure(&conn)?;
    migrate(&mut conn)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> DbResult<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers (a backup, an operator) do not block the writer, and a commit is one
    // append to the log rather than a rewrite of pages.
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(DbError::Sqlite(format!(
            "could not enable WAL (journal_mode is {mode})"
        )));
    }
    // FULL: a commit is on disk when it returns, so a reported rating change survives a
    // power cut. Batching keeps this affordable: one fsync per batch, not per game.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // A batch of game records touches thousands of pages (records, ratings, history, their
    // indexes). SQLite's default 2 MiB cache spilled them mid-transaction; 8 MiB holds a
    // full batch, and savepoints journal in memory rather than a file. (64 MiB was no
    // faster in the persistence bench, and its filling showed in the server's memory.)
    conn.pragma_update(None, "cache_size", -8_192)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_PAGES)?;
    Ok(())
}

/// The checkpointer's connection (see `checkpoint`): it copies WAL pages and writes no
/// rows. The writer's connection checkpoints by itself only when the WAL reaches
/// `WRITER_CHECKPOINT_PAGES`, a backstop.
pub(super) fn open_checkpointer(path: &Path) -> DbResult<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// A reader's connection (see `reader`): opened read-only, and `query_only` besides, so
/// that no statement on it can write. The writer has created the file and its WAL.
pub(super) fn open_reader(path: &Path) -> DbResult<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// 16,384 pages of 4 KiB: a 64 MiB WAL.
const WRITER_CHECKPOINT_PAGES: i64 = 16_384;

fn migrate(conn: &mut Connection) -> DbResult<()> {
    migrate_to(conn, MIGRATIONS.len())
}

/// Run the migrations not yet run, up to and including number `target`.
fn migrate_to(conn: &mut Connection, target: usize) -> DbResult<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let version = usize::try_from(version).unwrap_or(usize::MAX);
    if version > MIGRATIONS.len() {
        return Err(DbError::Sqlite(format!(
            "database schema version {version} is newer than this server knows ({})",
            MIGRATIONS.len()
        )));
    }
    for (done, sql) in MIGRATIONS.iter().enumerate().take(target).skip(version) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (done + 1) as i64)?;
        tx.commit()?;
        tracing::info!(version = done + 1, "database migrated");
    }
    Ok(())
}

/// A time (Unix milliseconds) as stored: SQLite integers are `i64`, and no real time is
/// past `i64::MAX` ms, so saturating loses nothing.
pub(super) fn ms_to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A stored time back as Unix milliseconds (the writer never stores a negative one).
pub(super) fn ms_from_sql(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<u64> {
    row.get::<_, i64>(column).map(|ms| ms.max(0) as u64)
}

/// A database as a server that knew only the first `version` migrations left it: to
/// write rows in an earlier schema and test the migrations after it.
#[cfg(test)]
pub(super) fn open_at(path: &Path, version: usize) -> DbResult<Connection> {
    let mut conn = Connection::open(path)?;
    configure(&conn)?;
    migrate_to(&mut conn, version)?;
    Ok(conn)
}

/// The schema version a fully migrated database has.
#[cfg(test)]
pub(super) fn current_version() -> usize {
    MIGRATIONS.len()
}
