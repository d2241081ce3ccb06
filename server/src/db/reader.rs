//! The readers: threads with read-only connections of their own, for the HTTP API's pages.
//!
//! In WAL mode a reader sees the last commit and neither waits for the writer nor makes it
//! wait: a page asked for while the writer syncs a batch of games is answered at once, and
//! a burst of page views adds nothing to the writer's queue. Each connection is opened
//! read-only and `query_only`, so nothing read here can change the database.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use elementals_protocol::messages::GameId;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::history::{self, PlayerGame, StoredGame};
use super::{accounts, games, schema, DbError, DbResult, LeaderRow, Page, PlayerPage};

/// Threads reading. Each page is a few index look-ups; two let a slow one (a large game
/// record) not hold up the next, on a machine whose other cores run the games.
const READERS: usize = 2;

/// Reads queued for the readers. The per-address request limit bounds what one client
/// queues; past this, callers wait (back-pressure on HTTP handlers only).
pub(crate) const READ_QUEUE: usize = 256;

type Reply<T> = oneshot::Sender<DbResult<T>>;

/// What a reader is asked.
pub(super) enum Read {
    Leaderboard {
        page: Page,
        reply: Reply<Vec<LeaderRow>>,
    },
    PlayerPage {
        name: String,
        page: Page,
        reply: Reply<Option<PlayerPage>>,
    },
    GameRecord {
        game_id: GameId,
        reply: Reply<Option<serde_json::Value>>,
    },
    PlayerGames {
        name: String,
        page: Page,
        reply: Reply<Option<Vec<PlayerGame>>>,
    },
    StoredGame {
        game_id: GameId,
        reply: Reply<Option<StoredGame>>,
    },
}

impl Read {
    /// Answers the read with `error`.
    pub(super) fn refuse(self, error: DbError) {
        match self {
            Read::Leaderboard { reply, .. } => drop(reply.send(Err(error))),
            Read::PlayerPage { reply, .. } => drop(reply.send(Err(error))),
            Read::GameRecord { reply, .. } => drop(reply.send(Err(error))),
            Read::PlayerGames { reply, .. } => drop(reply.send(Err(error))),
            Read::StoredGame { reply, .. } => drop(reply.send(Err(error))),
        }
    }
}

/// Opens the readers' connections to `path` (already created and migrated by the writer)
/// and starts their threads; they end when every sender is dropped.
pub(super) fn spawn(path: &Path) -> DbResult<mpsc::Sender<Read>> {
    let (reads, queue) = mpsc::channel(READ_QUEUE);
    let queue = Arc::new(Mutex::new(queue));
    for n in 0..READERS {
        let conn = schema::open_reader(path)?;
        let queue = Arc::clone(&queue);
        std::thread::Builder::new()
            .name(format!("db-reader-{n}"))
            .spawn(move || {
                run(&conn, &queue);
            })
            .map_err(|e| DbError::Sqlite(format!("cannot start a reader thread: {e}")))?;
    }
    Ok(reads)
}

fn run(conn: &Connection, queue: &Mutex<mpsc::Receiver<Read>>) {
    loop {
        // One thread waits on the queue at a time; the others wait for the lock.
        let read = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .blocking_recv();
        let Some(read) = read else {
            return;
        };
        // The caller may have stopped waiting.
        match read {
            Read::Leaderboard { page, reply } => {
                let _ = reply.send(accounts::leaderboard(conn, page));
            }
            Read::PlayerPage { name, page, reply } => {
                let _ = reply.send(accounts::player_page(conn, &name, page));
            }
            Read::GameRecord { game_id, reply } => {
                let _ = reply.send(games::stored_record(conn, &game_id));
            }
            Read::PlayerGames { name, page, reply } => {
                let _ = reply.send(history::player_games(conn, &name, page));
            }
            Read::StoredGame { game_id, reply } => {
                let _ = reply.send(history::stored_game(conn, &game_id));
            }
        }
    }
}
