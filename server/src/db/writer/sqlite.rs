//! SQLite's store for the writer loop: a batch in one transaction of the only
//! connection that changes the file, a savepoint per request, and the checkpointer nudged
//! after each commit.

use rusqlite::Connection;

use super::{pending, refuse, Pending, Request, Store};
use crate::db::{accounts, checkpoint, games, wakeups};
use crate::db::{DbError, DbResult, PruneBatch, Pruned};

/// The SQLite writer: the only connection that changes the file, and the checkpointer it
/// nudges after each commit, if there is one.
pub(in crate::db) struct Sqlite {
    pub conn: Connection,
    pub checkpointer: Option<checkpoint::Nudge>,
}

impl Sqlite {
    fn nudge(&self) {
        if let Some(nudge) = &self.checkpointer {
            // Full means a nudge is already pending.
            let _ = nudge.try_send(());
        }
    }
}

impl Store for Sqlite {
    fn run_batch(&mut self, batch: Vec<Request>, records: bool) -> bool {
        let committed = run_batch(&mut self.conn, batch, records);
        if committed {
            self.nudge();
        }
        committed
    }

    fn prune(&mut self, batch: &PruneBatch) -> DbResult<Pruned> {
        let pruned = prune(&mut self.conn, batch);
        if pruned.is_ok() {
            self.nudge();
        }
        pruned
    }

    fn close(self) -> DbResult<()> {
        self.conn.close().map_err(|(_, e)| DbError::from(e))
    }
}

/// One pruning batch in a transaction of its own. Foreign keys are off meanwhile: deleting
/// an account would otherwise look for games naming it in a table whose account columns
/// have no index (a scan of every game per account). The guests it deletes have no game
/// (`played`), and their sessions go first.
fn prune(conn: &mut Connection, batch: &PruneBatch) -> DbResult<Pruned> {
    conn.pragma_update(None, "foreign_keys", false)?;
    let pruned = (|| -> DbResult<Pruned> {
        let tx = conn.transaction()?;
        let sessions = accounts::prune_sessions(&tx, batch.sessions_before, batch.limit)?;
        let guests = accounts::prune_guests(
            &tx,
            batch.guests_created_before,
            batch.sessions_after,
            &batch.keep,
            batch.after,
            batch.limit,
        )?;
        tx.commit()?;
        Ok(Pruned { sessions, ..guests })
    })();
    conn.pragma_update(None, "foreign_keys", true)?;
    pruned
}

/// Runs a batch in one transaction, each request in its own savepoint, then answers all.
/// Returns whether it committed.
fn run_batch(conn: &mut Connection, batch: Vec<Request>, records: bool) -> bool {
    let mut answers: Vec<Pending> = Vec::with_capacity(batch.len());
    // A batch whose transaction cannot begin is refused whole, each request answered.
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(error) => {
            let error = DbError::from(error);
            for request in batch {
                refuse(request, &error);
            }
            return false;
        }
    };
    for request in batch {
        answers.push(execute(&mut tx, request));
    }
    if records {
        crate::db::crash_point("record_uncommitted");
    }
    let committed = tx.commit().map_err(|e| e.to_string());
    for answer in answers {
        answer(&committed);
    }
    committed.is_ok()
}

/// One request in its own savepoint: if it fails it is rolled back alone.
fn execute(tx: &mut rusqlite::Transaction<'_>, request: Request) -> Pending {
    match request {
        Request::CreateAccount {
            name,
            password_hash,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, |c| accounts::create_account(c, &name, &password_hash)),
        ),
        Request::CreateGuest { reply } => pending(reply, in_savepoint(tx, accounts::create_guest)),
        Request::AccountByName { name, reply } => pending(reply, accounts::by_name(tx, &name)),
        Request::AccountById { id, reply } => pending(reply, accounts::by_id(tx, id)),
        Request::InsertSession {
            token_hash,
            account,
            expires_at,
            max_sessions,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, |c| {
                accounts::insert_session(c, &token_hash, account, expires_at, max_sessions)
            }),
        ),
        Request::Session {
            token_hash,
            now,
            slide,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, |c| accounts::session(c, &token_hash, now, slide)),
        ),
        Request::RevokeSession { token_hash, reply } => pending(
            reply,
            in_savepoint(tx, |c| accounts::revoke_session(c, &token_hash)),
        ),
        Request::RecordGame {
            record,
            stored,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, |c| games::record(c, &record, &stored)),
        ),
        Request::Hibernate {
            sleeper,
            log,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, |c| wakeups::hibernate(c, &sleeper, log.as_deref())),
        ),
        Request::SleepingLogs { games, reply } => {
            pending(reply, wakeups::sleeping_logs(tx, &games))
        }
        Request::Woken { game_id, reply } => {
            pending(reply, in_savepoint(tx, |c| wakeups::woken(c, &game_id)))
        }
        Request::DueWakeups {
            now_ms,
            limit,
            reply,
        } => pending(reply, wakeups::due(tx, now_ms, limit)),
        Request::Sleepers { reply } => pending(reply, wakeups::sleepers(tx)),
        // Taken out of batches by `run`.
        Request::Flush { reply } | Request::Shutdown { reply } => pending(reply, Ok(())),
        Request::Prune { reply, .. } => pending(reply, Err(DbError::Closed)),
        #[cfg(test)]
        Request::Hold { .. } => Box::new(|_| {}),
    }
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
