//! The PostgreSQL backend (`--database postgres://USER@HOST:PORT/DB`): the same three
//! request queues as SQLite's (the writer's, the step log's, the readers'), each served by
//! OS threads that own a connection of their own, through the blocking `postgres` client.
//!
//! - The writer runs the same group-commit loop (`writer::run_with`): one transaction per
//!   batch, each request in a savepoint.
//! - Several server processes may share the database. A finished game is inserted with
//!   `ON CONFLICT DO NOTHING` (the second writer waits on the first's key, then inserts
//!   nothing: recorded exactly once); its ratings are updated under row locks taken at the
//!   start of the batch on every account the batch rates, in id order, so that two
//!   writers' batches never wait on each other in a cycle; counters are updated in place
//!   (`wins = wins + 1`), never read and written back.
//! - The live games' steps are rows of `game_log`, written by a thread of their own: one
//!   transaction per batch of every game's queued steps, each step answered once its
//!   batch has committed. Steps go in order: the thread checks each game's next step in
//!   memory, and the key (game_id, step) refuses a step twice whatever process sends it.
//!   A game's rows are deleted in the transaction that records it.
//! - Failures: each thread's connection is made again when it is lost (`conn.rs`), and
//!   requests fail `Unavailable` until it is. A batch of steps (one statement, its own
//!   transaction: `step_write.rs`) that the database answers with an `ERROR` is refused
//!   (the games stall and retry, `LogHealth::Failing`); one whose outcome is unknown (the
//!   connection lost while it was out) breaks the log for good, as a failed `fdatasync`
//!   does the file's: the thread's next step for each game lives in memory and would be
//!   wrong one way or the other, so the server stops, and the restart reads what was
//!   committed. A writer's batch whose commit answer is lost is answered
//!   as failed and not retried: a finished game it recorded has no log left, so no restart
//!   records it again, and a record written twice inserts nothing and rates nobody.
//! - The readers' connections are read-only (`default_transaction_read_only`).
//! - Cluster mode: each live game has a lease (`lease.rs`), taken with its first step,
//!   claimed by the step log's thread, renewed with its node's row on a thread of its own
//!   (`renewer.rs`); every
//!   step-log batch and every record checks, in its transaction, that this process still
//!   holds each game's lease.

use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::{Client, GenericClient, NoTls, Statement};
use tokio::sync::{mpsc, watch};

use self::conn::Conn;
#[cfg(test)] // For SECURITY.md's pins (`security_md.rs`).
pub(crate) use self::conn::{FIRST_BACKOFF, MAX_BACKOFF};
use self::readers::run_reader;
use self::step_log::StepLog;
use self::store::PgStore;
use super::journal::{self, LogHealth};
use super::reader::Read;
use super::writer::{self, Request};
use super::{DbError, DbResult};

mod accounts;
mod claim;
mod conn;
mod lease;
#[cfg(test)]
mod plan_tests;
mod readers;
mod record_one;
mod records;
mod renewer;
mod step_log;
mod step_write;
mod store;
mod transcript_key;
mod wakeups;

mod embedded {
    refinery::embed_migrations!("src/db/migrations/postgres");
}

pub(crate) use lease::Leases;
#[cfg(test)]
pub(crate) use lease::ORPHAN_SCAN_EVERY;
pub use lease::{Renewed, CLAIM as LEASE_CLAIM, LEASE, NODE_NUMBERS, RENEW as LEASE_RENEW};
pub(crate) use renewer::Renewal;
pub(crate) use transcript_key::shared_transcript_key;

/// Reader threads, as for SQLite.
const READERS: usize = 2;

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        DbError::Postgres(e.to_string())
    }
}

