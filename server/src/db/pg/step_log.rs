//! The live games' step log in `game_log`, on a connection and a thread of its own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use elementals_protocol::messages::GameId;

use tokio::sync::{mpsc, watch};

mod wake;

use super::claim::{self, Claim};
use super::conn::Conn;
use super::lease::{self, Leases};
use super::step_write::{self, Failed};
use super::Cache;
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
    /// Set while a request is handled: a stalled database shows as time (`/healthz`).
    busy: Arc<journal::Busy>,
    broken: Option<DbError>,
    /// Games whose steps waited past the lock timeout (their lease row locked by another
    /// session): written alone, with a short lock wait, so that they hold up no batch.
    waiting: HashSet<GameId>,
    /// Cluster mode: the leases this process holds; every batch is fenced by them.
    leases: Option<Arc<Leases>>,
    /// The shortest time from the start of one batch to the start of the next
    /// (`--game-log-sync-us`).
    sync_interval: Duration,
    /// Makes every commit's answer lost (the commit done), for the tests of a broken log (with the
    /// `test-hooks` feature, set by the `ELEMENTALS_FAIL_SYNC` environment variable).
    #[cfg(any(test, feature = "test-hooks"))]
    fail_commits: bool,
    /// Makes the next commit's answer lost once this file exists, which it removes (with
    /// the `test-hooks` feature, the `ELEMENTALS_FAIL_SYNC_WHEN` environment variable).
    #[cfg(any(test, feature = "test-hooks"))]
    fail_when: Option<std::path::PathBuf>,
    /// Holds every batch, as a stalled connection would, while this file exists (with the
    /// `test-hooks` feature, the `ELEMENTALS_STALL_LOG_WHEN` environment variable).
    #[cfg(any(test, feature = "test-hooks"))]
    stall_when: Option<std::path::PathBuf>,
}

