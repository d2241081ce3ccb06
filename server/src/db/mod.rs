//! Persistence: the one writer that owns the SQLite database.
//!
//! `Db` is a cloneable handle to a dedicated OS thread that owns the only connection.
//! Requests arrive over a bounded channel; game writes (finished games, and the steps of
//! live games' logs) are written in batches, one transaction per batch, with durable commit
//! settings (WAL, synchronous=FULL). Game actors never touch the database: they hand log
//! steps over and await their durable commit (one group commit) before acknowledging a
//! move, and hand a `GameRecord` over once their game has ended.
//!
//! - `schema`: opening the file, its PRAGMAs and the numbered migrations.
//! - `writer`: the thread, its request enum and the batching loop.
//! - `checkpoint`: a second thread and connection that folds the WAL into the database
//!   file, off the writer's path.
//! - `reader`: threads with read-only connections of their own for the HTTP API's pages
//!   (leaderboard, players, finished games), so that reads never wait behind the writer's
//!   commits, nor the writer behind them.
//! - `account_calls`, `reads`: `Db`'s requests about accounts and sessions (to the
//!   writer), and its reads for the HTTP API's pages (to the readers).
//! - `accounts`: accounts, sessions, the leaderboard and player pages.
//! - `games`: recording a finished game exactly once, with its rating changes.
//! - `history`: a player's finished games, newest first, and a game's stored record with
//!   its rating changes (for its signed transcript), on both backends.
//! - `stored`: the stored form of a game's record (a versioned MessagePack BLOB).
//! - `journal`: the live games' logs, in an append-only file of their own, on a thread of
//!   their own: append (durable before it is answered), forget once recorded, compaction.
//!
//! Invariant: only the writer thread changes the database (the checkpointer's connection
//! only folds committed pages into the file, and the readers' connections are
//! `query_only`), and only the journal thread writes the game log; everything else goes
//! through `Db`.

mod account_calls;
mod accounts;
mod checkpoint;
mod error;
mod games;
mod hibernation;
mod history;
mod journal;
mod leaderboard;
mod pg;
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use pg::{FIRST_BACKOFF as PG_FIRST_BACKOFF, MAX_BACKOFF as PG_MAX_BACKOFF};
mod reader;
mod reads;
mod rows;
mod schema;
mod stored;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
mod wakeups;
mod writer;

pub use error::DbError;
pub use history::{Opponent, PlayerGame, StoredGame};
pub use journal::LogHealth;
pub use journal::DEFAULT_SYNC_INTERVAL as DEFAULT_GAME_LOG_SYNC_INTERVAL;
pub use leaderboard::LeaderboardCache;
pub(crate) use pg::shared_transcript_key;
pub use pg::{Renewed, LEASE, LEASE_CLAIM, LEASE_RENEW, NODE_NUMBERS};
pub use rows::{
    AccountRow, GuestCursor, HistoryRow, LeaderRow, Page, PlayerPage, PruneBatch, Pruned,
    SessionRow, Slide,
};
pub use wakeups::{DueWakeups, Sleeper};
// For SECURITY.md's pins (`security_md.rs`).
#[cfg(test)]
pub(crate) use accounts::GUEST_SYMBOLS;
#[cfg(test)]
pub(crate) use journal::MAX_PAYLOAD_WRITTEN as GAME_LOG_MAX_STEP;
#[cfg(test)]
pub(crate) use journal::REQUEST_QUEUE as GAME_LOG_QUEUE;
#[cfg(test)]
pub(crate) use reader::READ_QUEUE as DB_READ_QUEUE;
#[cfg(test)]
pub(crate) use writer::REQUEST_QUEUE as DB_REQUEST_QUEUE;

