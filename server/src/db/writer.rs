//! The writer: one OS thread that owns the only connection and answers requests in order.
//!
//! A dedicated thread rather than a tokio task, because every SQLite call blocks (and a
//! durable commit waits on fsync); the async side only ever waits on a oneshot.
//!
//! Finished games are batched: when the writer takes a `RecordGame` it also takes the
//! games already queued behind it and commits them all in one transaction, so a burst
//! of game ends costs one fsync rather than one each. Each game in a batch sits in its
//! own savepoint, so one failing game is answered with its error and the others commit.

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rating::RatingChange;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::{accounts, games, AccountRow, DbError, DbResult, LeaderRow, PlayerPage, SessionRow};
use crate::record::{AccountId, GameRecord};

/// Requests queued for the writer. Each server-wide burst (many games ending at once,
/// a wave of logins) funnels through this one queue: 4096 absorbs such a burst without
/// making anyone wait, while bounding memory (a game record is a few kilobytes, so a full
/// queue is tens of megabytes at most). When it is full, senders wait: back-pressure
/// instead of growth.
pub(super) const REQUEST_QUEUE: usize = 4096;

/// At most this many games per transaction, so a long queue of games still lets the
/// requests behind it (a login, a page) through between batches.
pub(super) const MAX_BATCH: usize = 256;

type Reply<T> = oneshot::Sender<DbResult<T>>;

/// What recording a game answers: both seats' rating changes, if it was rated and won.
type Changes = Option<SeatPair<RatingChange>>;

/// Games taken off the queue together, each with the sender of its answer.
type Batch = Vec<(Box<GameRecord>, Reply<Changes>)>;

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
        reply: Reply<()>,
    },
    Session {
        token_hash: [u8; 32],
        now: u64,
        reply: Reply<Option<SessionRow>>,
    },
    RevokeSession {
        token_hash: [u8; 32],
        reply: Reply<()>,
    },
    RecordGame {
        // Boxed: a record is far larger than every other request.
        record: Box<GameRecord>,
        reply: Reply<Changes>,
    },
    Leaderboard {
        limit: u32,
        reply: Reply<Vec<LeaderRow>>,
    },
    PlayerPage {
        name: String,
        reply: Reply<Option<PlayerPage>>,
    },
    GameRecord {
        game_id: GameId,
        reply: Reply<Option<serde_json::Value>>,
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
    pub games: u64,
}

/// Start the writer thread on `conn` and return the sender of its queue.
pub(super) fn spawn(conn: Connection) -> DbResult<mpsc::Sender<Request>> {
    let (requests, queue) = mpsc::channel(REQUEST_QUEUE);
    std::thread::Builder::new()
        .name("db-writer".into())
        .spawn(move || run(conn, queue))
        .map_err(|e| DbError::Sqlite(format!("cannot start the writer thread: {e}")))?;
    Ok(requests)
}

/// The writer loop: runs until every handle is dropped or a `Shutdown` is reached.
pub(super) fn run(mut conn: Connection, mut queue: mpsc::Receiver<Request>) -> WriterStats {
    let mut stats = WriterStats::default();
    // A request taken off the queue while gathering a batch, to be handled right after it.
    let mut next: Option<Request> = None;
    let shutdown_reply = loop {
        let Some(request) = next.take().or_else(|| queue.blocking_recv()) else {
            break None;
        };
        match request {
            Request::RecordGame { record, reply } => {
                let mut batch = vec![(record, reply)];
                while batch.len() < MAX_BATCH {
                    match queue.try_recv() {
                        Ok(Request::RecordGame { record, reply }) => batch.push((record, reply)),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                stats.batches += 1;
                stats.games += batch.len() as u64;
                record_batch(&mut conn, batch);
            }
            other => {
                if let Some(reply) = handle(&mut conn, other) {
                    break Some(reply);
                }
            }
        }
    };
    // Requests still queued behind a shutdown are dropped with the queue: their callers
    // see their reply sender vanish, which is `Closed`.
    drop(queue);
    let closed = conn.close().map_err(|(_, e)| DbError::from(e));
    tracing::info!(
        batches = stats.batches,
        games = stats.games,
        "database writer stopped"
    );
    if let Some(reply) = shutdown_reply {
        let _ = reply.send(closed);
    }
    stats
}

/// Write a batch of finished games in one transaction and answer each.
fn record_batch(conn: &mut Connection, batch: Batch) {
    let answers = match write_batch(conn, &batch) {
        Ok(answers) => answers,
        // The transaction itself failed (begin or commit): nothing of it is stored.
        Err(e) => batch
            .iter()
            .map(|_| Err(DbError::Sqlite(e.to_string())))
            .collect(),
    };
    for ((_, reply), answer) in batch.into_iter().zip(answers) {
        // The caller may have stopped waiting; the game is stored regardless.
        let _ = reply.send(answer);
    }
}

fn write_batch(conn: &mut Connection, batch: &Batch) -> rusqlite::Result<Vec<DbResult<Changes>>> {
    let mut tx = conn.transaction()?;
    let mut answers = Vec::with_capacity(batch.len());
    for (record, _) in batch {
        answers.push(record_one(&mut tx, record));
    }
    tx.commit()?;
    Ok(answers)
}

/// One game inside its own savepoint: on error it is rolled back alone.
fn record_one(tx: &mut rusqlite::Transaction<'_>, record: &GameRecord) -> DbResult<Changes> {
    let savepoint = tx.savepoint()?;
    let answer = games::record(&savepoint, record)?;
    savepoint.commit()?;
    Ok(answer)
}

/// One request on its own (a game here is a batch of one). Returns the reply of a
/// `Shutdown`, which the caller answers once the connection is closed.
fn handle(conn: &mut Connection, request: Request) -> Option<Reply<()>> {
    // Sends ignore a caller that stopped waiting: the work is done either way.
    match request {
        Request::CreateAccount {
            name,
            password_hash,
            reply,
        } => {
            let _ = reply.send(accounts::create_account(conn, &name, &password_hash));
        }
        Request::CreateGuest { reply } => {
            let _ = reply.send(accounts::create_guest(conn));
        }
        Request::AccountByName { name, reply } => {
            let _ = reply.send(accounts::by_name(conn, &name));
        }
        Request::AccountById { id, reply } => {
            let _ = reply.send(accounts::by_id(conn, id));
        }
        Request::InsertSession {
            token_hash,
            account,
            expires_at,
            reply,
        } => {
            let _ = reply.send(accounts::insert_session(
                conn,
                &token_hash,
                account,
                expires_at,
            ));
        }
        Request::Session {
            token_hash,
            now,
            reply,
        } => {
            let _ = reply.send(accounts::session(conn, &token_hash, now));
        }
        Request::RevokeSession { token_hash, reply } => {
            let _ = reply.send(accounts::revoke_session(conn, &token_hash));
        }
        Request::Leaderboard { limit, reply } => {
            let _ = reply.send(accounts::leaderboard(conn, limit));
        }
        Request::PlayerPage { name, reply } => {
            let _ = reply.send(accounts::player_page(conn, &name));
        }
        Request::GameRecord { game_id, reply } => {
            let _ = reply.send(games::stored_record(conn, &game_id));
        }
        // Everything before it was committed before it was answered.
        Request::Flush { reply } => {
            let _ = reply.send(Ok(()));
        }
        Request::RecordGame { record, reply } => record_batch(conn, vec![(record, reply)]),
        Request::Shutdown { reply } => return Some(reply),
    }
    None
}

/// Now, in Unix milliseconds, for `created_at` columns.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