/// Prepared statements, by their SQL: prepared once per connection, each use is then one
/// round trip rather than two.
#[derive(Default)]
struct Cache(HashMap<&'static str, Statement>);

impl Cache {
    fn get(&mut self, c: &mut impl GenericClient, sql: &'static str) -> DbResult<Statement> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = c.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// How long a connection may be silent before TCP asks whether the peer is there
/// (PostgreSQL's libpq default is the kernel's two hours).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent bytes may stay unacknowledged before the connection is dropped: a
/// request in flight to a host that vanished fails in this time, not in TCP's ~15 minutes
/// of retransmissions.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Every statement here reads or writes a few rows by key, and none gains from JIT; but a
/// plan made with no statistics (a new table, or autovacuum off) can be estimated
/// past `jit_above_cost`, and is then compiled at every run: a claim's search for lapsed
/// leases took 3.4 ms at 25,000 leases, 0.09 ms without (psql, its generic plan).
const NO_JIT: &str = "-c jit=off";

fn connect(url: &str) -> DbResult<Client> {
    config(url)?
        .connect(NoTls)
        .map_err(|e| DbError::Postgres(format!("cannot connect to {}: {e}", redact(url))))
}

/// The connection settings of `url`, with TCP keepalives and a user timeout, so that a
/// peer gone without a word (a host down, a network cut) is noticed in under a minute,
/// idle or in the middle of a request; the connection is then lost and made again
/// (`conn.rs`); and without JIT (`NO_JIT`). The URL's own `keepalives_*`,
/// `tcp_user_timeout` or `options` win.
fn config(url: &str) -> DbResult<postgres::Config> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| DbError::Postgres(format!("bad database URL {}: {e}", redact(url))))?;
    let given = |name: &str| url.contains(&format!("{name}="));
    if !given("keepalives_idle") {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if !given("keepalives_interval") {
        config.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if !given("keepalives_retries") {
        config.keepalives_retries(KEEPALIVE_RETRIES);
    }
    if !given("tcp_user_timeout") {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    if !given("options") {
        config.options(NO_JIT);
    }
    Ok(config)
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// What `Db` holds for a PostgreSQL database.
pub(super) struct Opened {
    pub requests: mpsc::Sender<Request>,
    pub journal: mpsc::Sender<journal::Request>,
    pub reads: mpsc::Sender<Read>,
    pub log_health: watch::Receiver<LogHealth>,
    /// Whether the step log's thread is in a request, and since when.
    pub log_busy: Arc<journal::Busy>,
    /// Cluster mode: the lease renewer's queue.
    pub renewals: Option<mpsc::Sender<Renewal>>,
}

/// The step log's sync interval by default (`Db::default_sync_interval`).
pub const DEFAULT_SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(3);

/// The advisory lock that migrations take (any constant; this is "elem" "migr" in ASCII).
const MIGRATION_LOCK: i64 = 0x656c_656d_6d69_6772;

/// Connects, migrates, and starts the writer, the step log and the readers. Connections
/// are made on the threads that own them (the blocking client runs a runtime of its own,
/// which cannot start inside the caller's). With `leases` (cluster mode), games are
/// written only under their leases (`lease.rs`).
pub(super) fn open(
    url: &str,
    leases: Option<Arc<Leases>>,
    sync_interval: std::time::Duration,
) -> DbResult<Opened> {
    let url: Arc<str> = Arc::from(url);
    // Migrate first, alone.
    on_thread("db-migrate", {
        let url = Arc::clone(&url);
        move || {
            let mut client = connect(&url)?;
            // Nodes of a cluster started together on a new database would each create the
            // schema at once, and all but one fail: they migrate one at a time, under a
            // lock held until this connection closes.
            client
                .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
                .map_err(|e| DbError::Postgres(format!("locking the migrations: {e}")))?;
            let report = embedded::migrations::runner()
                .set_abort_divergent(true)
                .set_abort_missing(true)
                .run(&mut client)
                .map_err(|e| DbError::Postgres(format!("migrating the database: {e}")))?;
            for migration in report.applied_migrations() {
                tracing::info!(
                    version = migration.version(),
                    name = migration.name(),
                    "database migrated"
                );
            }
            Ok(())
        }
    })?;

    let writer_conn = on_thread("db-connect", {
        let url = Arc::clone(&url);
        move || Conn::open(url, "writer", conn::LOCK_BOUNDED)
    })?;
    let requests = writer::spawn(PgStore {
        conn: writer_conn,
        leases: leases.clone(),
    })?;
    let renewals = match &leases {
        Some(leases) => Some(renewer::spawn(Arc::clone(&url), Arc::clone(leases))?),
        None => None,
    };

    let (health_tx, log_health) = watch::channel(LogHealth::Writable);
    let log_busy = Arc::new(journal::Busy::default());
    let (journal, log_queue) = mpsc::channel(journal::REQUEST_QUEUE);
    let (ready, started) = std_mpsc::channel();
    let log_url = Arc::clone(&url);
    let busy = Arc::clone(&log_busy);
    std::thread::Builder::new()
        .name("game-log".into())
        .spawn(
            move || match StepLog::open(log_url, health_tx, busy, leases, sync_interval) {
                Ok(log) => {
                    let _ = ready.send(Ok(()));
                    log.run(log_queue);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            },
        )
        .map_err(|e| DbError::Postgres(format!("cannot start the game log thread: {e}")))?;
    started.recv().map_err(|_| DbError::Closed)??;

    let (reads, read_queue) = mpsc::channel(super::reader::READ_QUEUE);
    let read_queue = Arc::new(Mutex::new(read_queue));
    for n in 0..READERS {
        let (ready, started) = std_mpsc::channel();
        let url = Arc::clone(&url);
        let queue = Arc::clone(&read_queue);
        std::thread::Builder::new()
            .name(format!("db-reader-{n}"))
            .spawn(move || {
                match Conn::open(url, "reader", "SET default_transaction_read_only = on") {
                    Ok(conn) => {
                        let _ = ready.send(Ok(()));
                        run_reader(conn, &queue);
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                }
            })
            .map_err(|e| DbError::Postgres(format!("cannot start a reader thread: {e}")))?;
        started.recv().map_err(|_| DbError::Closed)??;
    }
    Ok(Opened {
        requests,
        journal,
        reads,
        log_health,
        log_busy,
        renewals,
    })
}

/// Runs `f` on a thread of its own and returns what it returns.
fn on_thread<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> DbResult<T> + Send + 'static,
) -> DbResult<T> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| DbError::Postgres(format!("cannot start a thread: {e}")))?
        .join()
        .map_err(|_| DbError::Postgres("a database thread panicked".into()))?
}

pub(super) fn ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestPostgres;

    #[test]
    fn the_servers_connections_run_without_jit() {
        let pg = TestPostgres::create();
        let mut client = connect(pg.url()).unwrap();
        let jit: String = client.query_one("SHOW jit", &[]).unwrap().get(0);
        assert_eq!(jit, "off");
    }

    #[test]
    fn connections_notice_a_silent_peer_unless_the_url_says_otherwise() {
        let ours = config("postgres://postgres@127.0.0.1:5432/db").unwrap();
        assert!(ours.get_keepalives());
        assert_eq!(ours.get_keepalives_idle(), KEEPALIVE_IDLE);
        assert_eq!(ours.get_keepalives_interval(), Some(KEEPALIVE_INTERVAL));
        assert_eq!(ours.get_keepalives_retries(), Some(KEEPALIVE_RETRIES));
        assert_eq!(ours.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        assert_eq!(ours.get_options(), Some(NO_JIT));
        let theirs =
            config("postgres://postgres@127.0.0.1:5432/db?keepalives_idle=60&tcp_user_timeout=90")
                .unwrap();
        assert_eq!(theirs.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(
            theirs.get_tcp_user_timeout(),
            Some(&Duration::from_secs(90))
        );
        assert_eq!(theirs.get_keepalives_interval(), Some(KEEPALIVE_INTERVAL));
    }
}