#[cfg(test)]
mod accounts_tests;
/// A test hook on the paths that must survive a crash: with the `test-hooks` feature, the
/// process aborts at the step named by the `ELEMENTALS_CRASH_AT` environment variable, or
/// the calling task panics there if the variable says `panic:` and the step.
/// The steps of a game's end, in order: `end_unlogged` (the game has ended, its end not yet
/// logged), `end_logged` (logged, `game_over` not yet sent), `record_uncommitted` (the
/// record and ratings written, their transaction not committed), `recorded` (committed,
/// `rating_update` not yet sent).
#[cfg(feature = "test-hooks")]
pub(crate) fn crash_point(step: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = CRASH_AT.get_or_init(|| std::env::var("ELEMENTALS_CRASH_AT").ok());
    let Some(at) = at.as_deref() else { return };
    if at == step {
        eprintln!("ELEMENTALS_CRASH_AT={step}: aborting");
        std::process::abort();
    }
    if at.strip_prefix("panic:") == Some(step) {
        panic!("ELEMENTALS_CRASH_AT={at}: panicking");
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) fn crash_point(_step: &str) {}

/// A test hook that holds a race open: with the `test-hooks` feature, the calling task
/// waits at the step named by the `ELEMENTALS_HOLD_AT` environment variable (`step:ms`),
/// so that a test can act inside a window that is otherwise microseconds wide. The step:
/// `game_over_published` (the game's end logged and published, the game not yet forgotten
/// by the registry nor recorded).
#[cfg(feature = "test-hooks")]
pub(crate) async fn hold_point(step: &str) {
    static HOLD_AT: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
    let at = HOLD_AT.get_or_init(|| {
        let var = std::env::var("ELEMENTALS_HOLD_AT").ok()?;
        let (step, ms) = var.split_once(':')?;
        Some((step.to_owned(), ms.parse().ok()?))
    });
    if let Some((at, ms)) = at {
        if at == step {
            tokio::time::sleep(std::time::Duration::from_millis(*ms)).await;
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) async fn hold_point(_step: &str) {}

#[cfg(test)]
mod tests;

use std::sync::Arc;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rating::RatingChange;
use tokio::sync::{mpsc, oneshot, watch};

use crate::record::{GameLog, GameRecord, LogStep};
use writer::Request;

/// A cloneable handle to the writer thread; the thread ends when the last handle drops
/// or after [`Db::shutdown`].
#[derive(Clone)]
pub struct Db {
    requests: mpsc::Sender<Request>,
    journal: mpsc::Sender<journal::Request>,
    reads: mpsc::Sender<reader::Read>,
    log_health: watch::Receiver<LogHealth>,
    /// Whether the game log's thread is in a request, and since when (PostgreSQL's).
    log_busy: Arc<journal::Busy>,
    /// Cluster mode: the leases this process holds.
    leases: Option<Arc<pg::Leases>>,
    /// SQLite: the step log is a file, and the count of frames read back from it. Its
    /// hibernated games' logs move out of it into the database (`hibernation.rs`).
    log_file: Option<Arc<std::sync::atomic::AtomicU64>>,
    /// Cluster mode: the lease renewer's queue.
    renewals: Option<mpsc::Sender<pg::Renewal>>,
}

pub type DbResult<T> = Result<T, DbError>;

/// Where `--database` points: a PostgreSQL URL (`postgres://` or `postgresql://`), or a
/// SQLite file (a path, or `sqlite://` and a path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location<'a> {
    Sqlite(&'a std::path::Path),
    Postgres(&'a str),
}

impl<'a> Location<'a> {
    pub fn of(database: &'a std::path::Path) -> Location<'a> {
        match database.to_str() {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Location::Postgres(url)
            }
            Some(url) if url.starts_with("sqlite://") => {
                Location::Sqlite(std::path::Path::new(&url["sqlite://".len()..]))
            }
            _ => Location::Sqlite(database),
        }
    }
}

impl Db {
    /// Open (creating if needed) the database at `path` (see [`Location`]), apply migrations, start the writer.
    ///
    /// The live games' log is opened beside it (`<path>-gamelog`); the games in it that
    /// have no record yet are the live ones. A log damaged before its end is refused.
    pub fn open(path: &std::path::Path) -> DbResult<Db> {
        Db::open_with(
            path,
            journal::Compaction::default(),
            journal::DEFAULT_SYNC_INTERVAL,
        )
    }

    /// The game log's sync interval where none is given: on PostgreSQL longer than on
    /// SQLite, since a commit there costs the database ~0.4 ms of CPU whatever its rows
    /// (at 16,000 players on 3 nodes, 3 ms rather than 500 µs took a fifth off
    /// PostgreSQL's CPU, at no cost in p99).
    pub fn default_sync_interval(path: &std::path::Path) -> std::time::Duration {
        match Location::of(path) {
            Location::Sqlite(_) => journal::DEFAULT_SYNC_INTERVAL,
            Location::Postgres(_) => pg::DEFAULT_SYNC_INTERVAL,
        }
    }

    /// Like [`Db::open`], with the game log's sync interval: the shortest time from the
    /// start of one `fdatasync` of the live games' log to the start of the next.
    pub fn open_with_sync_interval(
        path: &std::path::Path,
        sync_interval: std::time::Duration,
    ) -> DbResult<Db> {
        Db::open_with(path, journal::Compaction::default(), sync_interval)
    }

    /// Cluster mode: like [`Db::open_with_sync_interval`] on a PostgreSQL database, with
    /// every game written under its lease, held by node `node_id` (see `pg/lease.rs`).
    /// Loading the unfinished games (`unfinished_games`) claims them: the node's own from
    /// its last run, those whose lease has lapsed, and those with none.
    /// Its leases last `lease` after each renewal.
    pub fn open_leased(
        path: &std::path::Path,
        sync_interval: std::time::Duration,
        node_id: String,
        lease: std::time::Duration,
    ) -> DbResult<Db> {
        let Location::Postgres(url) = Location::of(path) else {
            return Err(DbError::Postgres(
                "cluster mode needs a PostgreSQL database (--database postgres://…)".into(),
            ));
        };
        let leases = Arc::new(pg::Leases::new(node_id, lease));
        Db::from_pg(
            pg::open(url, Some(leases.clone()), sync_interval)?,
            Some(leases),
        )
    }

    fn from_pg(opened: pg::Opened, leases: Option<Arc<pg::Leases>>) -> DbResult<Db> {
        Ok(Db {
            requests: opened.requests,
            journal: opened.journal,
            reads: opened.reads,
            log_health: opened.log_health,
            log_busy: opened.log_busy,
            leases,
            log_file: None,
            renewals: opened.renewals,
        })
    }

    fn open_with(
        path: &std::path::Path,
        compaction: journal::Compaction,
        sync_interval: std::time::Duration,
    ) -> DbResult<Db> {
        let path = match Location::of(path) {
            Location::Postgres(url) => {
                return Db::from_pg(pg::open(url, None, sync_interval)?, None)
            }
            Location::Sqlite(path) => path,
        };
        let conn = schema::open(path)?;
        // A game recorded, or asleep with its log moved into the database: what the file
        // holds of it is older or the same, and is not restored.
        let journal = journal::Journal::open(&journal::path_for(path), compaction, |game_id| {
            Ok(games::is_recorded(&conn, game_id)? || wakeups::has_sleeping_log(&conn, game_id)?)
        })?;
        let checkpointer = checkpoint::spawn(path)?;
        let requests = writer::spawn(writer::Sqlite {
            conn,
            checkpointer: Some(checkpointer),
        })?;
        let log_health = journal.health();
        let frames_read = journal.frames_read();
        let journal = journal::spawn(journal, sync_interval)?;
        let reads = reader::spawn(path)?;
        Ok(Db {
            requests,
            journal,
            reads,
            log_health,
            log_busy: Arc::default(),
            leases: None,
            log_file: Some(frames_read),
            renewals: None,
        })
    }

    /// SQLite: how many frames have been read back from the step-log file (at startup,
    /// and the log of each game going to sleep), for `/metrics`. `None` on PostgreSQL.
    pub fn game_log_frames_read(&self) -> Option<u64> {
        let read = self.log_file.as_ref()?;
        Some(read.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Whether the game log can be written now.
    pub fn log_health(&self) -> LogHealth {
        *self.log_health.borrow()
    }

    /// Whether one request to the game log (on PostgreSQL) has taken `limit` or longer
    /// and is still under way: the database has stalled.
    pub fn log_stalled(&self, limit: std::time::Duration) -> bool {
        self.log_busy.longer_than(limit)
    }

    /// Resolves once the game log is broken for good (a failed sync): the server must stop.
    pub async fn log_broken(&self) {
        let mut health = self.log_health.clone();
        if health.wait_for(|h| *h == LogHealth::Broken).await.is_err() {
            // The journal's thread is gone without breaking: nothing to wait for.
            std::future::pending::<()>().await;
        }
    }

    /// Record a finished game exactly once per game id; for a game that changes ratings,
    /// apply both changes in the same transaction. A repeated call for the same id changes
    /// nothing and returns the changes recorded the first time.
    pub async fn record_game(
        &self,
        record: impl Into<Arc<GameRecord>>,
    ) -> DbResult<Option<SeatPair<RatingChange>>> {
        let mut record = record.into();
        let game_id = record.game_id;
        if record.against_itself() {
            // No lobby path seats one account twice; should a log hold such a game anyway,
            // it is stored once, unrated, rather than refused (and retried at every start).
            tracing::warn!(
                %game_id,
                account = record.players.one.account_id,
                "a game of an account against itself; storing it unrated"
            );
            Arc::make_mut(&mut record).rated = false;
        }
        // Encoded here, on the caller's thread: the writer only writes.
        let stored = stored::encode(&record)?;
        let changes = self
            .call(|reply| Request::RecordGame {
                record,
                stored,
                reply,
            })
            .await;
        // Durable now: its log can go at the next compaction. Should this be lost (a
        // crash), the next open drops the log anyway, the record being there. Refused
        // for a lost lease, the game is another node's, and its actor here has ended:
        // forgotten likewise, so that this node may claim it again should that node die.
        if matches!(changes, Ok(_) | Err(DbError::LeaseLost { .. })) {
            let _ = self
                .journal
                .send(journal::Request::Forget { game_id })
                .await;
        }
        changes
    }

    /// Append steps to a live game's log; returns once they are durable (with whatever
    /// other games' steps were queued alongside, in one write and one `fdatasync`).
    pub async fn append_log(&self, game_id: GameId, steps: &[LogStep]) -> DbResult<()> {
        let rows = journal::encode(steps)?;
        call(&self.journal, |reply| journal::Request::Append {
            game_id,
            rows,
            reply,
        })
        .await
    }

    /// The logs of every game that has not been recorded and is not hibernated: the games
    /// to restore at startup. In cluster mode, those this node claims (see
    /// [`Db::open_leased`]).
    pub async fn unfinished_games(&self) -> DbResult<Vec<GameLog>> {
        let skip = self.sleepers().await?.iter().map(|s| s.game_id).collect();
        call(&self.journal, |reply| journal::Request::Load {
            skip,
            reply,
        })
        .await
    }

    /// Cluster mode: renews this node's leases; returns the games whose lease is lost (their
    /// next step is refused `LeaseLost`), or that the node, cut off from Redis for
    /// `cut_off_for` while other nodes hear it, gave them all up. Without leases, none.
    pub async fn renew_leases(
        &self,
        cut_off_for: Option<std::time::Duration>,
    ) -> DbResult<Renewed> {
        match &self.renewals {
            Some(renewals) => {
                call(renewals, |reply| pg::Renewal::Renew { cut_off_for, reply }).await
            }
            None => Ok(Renewed::default()),
        }
    }

    /// Cluster mode: claims the games whose lease has lapsed; returns their logs, to be
    /// restored as at startup. Without leases, none.
    pub async fn claim_lapsed(&self) -> DbResult<Vec<GameLog>> {
        call(&self.journal, |reply| journal::Request::Claim { reply }).await
    }

    /// Cluster mode: claims the lobby's lease if nobody holds it; returns its token (the
    /// lobby's generation), held from now on. Without leases, none.
    pub async fn claim_lobby(&self) -> DbResult<Option<i64>> {
        call(&self.journal, |reply| journal::Request::ClaimLobby {
            reply,
        })
        .await
    }

    /// Cluster mode: whether another node's lease was live when this node opened the
    /// database (the cluster was running). Without leases, false: a lone server's start
    /// always follows a time it was down.
    pub fn joined_running_cluster(&self) -> bool {
        self.leases.as_ref().is_some_and(|leases| {
            leases
                .others_up_at_start
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// Cluster mode: this node's number in the cluster, taken with its row in
    /// `node_leases` as the database opened. Without leases, none.
    pub fn node_number(&self) -> Option<u16> {
        self.leases.as_ref().map(|leases| leases.number())
    }

    /// Resolves once this node's number is no longer its own (its row was forgotten while
    /// the node was away, and another node may have taken the number): the server must
    /// stop. Without leases, never.
    pub async fn node_number_lost(&self) {
        match &self.leases {
            Some(leases) => leases.number_lost().await,
            None => std::future::pending().await,
        }
    }

    /// Cluster mode: the database's clock now, in Unix milliseconds (read as the node
    /// opened the database, moved on by this process's monotonic clock since); `None`
    /// outside cluster mode.
    pub fn database_clock_ms(&self) -> Option<u64> {
        let (at, ms) = *self.leases.as_ref()?.database_clock.get()?;
        Some(ms.saturating_add(at.elapsed().as_millis() as u64))
    }

    /// Cluster mode: changes each time the step log gives every lease up (a commit whose
    /// outcome is unknown); `None` outside cluster mode.
    pub fn watch_leases_given_up(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.leases.as_ref().map(|leases| leases.watch_given_up())
    }

    /// Cluster mode: the leases lapsed unrenewed; every game this process holds is lost
    /// to it (its next step refused, and not claimed back here before its actor stops),
    /// and its next renewal starts a new epoch (`Leases::lapse_all`). Returns how many.
    /// Without leases, none.
    pub fn lose_all_leases(&self) -> usize {
        self.leases.as_ref().map_or(0, |leases| leases.lapse_all())
    }

    /// Cluster mode: game `game_id`'s actor has stopped here, its lease lost: this process
    /// forgets it (and may claim it again later).
    pub async fn forget_moved(&self, game_id: GameId) {
        let _ = self
            .journal
            .send(journal::Request::Forget { game_id })
            .await;
    }

    /// Wait until everything sent before this call is committed.
    pub async fn flush(&self) -> DbResult<()> {
        call(&self.journal, |reply| journal::Request::Flush { reply }).await?;
        self.call(|reply| Request::Flush { reply }).await
    }

    /// Wait until everything sent before this call is committed, then stop the journal
    /// and the writer. Later calls on any handle return [`DbError::Closed`].
    pub async fn shutdown(&self) -> DbResult<()> {
        let journal = call(&self.journal, |reply| journal::Request::Shutdown { reply }).await;
        if let Some(renewals) = &self.renewals {
            // Cluster mode: its games' leases lapse now, for other nodes to claim.
            let _ = call(renewals, pg::Renewal::GiveUp).await;
        }
        let writer = self.call(|reply| Request::Shutdown { reply }).await;
        journal.and(writer)
    }

    /// Holds the writer (it handles nothing) until the returned sender is dropped.
    #[cfg(test)]
    pub(crate) async fn hold_writer(&self) -> std::sync::mpsc::Sender<()> {
        let (release, until) = std::sync::mpsc::channel();
        let (held, taken) = oneshot::channel();
        self.requests
            .send(Request::Hold { held, until })
            .await
            .expect("the writer runs");
        // Taken off the queue: from here `queued_requests` counts only what follows it.
        taken.await.expect("the writer holds");
        release
    }

    /// Requests waiting in the writer's queue.
    #[cfg(test)]
    pub(crate) fn queued_requests(&self) -> usize {
        self.requests.max_capacity() - self.requests.capacity()
    }

    async fn call<T>(
        &self,
        request: impl FnOnce(oneshot::Sender<DbResult<T>>) -> Request,
    ) -> DbResult<T> {
        call(&self.requests, request).await
    }
}

/// Send one request to a thread and wait for its answer. The thread gone (stopped, or its
/// queue dropped with this request in it) is `Closed`.
async fn call<R, T>(
    queue: &mpsc::Sender<R>,
    request: impl FnOnce(oneshot::Sender<DbResult<T>>) -> R,
) -> DbResult<T> {
    let (reply, answer) = oneshot::channel();
    queue
        .send(request(reply))
        .await
        .map_err(|_| DbError::Closed)?;
    answer.await.map_err(|_| DbError::Closed)?
}
