//! The live games' step log in `game_log`, on a connection and a thread of its own.

use std::collections::HashMap;

use elementals_protocol::messages::GameId;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::conn::Conn;
use crate::db::journal::{self, LogHealth, Row};
use crate::db::writer;
use crate::db::{DbError, DbResult};
use crate::record::GameLog;

/// The live games' step log in `game_log`.
pub(super) struct StepLog {
    conn: Conn,
    /// Each live game's next step.
    next: HashMap<GameId, u64>,
    health: watch::Sender<LogHealth>,
    broken: Option<DbError>,
    /// Makes every commit's answer lost (the commit done), for the tests of a broken log (with the
    /// `test-hooks` feature, set by the `ELEMENTALS_FAIL_SYNC` environment variable).
    #[cfg(any(test, feature = "test-hooks"))]
    fail_commits: bool,
}

impl StepLog {
    pub(super) fn open(url: Arc<str>, health: watch::Sender<LogHealth>) -> DbResult<StepLog> {
        let mut conn = Conn::open(url, "game log", "")?;
        let next = conn
            .get()?
            .0
            .query(
                "SELECT game_id, MAX(step) + 1 FROM game_log GROUP BY game_id",
                &[],
            )?
            .iter()
            .filter_map(|row| {
                let id: String = row.get(0);
                let next: i64 = row.get(1);
                Some((id.parse::<GameId>().ok()?, next.max(0) as u64))
            })
            .collect();
        Ok(StepLog {
            conn,
            next,
            health,
            broken: None,
            #[cfg(any(test, feature = "test-hooks"))]
            fail_commits: std::env::var_os("ELEMENTALS_FAIL_SYNC").is_some(),
        })
    }

