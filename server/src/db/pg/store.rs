//! The writer's connection: the storage interface's write side (`writer::Store`), each
//! request of a batch in a savepoint of the batch's transaction.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use elementals_protocol::messages::GameId;
use postgres::Transaction;

use super::accounts::{
    by_id, by_name, create_guest, insert_account, insert_session, prune_guests, prune_sessions,
    session,
};
use super::conn::Conn;
use super::lease::{self, Leases};
use super::record_one::record_game;
use super::records::{lock_rated_accounts, record_run, GameToRecord};
use super::wakeups;
use super::Cache;
use crate::db::writer::{pending, refuse, Pending, Request, Store};
use crate::db::{DbError, DbResult, PruneBatch, Pruned};
use crate::record::AccountId;

/// The writer's connection.
pub(super) struct PgStore {
    pub(super) conn: Conn,
    /// Cluster mode: a game is recorded only under its lease (see `fence_records`).
    pub(super) leases: Option<Arc<Leases>>,
}

impl Store for PgStore {
    fn run_batch(&mut self, batch: Vec<Request>, records: bool) -> bool {
        let (client, cache) = match self.conn.get() {
            Ok(connection) => connection,
            Err(error) => {
                for request in batch {
                    refuse(request, &error);
                }
                return false;
            }
        };
        let mut answers: Vec<Pending> = Vec::with_capacity(batch.len());
        // The ratings of the accounts the batch rates, read as they are locked; each run
        // of records leaves its ratings here for the next.
        let mut ratings: HashMap<AccountId, f64> = HashMap::new();
        // A batch whose transaction cannot begin is refused whole, each request answered.
        let mut tx = match client.transaction() {
            Ok(tx) => tx,
            Err(error) => {
                let error = DbError::from(error);
                for request in batch {
                    refuse(request, &error);
                }
                return false;
            }
        };
        // The games whose leases the batch's records delete.
        let mut released: Vec<GameId> = Vec::new();
        let committed = (|| -> DbResult<()> {
            if records {
                ratings = lock_rated_accounts(&mut tx, cache, &batch)?;
            }
            let batch = match &self.leases {
                Some(leases) if records => {
                    let (kept, held) = fence_records(&mut tx, cache, leases, batch, &mut answers)?;
                    released = held;
                    kept
                }
                _ => batch,
            };
            // Runs of finished games are written in bulk, everything else one by one, in
            // the batch's order.
            let mut run: Vec<GameToRecord> = Vec::new();
            for request in batch {
                match request {
                    Request::RecordGame {
                        record,
                        stored,
                        reply,
                    } => run.push((record, stored, reply)),
                    other => {
                        record_run(
                            &mut tx,
                            cache,
                            &mut ratings,
                            std::mem::take(&mut run),
                            &mut answers,
                        );
                        answers.push(execute(&mut tx, cache, other, self.leases.as_deref()));
                    }
                }
            }
            record_run(&mut tx, cache, &mut ratings, run, &mut answers);
            if records {
                crate::db::crash_point("record_uncommitted");
            }
            tx.commit()?;
            Ok(())
        })()
        .map_err(|e| e.to_string());
        if let (Ok(()), Some(leases)) = (&committed, &self.leases) {
            // Recorded: no longer this node's to renew.
            for game_id in &released {
                leases.forget(game_id);
            }
        }
        for answer in answers {
            answer(&committed);
        }
        committed.is_ok()
    }

    fn prune(&mut self, batch: &PruneBatch) -> DbResult<Pruned> {
        let (client, cache) = self.conn.get()?;
        let mut tx = client.transaction()?;
        let sessions = prune_sessions(&mut tx, cache, batch.sessions_before, batch.limit)?;
        let guests = prune_guests(&mut tx, cache, batch, batch.after)?;
        tx.commit()?;
        Ok(Pruned { sessions, ..guests })
    }

    fn close(self) -> DbResult<()> {
        self.conn.close()
    }
}

