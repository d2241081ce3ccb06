//! The writer: one OS thread that owns the only connection and answers requests in order.
//!
//! A dedicated thread rather than a tokio task, because every SQLite call blocks (and a
//! durable commit waits on fsync); the async side only ever waits on a oneshot.
//!
//! Everything is group-committed: the writer takes a request and every request already
//! queued behind it (up to `MAX_BATCH`, or `MAX_BATCH_GAMES` finished games), runs each in
//! its own savepoint of one transaction, commits once and only then answers them all. A
//! burst of game ends, or a wave of registrations, costs one fsync rather than one each;
//! one failing request is rolled back alone and answered with its error. Requests keep
//! their order, and each sees the writes of those before it.
//!
//! The loop is the same for every backend (`Store`); SQLite's store is `writer/sqlite.rs`,
//! PostgreSQL's `pg/store.rs`.

use std::sync::Arc;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rating::RatingChange;
use tokio::sync::{mpsc, oneshot};

use super::wakeups::{DueWakeups, Sleeper};
use super::{AccountRow, DbError, DbResult, PruneBatch, Pruned, SessionRow, Slide};
use crate::record::{AccountId, GameRecord};

mod sqlite;
pub(super) use sqlite::Sqlite;

/// Requests queued for the writer. Each server-wide burst (many games ending at once,
/// a wave of logins) funnels through this one queue: 4096 absorbs such a burst without
/// making anyone wait, while bounding memory (a game record is a few kilobytes, so a full
/// queue is tens of megabytes at most). When it is full, senders wait: back-pressure
/// instead of growth.
pub(crate) const REQUEST_QUEUE: usize = 4096;

/// At most this many requests per transaction.
pub(super) const MAX_BATCH: usize = 1024;

/// At most this many finished games per transaction (a record is far more work than any
/// other request), so a long queue of them still lets the requests behind it (a login, a
/// page) through between batches.
pub(super) const MAX_BATCH_GAMES: usize = 256;

pub(super) type Reply<T> = oneshot::Sender<DbResult<T>>;

/// What recording a game answers: both seats' rating changes, if it was rated and won.
type Changes = Option<SeatPair<RatingChange>>;

/// What the writer is asked to do; each carries the sender its answer goes back on.
pub(super) enum Request {
    CreateAccount {
        name: String,
        password_hash: String,
        reply: Reply<AccountRow>,
    },
    CreateGuest {
        reply: Reply<AccountRow>,
    },
    AccountByName {
        name: String,
        reply: Reply<Option<AccountRow>>,
    },
    AccountById {
        id: AccountId,
        reply: Reply<Option<AccountRow>>,
    },
    InsertSession {
        token_hash: [u8; 32],
        account: AccountId,
        expires_at: u64,
        max_sessions: u32,
        reply: Reply<()>,
    },
    Session {
        token_hash: [u8; 32],
        now: u64,
        slide: Slide,
        reply: Reply<Option<SessionRow>>,
    },
    RevokeSession {
        token_hash: [u8; 32],
        reply: Reply<()>,
    },
    RecordGame {
        // Shared with the game (a record is far larger than every other request).
        record: Arc<GameRecord>,
        /// The record as stored (`stored::encode`).
        stored: Vec<u8>,
        reply: Reply<Changes>,
    },
    /// A game goes to sleep: its wake-up row, written (or its due time moved), with its
    /// log on SQLite (`hibernation::encode_log`), moved out of the step-log file.
    Hibernate {
        sleeper: Sleeper,
        log: Option<Vec<u8>>,
        reply: Reply<()>,
    },
    /// SQLite: the moved logs of these hibernated games (those that have one).
    SleepingLogs {
        games: Vec<GameId>,
        reply: Reply<Vec<(GameId, Vec<u8>)>>,
    },
    /// A game is awake: its wake-up row goes (and on SQLite its moved log).
    Woken {
        game_id: GameId,
        reply: Reply<()>,
    },
    /// The sweeper's question: which games are due by `now_ms` (at most `limit`).
    DueWakeups {
        now_ms: u64,
        limit: usize,
        reply: Reply<DueWakeups>,
    },
    /// Every hibernated game (at startup).
    Sleepers {
        reply: Reply<Vec<Sleeper>>,
    },
    /// Run alone, in a transaction of its own with foreign keys off (see `prune`).
    Prune {
        batch: PruneBatch,
        reply: Reply<Pruned>,
    },
    /// Holds the writer until the sender is dropped: tests show what does not wait on it.
    #[cfg(test)]
    Hold {
        /// Fired once the writer has taken the hold (nothing queued after it is handled).
        held: oneshot::Sender<()>,
        until: std::sync::mpsc::Receiver<()>,
    },
    /// Answered once everything queued before it is committed.
    Flush {
        reply: Reply<()>,
    },
    /// Like `Flush`, then the connection is closed and the writer stops.
    Shutdown {
        reply: Reply<()>,
    },
}

/// What a writer did in its life; logged when it stops.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct WriterStats {
    pub batches: u64,
    pub requests: u64,
    pub games: u64,
}