    pub(super) fn run(mut self, mut queue: mpsc::Receiver<journal::Request>) {
        let mut held: Option<journal::Request> = None;
        loop {
            let Some(request) = held.take().or_else(|| queue.blocking_recv()) else {
                break;
            };
            match request {
                journal::Request::Append {
                    game_id,
                    rows,
                    reply,
                } => {
                    let mut batch = vec![(game_id, rows, reply)];
                    while batch.len() < journal::MAX_BATCH_APPENDS {
                        match queue.try_recv() {
                            Ok(journal::Request::Append {
                                game_id,
                                rows,
                                reply,
                            }) => batch.push((game_id, rows, reply)),
                            Ok(other) => {
                                held = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.append(batch);
                }
                journal::Request::Forget { game_id } => {
                    // Its rows went with the transaction that recorded it.
                    self.next.remove(&game_id);
                }
                journal::Request::Load { reply } => {
                    let _ = reply.send(self.load());
                }
                // Every append before it was answered after its commit.
                journal::Request::Flush { reply } => {
                    let _ = reply.send(Ok(()));
                }
                journal::Request::Shutdown { reply } => {
                    let _ = reply.send(Ok(()));
                    break;
                }
            }
        }
        let _ = self.conn.close();
    }

    /// One transaction for every append of the batch that is in order.
    fn append(&mut self, batch: Vec<(GameId, Vec<Row>, writer::Reply<()>)>) {
        let mut next = HashMap::new();
        let mut accepted = Vec::with_capacity(batch.len());
        let (mut ids, mut steps, mut entries) = (Vec::new(), Vec::new(), Vec::new());
        for (game_id, rows, reply) in batch {
            if let Some(error) = &self.broken {
                let _ = reply.send(Err(error.clone()));
                continue;
            }
            let expected = next
                .get(&game_id)
                .or_else(|| self.next.get(&game_id))
                .copied()
                .unwrap_or(0);
            let mut after = expected;
            if let Err(error) = journal::check_rows(&game_id, &mut after, &rows) {
                let _ = reply.send(Err(error));
                continue;
            }
            next.insert(game_id, after);
            let id = game_id.to_string();
            for (step, bytes) in rows {
                ids.push(id.clone());
                steps.push(step as i64);
                entries.push(bytes);
            }
            accepted.push(reply);
        }
        if accepted.is_empty() {
            return;
        }
        let outcome = match self.write(&ids, &steps, &entries) {
            Err(error) if !matches!(error, DbError::LogBroken { .. }) => {
                self.conn.settle(Err(error))
            }
            outcome => outcome,
        };
        match &outcome {
            Ok(()) => {
                self.next.extend(next);
                self.health.send_if_modified(|h| {
                    let recovered = *h == LogHealth::Failing;
                    if recovered {
                        *h = LogHealth::Writable;
                    }
                    recovered
                });
            }
            Err(DbError::LogBroken { .. }) => {}
            Err(_) => {
                self.health.send_if_modified(|h| {
                    let failing = *h == LogHealth::Writable;
                    if failing {
                        *h = LogHealth::Failing;
                    }
                    failing
                });
            }
        }
        for reply in accepted {
            let _ = reply.send(outcome.clone());
        }
    }

    fn write(&mut self, ids: &[String], steps: &[i64], entries: &[Vec<u8>]) -> DbResult<()> {
        // Before the commit, a failure (the connection lost, say) leaves nothing written:
        // the batch is refused and its games retry.
        let (client, cache) = self.conn.get()?;
        let insert = cache.get(
            client,
            "INSERT INTO game_log (game_id, step, entry)
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bytea[])",
        )?;
        let mut tx = client.transaction()?;
        tx.execute(&insert, &[&ids, &steps, &entries])?;
        #[cfg(any(test, feature = "test-hooks"))]
        let fail = self.fail_commits;
        #[cfg(not(any(test, feature = "test-hooks")))]
        let fail = false;
        let committed = tx.commit().map_err(|e| e.to_string()).and_then(|()| {
            // The test hook: the commit happened, its answer is lost (as when the
            // connection drops during it).
            if fail {
                Err("the commit's answer was lost (test hook)".to_owned())
            } else {
                Ok(())
            }
        });
        committed.map_err(|message| {
            // The commit may or may not have happened: nothing after it is trusted.
            let error = DbError::LogBroken {
                what: "cannot commit",
                path: "postgresql game_log".into(),
                kind: std::io::ErrorKind::Other,
                message,
            };
            tracing::error!(%error, "the game log is broken: no more moves can be made durable; the server stops");
            self.broken = Some(error.clone());
            self.health.send_replace(LogHealth::Broken);
            error
        })
    }

    /// The logs of every game with no record, in step order.
    fn load(&mut self) -> DbResult<Vec<GameLog>> {
        let rows = self.conn.get()?.0.query(
            "SELECT l.game_id, l.entry FROM game_log l
             WHERE NOT EXISTS (SELECT 1 FROM games g WHERE g.id = l.game_id)
             ORDER BY l.game_id, l.step",
            &[],
        )?;
        let mut logs: Vec<GameLog> = Vec::new();
        let mut skipping: Option<String> = None;
        for row in rows {
            let id: String = row.get(0);
            if skipping.as_deref() == Some(id.as_str()) {
                continue;
            }
            let decoded = id
                .parse::<GameId>()
                .map_err(|e| e.to_string())
                .and_then(|game_id| {
                    journal::decode_step(row.get::<_, &[u8]>(1)).map(|step| (game_id, step))
                });
            match decoded {
                Ok((game_id, step)) => match logs.last_mut() {
                    Some(log) if log.game_id == game_id => log.steps.push(step),
                    _ => logs.push(GameLog {
                        game_id,
                        steps: vec![step],
                    }),
                },
                Err(error) => {
                    tracing::error!(game_id = %id, %error, "cannot decode a game's log; skipping the game");
                    if logs.last().is_some_and(|l| l.game_id.to_string() == id) {
                        logs.pop();
                    }
                    skipping = Some(id);
                }
            }
        }
        logs.sort_by_key(|l| l.game_id.0);
        Ok(logs)
    }
}
