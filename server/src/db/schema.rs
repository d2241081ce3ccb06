//! Opening the SQLite database file: connection settings and the schema's migrations.
//!
//! Migrations are refinery's (`migrations/sqlite/`): each runs in a transaction with its
//! entry in `refinery_schema_history`, so a crash mid-migration leaves the previous
//! version intact.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{DbError, DbResult};

/// How long a statement waits on a lock held by another connection (an operator's
/// `sqlite3` shell, a backup) before failing, rather than failing at once.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The migrations (`migrations/sqlite/V<n>__<name>.sql`), embedded at build time.
mod embedded {
    refinery::embed_migrations!("src/db/migrations/sqlite");
}

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

/// Runs the migrations not yet run, each in a transaction with its entry in refinery's
/// table (`refinery_schema_history`). A database with a migration this server does not
/// know (a newer server's) is refused.
fn migrate(conn: &mut Connection) -> DbResult<()> {
    let report = embedded::migrations::runner()
        .set_abort_divergent(true)
        .set_abort_missing(true)
        .run(conn)
        .map_err(|e| DbError::Sqlite(format!("migrating the database: {e}")))?;
    for migration in report.applied_migrations() {
        tracing::info!(
            version = migration.version(),
            name = migration.name(),
            "database migrated"
        );
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

/// The schema version a fully migrated database has.
#[cfg(test)]
pub(super) fn current_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}