/// Cluster mode: the batch's records of games whose lease this process does not hold
/// (with its token) are refused `LeaseLost` and taken out of the batch; those it holds
/// stay locked until the commit, which deletes them, and are returned. A game recorded already is not
/// refused: recording it again inserts nothing and answers its first record's changes.
fn fence_records(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    leases: &Leases,
    batch: Vec<Request>,
    answers: &mut Vec<Pending>,
) -> DbResult<(Vec<Request>, Vec<GameId>)> {
    let (mut ids, mut tokens, mut unheld) = (Vec::new(), Vec::new(), Vec::new());
    for request in &batch {
        if let Request::RecordGame { record, .. } = request {
            let id = record.game_id.to_string();
            match leases.token(&record.game_id) {
                Some(token) => {
                    ids.push(id);
                    tokens.push(token);
                }
                None => unheld.push(id),
            }
        }
    }
    if ids.is_empty() && unheld.is_empty() {
        return Ok((batch, Vec::new()));
    }
    let held = if ids.is_empty() {
        HashSet::new()
    } else {
        lease::held_for_record(tx, cache, &leases.node_id, &ids, &tokens)?
    };
    unheld.extend(ids.into_iter().filter(|id| !held.contains(id)));
    let recorded = if unheld.is_empty() {
        HashSet::new()
    } else {
        lease::recorded(tx, cache, &unheld)?
    };
    let mut kept = Vec::with_capacity(batch.len());
    let mut released = Vec::new();
    for request in batch {
        match request {
            Request::RecordGame { record, reply, .. }
                if {
                    let id = record.game_id.to_string();
                    !held.contains(&id) && !recorded.contains(&id)
                } =>
            {
                let game_id = record.game_id;
                tracing::warn!(%game_id, "not recording the game: its lease is another node's");
                answers.push(pending(reply, Err(DbError::LeaseLost { game_id })));
            }
            other => {
                if let Request::RecordGame { record, .. } = &other {
                    if held.contains(&record.game_id.to_string()) {
                        released.push(record.game_id);
                    }
                }
                kept.push(other);
            }
        }
    }
    Ok((kept, released))
}

/// One request in the batch's transaction; `leases` in cluster mode (a game goes to sleep
/// only under its lease, which it lets go: `lease::go_dormant`).
pub(super) fn execute(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    request: Request,
    leases: Option<&Leases>,
) -> Pending {
    match request {
        Request::CreateAccount {
            name,
            password_hash,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| {
                insert_account(c, k, &name, Some(&password_hash))
            }),
        ),
        Request::CreateGuest { reply } => pending(reply, create_guest(tx, cache)),
        Request::AccountByName { name, reply } => pending(reply, by_name(tx, cache, &name)),
        Request::AccountById { id, reply } => pending(reply, by_id(tx, cache, id)),
        Request::InsertSession {
            token_hash,
            account,
            expires_at,
            max_sessions,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| {
                insert_session(c, k, &token_hash, account, expires_at, max_sessions)
            }),
        ),
        Request::Session {
            token_hash,
            now,
            slide,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| session(c, k, &token_hash, now, slide)),
        ),
        Request::RevokeSession { token_hash, reply } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| {
                let delete = k.get(c, "DELETE FROM sessions WHERE token_hash = $1")?;
                c.execute(&delete, &[&&token_hash[..]])?;
                Ok(())
            }),
        ),
        Request::RecordGame {
            record,
            stored,
            reply,
        } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| record_game(c, k, &record, &stored)),
        ),
        // A game's log stays in `game_log`, read by key when it wakes.
        Request::Hibernate { sleeper, reply, .. } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| {
                wakeups::hibernate(c, k, &sleeper)?;
                match leases {
                    Some(leases) => lease::go_dormant(c, k, leases, &sleeper.game_id),
                    None => Ok(()),
                }
            }),
        ),
        Request::Woken { game_id, reply } => pending(
            reply,
            in_savepoint(tx, cache, |c, k| wakeups::woken(c, k, &game_id)),
        ),
        Request::DueWakeups {
            now_ms,
            limit,
            reply,
        } => pending(reply, wakeups::due(tx, cache, now_ms, limit)),
        Request::Sleepers { reply } => pending(reply, wakeups::sleepers(tx, cache)),
        Request::SleepingLogs { reply, .. } => pending(reply, Ok(Vec::new())),
        Request::Flush { reply } | Request::Shutdown { reply } => pending(reply, Ok(())),
        Request::Prune { reply, .. } => pending(reply, Err(DbError::Closed)),
        #[cfg(test)]
        Request::Hold { .. } => Box::new(|_| {}),
    }
}

/// One write in its own savepoint: on error it is rolled back alone (a failed statement
/// would otherwise abort the whole transaction).
pub(super) fn in_savepoint<T>(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    write: impl FnOnce(&mut Transaction<'_>, &mut Cache) -> DbResult<T>,
) -> DbResult<T> {
    let mut savepoint = tx.savepoint("request")?;
    let answer = write(&mut savepoint, cache)?;
    savepoint.commit()?;
    Ok(answer)
}
