//! The writer: one OS thread that owns the only connection and answers requests in order.
//!
//! A dedicated thread rather than a tokio task, because every SQLite call blocks (and a
//! durable commit waits on fsync); the async side only ever waits on a oneshot.
//!
//! Durable game writes are group-committed: when the writer takes a `RecordGame` or an
//! `AppendLog` it also takes every such request already queued behind it and commits them
//! all in one transaction, so a burst of game ends, or the moves of many games at once,
//! cost one fsync rather than one each. Each finished game in a batch sits in its own
//! savepoint, and each append is one statement, so one failing write is answered with its
//! error and the others commit. Requests keep
//! their order: a game's log appends always precede its record.

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rating::RatingChange;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::{
    accounts, gamelog, games, AccountRow, DbError, DbResult, LeaderRow, PlayerPage, SessionRow,
};
use crate::record::{AccountId, GameLog, GameRecord};

/// Requests queued for the writer. Each server-wide burst (many games ending at once,
/// a wave of logins) funnels through this one queue: 4096 absorbs such a burst without
/// making anyone wait, while bounding memory (a game record is a few kilobytes, so a full
/// queue is tens of megabytes at most). When it is full, senders wait: back-pressure
/// instead of growth.
pub(super) const REQUEST_QUEUE: usize = 4096;

/// At most this many finished games per transaction, so a long queue of them still lets
/// the requests behind it (a login, a page) through between batches.
pub(super) const MAX_BATCH: usize = 256;

/// At most this many log appends per transaction. An append is one small row, so a batch
/// of them is still quick (tens of milliseconds at the most), and the larger the batch the
/// fewer fsyncs a burst of moves costs.
pub(super) const MAX_BATCH_APPENDS: usize = 4096;

type Reply<T> = oneshot::Sender<DbResult<T>>;

/// What recording a game answers: both seats' rating changes, if it was rated and won.
type Changes = Option<SeatPair<RatingChange>>;

/// A write that waits for a durable commit, and is batched with its kind.
pub(super) enum GameWrite {
    Record(Box<GameRecord>, Reply<Changes>),
    Append(GameId, Vec<gamelog::Row>, Reply<()>),
}

/// Game writes taken off the queue together, each with the sender of its answer.
type Batch = Vec<GameWrite>;

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
    /// Steps of a live game's log, already encoded.
    AppendLog {
        game_id: GameId,
        rows: Vec<gamelog::Row>,
        reply: Reply<()>,
    },
    /// The logs of every unfinished game (startup).
    LoadLogs {
        reply: Reply<Vec<GameLog>>,
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
    pub appends: u64,
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
        match game_write(request) {
            Ok(first) => {
                let mut batch = Vec::new();
                // (records, appends) in the batch; it is full when either reaches its limit.
                let mut counts = (0, 0);
                let mut write = Some(first);
                while let Some(w) = write.take() {
                    match w {
                        GameWrite::Record(..) => counts.0 += 1,
                        GameWrite::Append(..) => counts.1 += 1,
                    }
                    batch.push(w);
                    if counts.0 >= MAX_BATCH || counts.1 >= MAX_BATCH_APPENDS {
                        break;
                    }
                    match queue.try_recv().map(game_write) {
                        Ok(Ok(w)) => write = Some(w),
                        Ok(Err(other)) => next = Some(other),
                        Err(_) => {}
                    }
                }
                stats.batches += 1;
                stats.games += counts.0 as u64;
                stats.appends += counts.1 as u64;
                write_games(&mut conn, batch);
            }
            Err(other) => {
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
        appends = stats.appends,
        "database writer stopped"
    );
    if let Some(reply) = shutdown_reply {
        let _ = reply.send(closed);
    }
    stats
}

/// The request as a batchable game write, or back as it was.
fn game_write(request: Request) -> Result<GameWrite, Request> {
    match request {
        Request::RecordGame { record, reply } => Ok(GameWrite::Record(record, reply)),
        Request::AppendLog {
            game_id,
            rows,
            reply,
        } => Ok(GameWrite::Append(game_id, rows, reply)),
        other => Err(other),
    }
}

/// What one game write answers, before it is sent.
enum Answer {
    Record(DbResult<Changes>),
    Append(DbResult<()>),
}

/// Write a batch of game writes in one transaction and answer each.
fn write_games(conn: &mut Connection, batch: Batch) {
    let answers = write_batch(conn, &batch).unwrap_or_else(|e| {
        // The transaction itself failed (begin or commit): nothing of it is stored.
        let failed = || DbError::Sqlite(e.to_string());
        batch
            .iter()
            .map(|write| match write {
                GameWrite::Record(..) => Answer::Record(Err(failed())),
                GameWrite::Append(..) => Answer::Append(Err(failed())),
            })
            .collect()
    });
    // The callers may have stopped waiting; what committed is stored regardless.
    for (write, answer) in batch.into_iter().zip(answers) {
        match (write, answer) {
            (GameWrite::Record(_, reply), Answer::Record(answer)) => {
                let _ = reply.send(answer);
            }
            (GameWrite::Append(_, _, reply), Answer::Append(answer)) => {
                let _ = reply.send(answer);
            }
            // `write_batch` answers each write with its own kind.
            _ => {}
        }
    }
}

fn write_batch(conn: &mut Connection, batch: &Batch) -> rusqlite::Result<Vec<Answer>> {
    let mut tx = conn.transaction()?;
    let mut answers = Vec::with_capacity(batch.len());
    let mut records = false;
    for write in batch {
        answers.push(match write {
            GameWrite::Record(record, _) => {
                records = true;
                Answer::Record(in_savepoint(&mut tx, |sp| games::record(sp, record)))
            }
            // One statement, all or nothing: no savepoint of its own needed.
            GameWrite::Append(game_id, rows, _) => {
                Answer::Append(gamelog::append(&tx, game_id, rows))
            }
        });
    }
    if records {
        crate::game::crash_point("record_uncommitted");
    }
    tx.commit()?;
    Ok(answers)
}

/// One write inside its own savepoint: on error it is rolled back alone.
fn in_savepoint<T>(
    tx: &mut rusqlite::Transaction<'_>,
    write: impl FnOnce(&rusqlite::Connection) -> DbResult<T>,
) -> DbResult<T> {
    let savepoint = tx.savepoint()?;
    let answer = write(&savepoint)?;
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
        Request::LoadLogs { reply } => {
            let _ = reply.send(gamelog::load(conn));
        }
        Request::RecordGame { record, reply } => {
            write_games(conn, vec![GameWrite::Record(record, reply)])
        }
        Request::AppendLog {
            game_id,
            rows,
            reply,
        } => write_games(conn, vec![GameWrite::Append(game_id, rows, reply)]),
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