impl StepLog {
    pub(super) fn open(
        url: Arc<str>,
        health: watch::Sender<LogHealth>,
        busy: Arc<journal::Busy>,
        leases: Option<Arc<Leases>>,
        sync_interval: Duration,
    ) -> DbResult<StepLog> {
        let mut conn = Conn::open(url, "game log", super::conn::BOUNDED)?;
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
            busy,
            broken: None,
            waiting: HashSet::new(),
            leases,
            sync_interval,
            #[cfg(any(test, feature = "test-hooks"))]
            fail_commits: std::env::var_os("ELEMENTALS_FAIL_SYNC").is_some(),
            #[cfg(any(test, feature = "test-hooks"))]
            fail_when: std::env::var_os("ELEMENTALS_FAIL_SYNC_WHEN").map(Into::into),
            #[cfg(any(test, feature = "test-hooks"))]
            stall_when: std::env::var_os("ELEMENTALS_STALL_LOG_WHEN").map(Into::into),
        })
    }

    pub(super) fn run(mut self, mut queue: mpsc::Receiver<journal::Request>) {
        let mut held: Option<journal::Request> = None;
        // When the last batch began.
        let mut last_batch: Option<Instant> = None;
        loop {
            let Some(request) = held.take().or_else(|| queue.blocking_recv()) else {
                break;
            };
            self.busy.start();
            let stop = matches!(request, journal::Request::Shutdown { .. });
            match request {
                journal::Request::Append {
                    game_id,
                    rows,
                    reply,
                } => {
                    // Commits are coming fast: let the appends of the rest of the interval
                    // gather and share this one's commit. A commit costs PostgreSQL about
                    // as much CPU whatever its rows (its WAL flush most of it), so its CPU
                    // under load follows the commits a second, which this bounds per node.
                    if let Some(last) = last_batch {
                        std::thread::sleep(
                            (last + self.sync_interval).saturating_duration_since(Instant::now()),
                        );
                    }
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
                    last_batch = Some(Instant::now());
                    if let Some(leases) = &self.leases {
                        leases.appending.start();
                    }
                    self.append(batch);
                    if let Some(leases) = &self.leases {
                        leases.appending.stop();
                    }
                }
                journal::Request::Forget { game_id } => self.forget(&game_id),
                journal::Request::LoadSome { games, reply } => {
                    let loaded = match self.leases.is_some() {
                        true => self.wake(&games),
                        false => self.load_some(&games),
                    };
                    let _ = reply.send(loaded);
                }
                journal::Request::Load { reply, .. } => {
                    let loaded = match self.leases.is_some() {
                        true => self.claim(Claim::Startup),
                        false => self.load(),
                    };
                    let _ = reply.send(loaded);
                }
                journal::Request::ClaimLobby { reply } => {
                    let _ = reply.send(self.claim_lobby());
                }
                journal::Request::Claim { reply } => {
                    let claimed = self.claim(Claim::Lapsed);
                    // Every second, whether or not a game moves: in cluster mode the log's
                    // health (`/healthz`) follows the database within a claim's interval.
                    self.note_health(claimed.is_ok());
                    let _ = reply.send(claimed);
                }
                // Every append before it was answered after its commit.
                journal::Request::Flush { reply } => {
                    let _ = reply.send(Ok(()));
                }
                journal::Request::Shutdown { reply } => {
                    let _ = reply.send(Ok(()));
                }
            }
            self.busy.stop();
            if stop {
                break;
            }
        }
        let _ = self.conn.close();
    }

    /// Its rows went with the transaction that recorded the game (or, for a game whose
    /// lease was lost, they are another node's now).
    fn forget(&mut self, game_id: &GameId) {
        self.next.remove(game_id);
        self.waiting.remove(game_id);
        if let Some(leases) = &self.leases {
            leases.forget(game_id);
        }
    }

    /// The log can be written (or not) as of the last transaction: `Writable` and
    /// `Failing` follow it, `Broken` stays.
    fn note_health(&self, writable: bool) {
        let (from, to) = match writable {
            true => (LogHealth::Failing, LogHealth::Writable),
            false => (LogHealth::Writable, LogHealth::Failing),
        };
        self.health.send_if_modified(|h| {
            let change = *h == from;
            if change {
                *h = to;
            }
            change
        });
    }

    /// One transaction for every append of the batch that is in order (and, in cluster
    /// mode, whose game's lease this process holds).
    fn append(&mut self, batch: Vec<(GameId, Vec<Row>, writer::Reply<()>)>) {
        #[cfg(any(test, feature = "test-hooks"))]
        while self.stall_when.as_ref().is_some_and(|file| file.exists()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut next = HashMap::new();
        let mut accepted = Vec::with_capacity(batch.len());
        let mut games = Vec::with_capacity(batch.len());
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
            games.push((game_id, rows));
            accepted.push((game_id, reply));
        }
        if accepted.is_empty() {
            return;
        }
        let outcome = match self.write(games) {
            Err(error) if !matches!(error, DbError::LogBroken { .. }) => {
                self.conn.settle(Err(error))
            }
            outcome => outcome,
        };
        match &outcome {
            Ok(written) => {
                next.retain(|game_id, _| {
                    !written.refused.contains(game_id) && !written.failed.contains_key(game_id)
                });
                self.next.extend(next);
                self.note_health(true);
            }
            Err(DbError::LogBroken { .. }) => {}
            Err(_) => self.note_health(false),
        }
        for (game_id, reply) in accepted {
            let answer = match &outcome {
                Ok(written) if written.refused.contains(&game_id) => {
                    Err(DbError::LeaseLost { game_id })
                }
                Ok(written) => match written.failed.get(&game_id) {
                    Some(error) => Err(error.clone()),
                    None => Ok(()),
                },
                // Every lease given up (`break_log`): this game's too.
                Err(DbError::LeaseLost { .. }) => Err(DbError::LeaseLost { game_id }),
                Err(error) => Err(error.clone()),
            };
            let _ = reply.send(answer);
        }
    }

    /// Writes the games' rows as one statement, its own transaction; returns the games
    /// refused for want of their lease (cluster mode), of which nothing is written. A
    /// batch that waited past its lock timeout is written again one game at
    /// a time (`step_write.rs`): a game that still cannot be written is returned, with
    /// why, and is written alone from then on (`waiting`) until it is written.
    fn write(&mut self, games: Vec<(GameId, Vec<Row>)>) -> DbResult<Written> {
        let (alone, together): (Vec<_>, Vec<_>) = games
            .into_iter()
            .partition(|(game_id, _)| self.waiting.contains(game_id));
        let mut written = Written::default();
        if !together.is_empty() {
            let rows = step_write::Rows::of(together);
            let mut outcome = self.write_rows(&rows, false);
            if matches!(outcome, Err(Failed::Ended(_))) {
                // The session ended between two batches (PostgreSQL restarted, an
                // operator's `pg_terminate_backend`): nothing was written, and a new
                // connection takes the batch at once rather than answer `unavailable`.
                self.conn.ended();
                outcome = self.write_rows(&rows, false);
            }
            match outcome {
                Ok(refused) => written.refused = refused,
                Err(Failed::Waited(error)) => {
                    let games = rows.games().len();
                    tracing::warn!(%error, games, "a step batch waited too long: its games are written one at a time");
                    self.write_alone(rows.split(), &mut written)?;
                }
                Err(Failed::NotWritten(error) | Failed::Ended(error)) => return Err(error),
                Err(Failed::Unknown(message)) => return Err(self.break_log(message)),
            }
        }
        let alone = alone
            .into_iter()
            .map(|game| step_write::Rows::of(vec![game]));
        self.write_alone(alone, &mut written)?;
        Ok(written)
    }

    /// Writes each of `games` (a game's rows) in a transaction of its own, with a short
    /// lock wait, into `written`.
    fn write_alone(
        &mut self,
        games: impl IntoIterator<Item = step_write::Rows>,
        written: &mut Written,
    ) -> DbResult<()> {
        for one in games {
            let game_id = one.games()[0];
            match self.write_rows(&one, true) {
                Ok(refused) => {
                    if self.waiting.remove(&game_id) {
                        tracing::info!(%game_id, "the game's steps are written again");
                    }
                    written.refused.extend(refused);
                }
                Err(Failed::Waited(error)) => {
                    if self.waiting.insert(game_id) {
                        tracing::warn!(%game_id, %error, "the game's lease row is locked: the game waits, alone");
                    }
                    written.failed.insert(game_id, self.settled(error));
                }
                Err(Failed::NotWritten(error) | Failed::Ended(error)) => {
                    written.failed.insert(game_id, self.settled(error));
                }
                Err(Failed::Unknown(message)) => return Err(self.break_log(message)),
            }
        }
        Ok(())
    }

    /// One transaction of `rows` (`quick`: with a short lock wait); the games refused for
    /// want of their lease.
    fn write_rows(
        &mut self,
        rows: &step_write::Rows,
        quick: bool,
    ) -> Result<HashSet<GameId>, Failed> {
        self.new_epoch().map_err(Failed::NotWritten)?;
        let written = match self.conn.get() {
            // Not sent: nothing written; the batch is refused and its games retry.
            Err(error) => return Err(Failed::NotWritten(error)),
            Ok((client, cache)) => match &self.leases {
                Some(leases) => step_write::write_fenced(client, cache, leases, rows, quick),
                None => step_write::write_unfenced(client, cache, rows, quick),
            },
        };
        #[cfg(any(test, feature = "test-hooks"))]
        let fail = self.fail_commits
            || (written.is_ok()
                && self
                    .fail_when
                    .as_ref()
                    .is_some_and(|file| std::fs::remove_file(file).is_ok()));
        #[cfg(not(any(test, feature = "test-hooks")))]
        let fail = false;
        let fenced = match written {
            // The test hook: the statement committed, its answer is lost (as when the
            // connection drops during it).
            Ok(_) if fail => {
                return Err(Failed::Unknown(
                    "the commit's answer was lost (test hook)".to_owned(),
                ))
            }
            Ok(fenced) => fenced,
            Err(failed) => return Err(failed),
        };
        if let Some(leases) = &self.leases {
            // Held from the commit on: a batch rolled back takes them again at its retry.
            for game_id in fenced.taken {
                leases.hold(game_id, 1);
            }
            for game_id in &fenced.refused {
                tracing::warn!(%game_id, "the game's lease is another node's: the game stops here");
                leases.lose(*game_id);
            }
        }
        Ok(fenced.refused)
    }

    /// `error`, or `Unavailable` if it came of a lost connection (`Conn::settle`).
    fn settled(&self, error: DbError) -> DbError {
        self.conn
            .settle::<()>(Err(error))
            .err()
            .unwrap_or_else(|| DbError::Unavailable("the game log's connection".to_owned()))
    }

    /// A commit whose outcome is unknown. In cluster mode the node gives every lease up:
    /// its games stop here (the lease loop sounds their alarms) and the node's epoch starts
    /// again, so that they lapse at once and are claimed, here or elsewhere, from their
    /// logs, which say what the commit did; the answer is `LeaseLost` (for every game of
    /// the batch). Otherwise nothing after it is trusted, and the log is broken for good.
    fn break_log(&mut self, message: String) -> DbError {
        if let Some(leases) = &self.leases {
            let games = leases.give_up_all();
            tracing::error!(%message, games, "a commit's outcome is unknown: this node gives up every lease; its games are claimed again from their logs");
            self.next.clear();
            self.waiting.clear();
            // The session the commit was lost on is not to be trusted with the next one.
            self.conn.ended();
            if let Err(error) = self.new_epoch() {
                tracing::warn!(%error, "cannot start a new epoch yet; trying again before the next write or claim");
            }
            return DbError::LeaseLost {
                game_id: crate::msg::LOBBY_LEASE,
            };
        }
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
    }

    /// Starts the node's next epoch if one is owed (`Leases::lapse_all`: the leases lapsed
    /// on the node's clock, or `break_log` gave them up): every lease of the last one
    /// lapses at once. Before every write and claim, so nothing is written or claimed
    /// under the old epoch.
    fn new_epoch(&mut self) -> DbResult<()> {
        let Some(leases) = self.leases.clone().filter(|l| l.take_epoch_owed()) else {
            return Ok(());
        };
        let started = (|| {
            let (client, cache) = self.conn.get()?;
            let statement = cache.get(client, claim::NEW_EPOCH)?;
            client.execute(&statement, &[&leases.node_id])?;
            Ok(())
        })();
        if let Err(error) = self.conn.settle(started) {
            leases.owe_epoch();
            return Err(error);
        }
        tracing::info!("a new epoch: the games of the last one have lapsed");
        Ok(())
    }

    /// Claims the lobby's lease if it is free and this process neither holds it nor still
    /// runs the lobby it lost; its token (the lobby's generation) once held.
    fn claim_lobby(&mut self) -> DbResult<Option<i64>> {
        let Some(leases) = self.leases.clone() else {
            return Ok(None);
        };
        if leases.has(&crate::msg::LOBBY_LEASE) {
            return Ok(None);
        }
        let claimed = (|| {
            let (client, cache) = self.conn.get()?;
            let mut tx = client.transaction()?;
            let token = claim::claim_lobby(&mut tx, cache, &leases.node_id)?;
            tx.commit()?;
            Ok(token)
        })();
        let token = self.conn.settle(claimed)?;
        if let Some(token) = token {
            leases.hold(crate::msg::LOBBY_LEASE, token);
        }
        Ok(token)
    }

    /// Claims leases (`which`) and reads the claimed games' logs in the same transaction:
    /// whatever their last node committed is in them, and it can commit nothing more.
    fn claim(&mut self, which: Claim) -> DbResult<Vec<GameLog>> {
        let Some(leases) = self.leases.clone() else {
            return Ok(Vec::new());
        };
        self.new_epoch()?;
        let claimed = (|| {
            let (client, cache) = self.conn.get()?;
            let mut tx = client.transaction()?;
            let taken = claim::take(&mut tx, cache, &leases, which)?;
            // A game already running here (its lease lapsed while renewals failed) goes
            // on with the new token; the others are to be restored.
            let (running, restore): (Vec<_>, Vec<_>) = taken.into_iter().partition(|(id, _)| {
                id.parse::<GameId>()
                    .is_ok_and(|game_id| leases.token(&game_id).is_some())
            });
            let ids: Vec<&str> = restore.iter().map(|(id, _)| id.as_str()).collect();
            let logs = logs_in(&mut tx, cache, &ids)?;
            let taken: Vec<(GameId, i64)> = running
                .iter()
                .chain(&restore)
                .filter_map(|(id, token)| Some((id.parse::<GameId>().ok()?, *token)))
                .collect();
            // From before the commit, so that a renewal finding a running game's old token
            // gone (its row committed with the new one, not yet held) takes it for lost at
            // no point.
            leases.claiming(taken.iter().map(|(game_id, _)| *game_id));
            tx.commit()?;
            leases.after_claim_commit();
            Ok((taken, logs))
        })();
        // Held from the commit on (a claim whose commit failed leaves leases nobody
        // renews: they lapse again and are claimed again).
        let (taken, logs) = match self.conn.settle(claimed) {
            Ok(claimed) => claimed,
            Err(error) => {
                leases.claimed([]);
                return Err(error);
            }
        };
        leases.claimed(taken);
        self.learn_next(&logs);
        Ok(logs)
    }

    /// The logs of every game with no record, in step order.
    fn load(&mut self) -> DbResult<Vec<GameLog>> {
        let rows = self.conn.get()?.0.query(
            "SELECT l.game_id, l.entry FROM game_log l
             WHERE NOT EXISTS (SELECT 1 FROM games g WHERE g.id = l.game_id)
               AND NOT EXISTS (SELECT 1 FROM game_wakeups w WHERE w.game_id = l.game_id)
             ORDER BY l.game_id, l.step",
            &[],
        )?;
        Ok(decode_logs(rows))
    }

    /// The logs of `games` (hibernated ones being woken), in step order; each game's next
    /// step is where its log ends (the step log forgot it as it went to sleep).
    fn load_some(&mut self, games: &[GameId]) -> DbResult<Vec<GameLog>> {
        let ids: Vec<String> = games.iter().map(ToString::to_string).collect();
        let rows = self.conn.get()?.0.query(
            "SELECT game_id, entry FROM game_log WHERE game_id = ANY($1)
             ORDER BY game_id, step",
            &[&ids],
        )?;
        let logs = decode_logs(rows);
        self.learn_next(&logs);
        Ok(logs)
    }

    /// Each of `logs`' games runs here from now on: its next step is where its log ends.
    fn learn_next(&mut self, logs: &[GameLog]) {
        for log in logs {
            let after = log.steps.last().map_or(0, |s| s.step + 1);
            self.next.insert(log.game_id, after);
        }
    }
}

/// What became of a batch: the games refused for want of their lease, and those not
/// written (after a lock wait), to retry.
#[derive(Default)]
struct Written {
    refused: HashSet<GameId>,
    failed: HashMap<GameId, DbError>,
}

/// The statement of `logs_in`: `$1` the games.
pub(super) const LOGS_IN: &str = "SELECT game_id, entry FROM game_log WHERE game_id = ANY($1)
     ORDER BY game_id, step";

/// The logs of `ids`, read in the transaction that took their leases (a claim, a wake).
fn logs_in(
    tx: &mut postgres::Transaction<'_>,
    cache: &mut Cache,
    ids: &[&str],
) -> DbResult<Vec<GameLog>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let select = cache.get(tx, LOGS_IN)?;
    Ok(decode_logs(tx.query(&select, &[&ids])?))
}

/// Rows of (game id, entry) in game and step order, as logs; a game whose log cannot be
/// decoded is left out (and logged).
fn decode_logs(rows: Vec<postgres::Row>) -> Vec<GameLog> {
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
    logs
}
