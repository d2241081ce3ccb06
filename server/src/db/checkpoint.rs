//! The checkpointer: a thread with a connection of its own that copies committed pages
//! from the WAL into the database file, so that the writer does not.
//!
//! SQLite checkpoints on the committing connection by default (every 1,000 pages), which
//! put about a quarter of the writer's time, page copies and the database file's fsync,
//! in front of the next batch of requests. Here the writer only nudges this thread after
//! each commit; it checkpoints (`PASSIVE`: it never blocks the writer) at most every
//! `INTERVAL`, and once more when the writer stops. The writer keeps a far larger
//! automatic checkpoint as a backstop, which bounds the WAL should this thread fall
//! behind a writer that never pauses.
//!
//! It only ever copies what is committed: it writes no rows, so the writer is still the
//! only connection that changes the database.

use std::path::Path;
use std::sync::mpsc::{self, TryRecvError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{schema, DbError, DbResult};

/// At most one checkpoint per interval while commits keep coming.
const INTERVAL: Duration = Duration::from_millis(200);

/// Nudges from the writer: "something was committed". One pending nudge is enough.
pub(super) type Nudge = mpsc::SyncSender<()>;

/// Starts the thread; it stops when the returned sender (the writer's) is dropped.
pub(super) fn spawn(path: &Path) -> DbResult<Nudge> {
    let conn = schema::open_checkpointer(path)?;
    let (nudge, nudges) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("db-checkpoint".into())
        .spawn(move || run(conn, nudges))
        .map_err(|e| DbError::Sqlite(format!("cannot start the checkpoint thread: {e}")))?;
    Ok(nudge)
}

fn run(conn: Connection, nudges: mpsc::Receiver<()>) {
    paced(&nudges, INTERVAL, || checkpoint(&conn));
}

/// Calls `checkpoint` after a nudge, at most once per `interval` however many nudges
/// come, and once more when the nudges end.
/// A nudge that arrives during the wait does not end it: at full load the writer commits
/// every few milliseconds, and ending the wait would checkpoint after every other commit.
fn paced(nudges: &mpsc::Receiver<()>, interval: Duration, mut checkpoint: impl FnMut()) {
    let mut last = Instant::now() - interval;
    'nudged: while let Ok(()) = nudges.recv() {
        // Let more commits gather behind this one, until the interval is up. Asleep, not
        // waiting on the nudges: each would wake the thread for nothing.
        std::thread::sleep((last + interval).saturating_duration_since(Instant::now()));
        // The nudges of the commits meanwhile: this checkpoint covers them.
        loop {
            match nudges.try_recv() {
                Ok(()) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => break 'nudged,
            }
        }
        checkpoint();
        last = Instant::now();
    }
    // The writer has stopped: leave the WAL folded into the database file.
    checkpoint();
}

fn checkpoint(conn: &Connection) {
    let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    if let Err(error) = done {
        tracing::warn!(%error, "checkpoint failed; the writer's own checkpoints take over");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_pages_reach_the_database_file_without_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("elementals.db");
        let writer = schema::open(&path).unwrap();
        let size = || std::fs::metadata(&path).unwrap().len();
        let before = size();
        writer
            .execute_batch(
                "BEGIN;
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                 INSERT INTO accounts (name, password_hash, created_at) SELECT 'player' || i, 'h', 0 FROM n;
                 COMMIT;",
            )
            .unwrap();
        // Below the writer's own checkpoint threshold, the rows are only in the WAL.
        assert_eq!(size(), before);

        let (nudge, nudges) = mpsc::sync_channel(1);
        nudge.send(()).unwrap();
        drop(nudge);
        run(schema::open_checkpointer(&path).unwrap(), nudges);
        assert!(size() > before, "{before} -> {}", size());
        let count: i64 = writer
            .query_row("SELECT count(*) FROM accounts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 2000);
    }

    /// However many commits nudge it, the next checkpoint waits out the interval from the
    /// last one; the first is at once, and one more comes when the writer stops.
    #[test]
    fn checkpoints_come_at_most_once_per_interval_however_often_nudged() {
        const INTERVAL: Duration = Duration::from_millis(300);
        let (nudge, nudges) = mpsc::sync_channel(1);
        let (done, checkpoints) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            paced(&nudges, INTERVAL, || done.send(Instant::now()).unwrap());
        });
        nudge.send(()).unwrap();
        let first = checkpoints.recv().unwrap();
        // Commits keep coming: the channel holds one nudge, so a send waits while the
        // checkpointer sleeps out the interval, and goes in once it has taken the nudges.
        let mut sent = 0;
        let second = loop {
            nudge.send(()).unwrap();
            sent += 1;
            if let Ok(at) = checkpoints.try_recv() {
                break at;
            }
            assert!(sent < 1_000_000, "no second checkpoint");
            std::thread::yield_now();
        };
        assert!(sent > 1, "the second checkpoint came at the first nudge");
        assert!(
            second - first >= INTERVAL,
            "a checkpoint {:?} after the last, under the interval",
            second - first
        );
        drop(nudge);
        thread.join().unwrap();
        let last = checkpoints
            .try_recv()
            .expect("a checkpoint when the writer stops");
        assert!(last >= second);
        assert!(
            checkpoints.try_recv().is_err(),
            "more checkpoints than asked"
        );
    }
}