/// What the writer loop needs of a backend: the storage interface's write side. The loop
/// (batching, ordering, answering) is the same for every backend.
pub(super) trait Store: Send + 'static {
    /// Runs a batch in one transaction, each request in its own savepoint, commits, then
    /// answers them all; returns whether it committed. `records`: it holds a finished game.
    fn run_batch(&mut self, batch: Vec<Request>, records: bool) -> bool;
    /// One pruning batch, in a transaction of its own.
    fn prune(&mut self, batch: &PruneBatch) -> DbResult<Pruned>;
    /// Closes the connection.
    fn close(self) -> DbResult<()>;
}

/// Start the writer thread on `store` and return the sender of its queue.
pub(super) fn spawn(store: impl Store) -> DbResult<mpsc::Sender<Request>> {
    let (requests, queue) = mpsc::channel(REQUEST_QUEUE);
    std::thread::Builder::new()
        .name("db-writer".into())
        .spawn(move || run_with(store, queue))
        .map_err(|e| DbError::Sqlite(format!("cannot start the writer thread: {e}")))?;
    Ok(requests)
}

/// The writer loop on a SQLite connection: runs until every handle is dropped or a
/// `Shutdown` is reached.
#[cfg(test)]
pub(super) fn run(conn: rusqlite::Connection, queue: mpsc::Receiver<Request>) -> WriterStats {
    run_with(
        Sqlite {
            conn,
            checkpointer: None,
        },
        queue,
    )
}

pub(super) fn run_with(mut store: impl Store, mut queue: mpsc::Receiver<Request>) -> WriterStats {
    let mut stats = WriterStats::default();
    // A request taken off the queue while gathering a batch, to be handled right after it.
    let mut next: Option<Request> = None;
    let shutdown_reply = loop {
        let Some(request) = next.take().or_else(|| queue.blocking_recv()) else {
            break None;
        };
        match request {
            // Everything before it was committed before it was answered.
            Request::Flush { reply } => {
                let _ = reply.send(Ok(()));
            }
            Request::Shutdown { reply } => break Some(reply),
            Request::Prune { batch, reply } => {
                let _ = reply.send(store.prune(&batch));
            }
            #[cfg(test)]
            Request::Hold { held, until } => {
                let _ = held.send(());
                let _ = until.recv();
            }
            first => {
                let mut games = usize::from(matches!(first, Request::RecordGame { .. }));
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH && games < MAX_BATCH_GAMES {
                    match queue.try_recv() {
                        Ok(r) if runs_alone(&r) => {
                            next = Some(r);
                            break;
                        }
                        Ok(r) => {
                            games += usize::from(matches!(r, Request::RecordGame { .. }));
                            batch.push(r);
                        }
                        Err(_) => break,
                    }
                }
                stats.batches += 1;
                stats.requests += batch.len() as u64;
                stats.games += games as u64;
                store.run_batch(batch, games > 0);
            }
        }
    };
    // Requests still queued behind a shutdown are dropped with the queue: their callers
    // see their reply sender vanish, which is `Closed`.
    drop(queue);
    let closed = store.close();
    tracing::info!(
        batches = stats.batches,
        requests = stats.requests,
        games = stats.games,
        "database writer stopped"
    );
    if let Some(reply) = shutdown_reply {
        let _ = reply.send(closed);
    }
    stats
}

/// Requests handled outside batches: they end the batch being gathered.
fn runs_alone(request: &Request) -> bool {
    match request {
        Request::Flush { .. } | Request::Shutdown { .. } | Request::Prune { .. } => true,
        #[cfg(test)]
        Request::Hold { .. } => true,
        _ => false,
    }
}

/// A request's answer, computed and waiting for its transaction's commit: called with
/// the commit's outcome, it sends the answer (or the commit's failure).
pub(super) type Pending = Box<dyn FnOnce(&Result<(), String>) + Send>;

pub(super) fn pending<T: Send + 'static>(reply: Reply<T>, answer: DbResult<T>) -> Pending {
    Box::new(move |committed| {
        let answer = match committed {
            Ok(()) => answer,
            Err(e) => Err(DbError::Sqlite(e.clone())),
        };
        // The caller may have stopped waiting; what committed is stored regardless.
        let _ = reply.send(answer);
    })
}

/// Answers a request with `error`, having done nothing.
pub(super) fn refuse(request: Request, error: &DbError) {
    let answer: Pending = match request {
        Request::CreateAccount { reply, .. } | Request::CreateGuest { reply } => {
            pending(reply, Err(error.clone()))
        }
        Request::AccountByName { reply, .. } | Request::AccountById { reply, .. } => {
            pending(reply, Err(error.clone()))
        }
        Request::InsertSession { reply, .. }
        | Request::RevokeSession { reply, .. }
        | Request::Hibernate { reply, .. }
        | Request::Woken { reply, .. }
        | Request::Flush { reply }
        | Request::Shutdown { reply } => pending(reply, Err(error.clone())),
        Request::Session { reply, .. } => pending(reply, Err(error.clone())),
        Request::RecordGame { reply, .. } => pending(reply, Err(error.clone())),
        Request::Prune { reply, .. } => pending(reply, Err(error.clone())),
        Request::DueWakeups { reply, .. } => pending(reply, Err(error.clone())),
        Request::Sleepers { reply } => pending(reply, Err(error.clone())),
        Request::SleepingLogs { reply, .. } => pending(reply, Err(error.clone())),
        #[cfg(test)]
        Request::Hold { .. } => Box::new(|_| {}),
    };
    answer(&Ok(()));
}

/// Now, in Unix milliseconds, for `created_at` columns.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
