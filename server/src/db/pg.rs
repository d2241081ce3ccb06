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
//! - Failures: a batch of steps that fails before its commit is refused (the games stall
//!   and retry, `LogHealth::Failing`); a commit whose outcome is unknown (the connection
//!   lost during it) breaks the log for good, as a failed `fdatasync` does the file's:
//!   the server stops, and the restart reads what was committed.
//! - The readers' connections are read-only (`default_transaction_read_only`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::Seat;
use postgres::error::SqlState;
use postgres::{Client, GenericClient, NoTls, Statement, Transaction};
use tokio::sync::{mpsc, watch};

use super::journal::{self, LogHealth, Row};
use super::reader::Read;
use super::writer::{self, now_ms, pending, Pending, Request, Store};
use super::{
    games, stored, AccountRow, DbError, DbResult, GuestCursor, HistoryRow, LeaderRow, Page,
    PlayerPage, PruneBatch, Pruned, SessionRow,
};
use crate::record::{AccountId, GameLog, GameRecord};

mod embedded {
    refinery::embed_migrations!("src/db/migrations/postgres");
}
mod transcript_key;

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

fn connect(url: &str) -> DbResult<Client> {
    Client::connect(url, NoTls)
        .map_err(|e| DbError::Postgres(format!("cannot connect to {}: {e}", redact(url))))
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
}

/// Connects, migrates, and starts the writer, the step log and the readers. Connections
/// are made on the threads that own them (the blocking client runs a runtime of its own,
/// which cannot start inside the caller's).
pub(super) fn open(url: &str) -> DbResult<Opened> {
    let url: Arc<str> = Arc::from(url);
    // Migrate first, alone.
    on_thread("db-migrate", {
        let url = Arc::clone(&url);
        move || {
            let mut client = connect(&url)?;
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

    let writer_client = on_thread("db-connect", {
        let url = Arc::clone(&url);
        move || connect(&url)
    })?;
    let requests = writer::spawn(PgStore {
        client: writer_client,
        cache: Cache::default(),
    })?;

    let (health_tx, log_health) = watch::channel(LogHealth::Writable);
    let (journal, log_queue) = mpsc::channel(journal::REQUEST_QUEUE);
    let (ready, started) = std_mpsc::channel();
    let log_url = Arc::clone(&url);
    std::thread::Builder::new()
        .name("game-log".into())
        .spawn(move || match StepLog::open(&log_url, health_tx) {
            Ok(log) => {
                let _ = ready.send(Ok(()));
                log.run(log_queue);
            }
            Err(e) => {
                let _ = ready.send(Err(e));
            }
        })
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
                let client = connect(&url).and_then(|mut c| {
                    c.batch_execute("SET default_transaction_read_only = on")?;
                    Ok(c)
                });
                match client {
                    Ok(client) => {
                        let _ = ready.send(Ok(()));
                        run_reader(client, &queue);
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

/// The writer's connection.
struct PgStore {
    client: Client,
    cache: Cache,
}

impl Store for PgStore {
    fn run_batch(&mut self, batch: Vec<Request>, records: bool) -> bool {
        let mut answers: Vec<Pending> = Vec::with_capacity(batch.len());
        let cache = &mut self.cache;
        let committed = (|| -> DbResult<()> {
            let mut tx = self.client.transaction()?;
            if records {
                lock_rated_accounts(&mut tx, cache, &batch)?;
            }
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
                        record_run(&mut tx, cache, std::mem::take(&mut run), &mut answers);
                        answers.push(execute(&mut tx, cache, other));
                    }
                }
            }
            record_run(&mut tx, cache, run, &mut answers);
            if records {
                crate::game::crash_point("record_uncommitted");
            }
            tx.commit()?;
            Ok(())
        })()
        .map_err(|e| e.to_string());
        for answer in answers {
            answer(&committed);
        }
        committed.is_ok()
    }

    fn prune(&mut self, batch: &PruneBatch) -> DbResult<Pruned> {
        let cache = &mut self.cache;
        let mut tx = self.client.transaction()?;
        let sessions = prune_sessions(&mut tx, cache, batch.sessions_before, batch.limit)?;
        let guests = prune_guests(&mut tx, cache, batch, batch.after)?;
        tx.commit()?;
        Ok(Pruned { sessions, ..guests })
    }

    fn close(self) -> DbResult<()> {
        self.client.close()?;
        Ok(())
    }
}

/// A finished game handed to the writer, and where its answer goes.
type GameToRecord = (Arc<GameRecord>, Vec<u8>, writer::Reply<Changes>);

type Changes = Option<SeatPair<RatingChange>>;

/// Records a run of finished games: in bulk (a handful of statements for the whole run,
/// not a dozen round trips per game), in a savepoint; should that fail, the savepoint is
/// rolled back and each game is recorded alone, so that one bad record fails alone.
fn record_run(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    run: Vec<GameToRecord>,
    answers: &mut Vec<Pending>,
) {
    if run.is_empty() {
        return;
    }
    let bulk = (|| -> DbResult<Vec<Changes>> {
        let mut savepoint = tx.savepoint("records")?;
        let changes = record_in_bulk(&mut savepoint, cache, &run)?;
        savepoint.commit()?;
        Ok(changes)
    })();
    match bulk {
        Ok(changes) => {
            for ((_, _, reply), changes) in run.into_iter().zip(changes) {
                answers.push(pending(reply, Ok(changes)));
            }
        }
        Err(error) => {
            tracing::warn!(%error, games = run.len(), "recording games in bulk failed; recording each alone");
            for (record, stored, reply) in run {
                answers.push(pending(
                    reply,
                    in_savepoint(tx, cache, |c, k| record_game(c, k, &record, &stored)),
                ));
            }
        }
    }
}

/// What `record_game` does, for many games in a few statements. The accounts the run
/// rates are locked (`lock_rated_accounts`), so their ratings read here stay theirs until
/// the commit; each game is rated from where the games before it in the run left them.
fn record_in_bulk(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    run: &[GameToRecord],
) -> DbResult<Vec<Changes>> {
    let ids: Vec<String> = run.iter().map(|(r, _, _)| r.game_id.to_string()).collect();
    let insert = k.get(
        c,
        "INSERT INTO games (id, rated, one_id, two_id, winner, reason, started_at, ended_at,
                            rounds, record)
         SELECT * FROM UNNEST($1::text[], $2::bool[], $3::int8[], $4::int8[], $5::int2[],
                              $6::text[], $7::int8[], $8::int8[], $9::int8[], $10::bytea[])
         ON CONFLICT (id) DO NOTHING
         RETURNING id",
    )?;
    let rated: Vec<bool> = run.iter().map(|(r, _, _)| r.rated).collect();
    let ones: Vec<i64> = run
        .iter()
        .map(|(r, _, _)| r.players.one.account_id)
        .collect();
    let twos: Vec<i64> = run
        .iter()
        .map(|(r, _, _)| r.players.two.account_id)
        .collect();
    let winners: Vec<Option<i16>> = run
        .iter()
        .map(|(r, _, _)| r.result.winner.map(|s| s.number() as i16))
        .collect();
    let reasons: Vec<String> = run
        .iter()
        .map(|(r, _, _)| games::reason_name(r.result.reason))
        .collect();
    let started: Vec<i64> = run.iter().map(|(r, _, _)| ms(r.started_at)).collect();
    let ended: Vec<i64> = run.iter().map(|(r, _, _)| ms(r.ended_at)).collect();
    let rounds: Vec<i64> = run.iter().map(|(r, _, _)| r.rounds.len() as i64).collect();
    let stored: Vec<&[u8]> = run.iter().map(|(_, s, _)| s.as_slice()).collect();
    let inserted: HashSet<String> = c
        .query(
            &insert,
            &[
                &ids, &rated, &ones, &twos, &winners, &reasons, &started, &ended, &rounds, &stored,
            ],
        )?
        .iter()
        .map(|row| row.get(0))
        .collect();

    // The stored ratings of the accounts the run rates.
    let rated_ids: Vec<AccountId> = run
        .iter()
        .filter(|(r, _, _)| r.changes_ratings())
        .flat_map(|(r, _, _)| [r.players.one.account_id, r.players.two.account_id])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let select = k.get(c, "SELECT id, rating FROM accounts WHERE id = ANY($1)")?;
    let mut ratings: HashMap<AccountId, f64> = c
        .query(&select, &[&rated_ids])?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();

    #[derive(Default)]
    struct Update {
        rating: Option<f64>,
        wins: i64,
        losses: i64,
        draws: i64,
        played: bool,
    }
    let mut updates: HashMap<AccountId, Update> = HashMap::new();
    let mut history = HistoryColumns::default();
    let mut forget = Vec::new();
    // The answer of each game first recorded in this run, for a second copy in it.
    let mut first: HashMap<&str, Changes> = HashMap::new();
    let mut answers = Vec::with_capacity(run.len());
    for ((record, _, _), id) in run.iter().zip(&ids) {
        if let Some(changes) = first.get(id.as_str()) {
            answers.push(*changes);
            continue;
        }
        if !inserted.contains(id) {
            // Recorded by an earlier transaction (this process's or another's).
            let changes = recorded_changes(c, k, id)?;
            first.insert(id, changes);
            answers.push(changes);
            continue;
        }
        forget.push(id.clone());
        for player in [&record.players.one, &record.players.two] {
            if player.guest {
                updates.entry(player.account_id).or_default().played = true;
            }
        }
        let accounts = SeatPair::new(record.players.one.account_id, record.players.two.account_id);
        let changes = match record.result.winner {
            Some(winner) if record.changes_ratings() => {
                let (winner_id, loser_id) = (*accounts.get(winner), *accounts.get(winner.other()));
                let stored = |id: AccountId| {
                    ratings
                        .get(&id)
                        .copied()
                        .ok_or_else(|| DbError::Postgres(format!("no account {id}")))
                };
                let (won, lost) = rate_win(stored(winner_id)?, stored(loser_id)?);
                ratings.insert(winner_id, won.after);
                ratings.insert(loser_id, lost.after);
                let w = updates.entry(winner_id).or_default();
                w.rating = Some(won.after);
                w.wins += 1;
                let l = updates.entry(loser_id).or_default();
                l.rating = Some(lost.after);
                l.losses += 1;
                for (account, change) in [(winner_id, won), (loser_id, lost)] {
                    history.account.push(account);
                    history.game.push(id.clone());
                    history.before.push(change.before);
                    history.after.push(change.after);
                    history.at.push(ms(record.ended_at));
                }
                Some(match winner {
                    Seat::One => SeatPair::new(won, lost),
                    Seat::Two => SeatPair::new(lost, won),
                })
            }
            None if games::is_rated_draw(record) => {
                updates.entry(accounts.one).or_default().draws += 1;
                updates.entry(accounts.two).or_default().draws += 1;
                None
            }
            _ => None,
        };
        first.insert(id, changes);
        answers.push(changes);
    }

    if !updates.is_empty() {
        let mut u = UpdateColumns::default();
        let mut ordered: Vec<_> = updates.into_iter().collect();
        ordered.sort_by_key(|(id, _)| *id);
        for (id, update) in ordered {
            u.id.push(id);
            u.rating.push(update.rating);
            u.wins.push(update.wins);
            u.losses.push(update.losses);
            u.draws.push(update.draws);
            u.played.push(update.played);
        }
        // Counters are added to in place; a rating is set only where this run rated it
        // (under the lock), never written back unchanged.
        let update = k.get(
            c,
            "UPDATE accounts a SET rating = COALESCE(u.rating, a.rating),
                 wins = a.wins + u.wins, losses = a.losses + u.losses,
                 draws = a.draws + u.draws, played = a.played OR u.played
             FROM UNNEST($1::int8[], $2::float8[], $3::int8[], $4::int8[], $5::int8[],
                         $6::bool[]) AS u(id, rating, wins, losses, draws, played)
             WHERE a.id = u.id",
        )?;
        c.execute(
            &update,
            &[&u.id, &u.rating, &u.wins, &u.losses, &u.draws, &u.played],
        )?;
    }
    if !history.account.is_empty() {
        let insert = k.get(
            c,
            r#"INSERT INTO rating_history (account_id, game_id, "before", "after", at)
               SELECT * FROM UNNEST($1::int8[], $2::text[], $3::float8[], $4::float8[],
                                    $5::int8[])"#,
        )?;
        c.execute(
            &insert,
            &[
                &history.account,
                &history.game,
                &history.before,
                &history.after,
                &history.at,
            ],
        )?;
    }
    if !forget.is_empty() {
        // Their live logs are of no use once the records commit, and go with them.
        let delete = k.get(c, "DELETE FROM game_log WHERE game_id = ANY($1)")?;
        c.execute(&delete, &[&forget])?;
    }
    Ok(answers)
}

/// A run's rating history rows, column by column (`UNNEST`'s arrays).
#[derive(Default)]
struct HistoryColumns {
    account: Vec<AccountId>,
    game: Vec<String>,
    before: Vec<f64>,
    after: Vec<f64>,
    at: Vec<i64>,
}

/// A run's changes to accounts, column by column.
#[derive(Default)]
struct UpdateColumns {
    id: Vec<AccountId>,
    rating: Vec<Option<f64>>,
    wins: Vec<i64>,
    losses: Vec<i64>,
    draws: Vec<i64>,
    played: Vec<bool>,
}

/// Both seats' changes of a stored game; `None` if it changed no rating.
fn recorded_changes(c: &mut Transaction<'_>, k: &mut Cache, game_id: &str) -> DbResult<Changes> {
    let select = k.get(
        c,
        r#"SELECT one."before", one."after", two."before", two."after"
           FROM games g
           JOIN rating_history one
               ON one.account_id = g.one_id AND one.at = g.ended_at AND one.game_id = g.id
           JOIN rating_history two
               ON two.account_id = g.two_id AND two.at = g.ended_at AND two.game_id = g.id
           WHERE g.id = $1"#,
    )?;
    Ok(c.query_opt(&select, &[&game_id])?.map(|row| {
        SeatPair::new(
            RatingChange {
                before: row.get(0),
                after: row.get(1),
            },
            RatingChange {
                before: row.get(2),
                after: row.get(3),
            },
        )
    }))
}

/// Locks, in id order, every account whose rating the batch may change: another writer's
/// batch takes them in the same order, so neither waits on the other in a cycle.
fn lock_rated_accounts(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    batch: &[Request],
) -> DbResult<()> {
    let ids: BTreeSet<AccountId> = batch
        .iter()
        .filter_map(|r| match r {
            Request::RecordGame { record, .. } if record.rated => Some(record),
            _ => None,
        })
        .flat_map(|r| [r.players.one.account_id, r.players.two.account_id])
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let ids: Vec<AccountId> = ids.into_iter().collect();
    let lock = cache.get(
        tx,
        "SELECT id FROM accounts WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
    )?;
    tx.query(&lock, &[&ids])?;
    Ok(())
}

fn execute(tx: &mut Transaction<'_>, cache: &mut Cache, request: Request) -> Pending {
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
            reply,
        } => pending(reply, session(tx, cache, &token_hash, now)),
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
        Request::Flush { reply } | Request::Shutdown { reply } => pending(reply, Ok(())),
        Request::Prune { reply, .. } => pending(reply, Err(DbError::Closed)),
        #[cfg(test)]
        Request::Hold { .. } => Box::new(|_| {}),
    }
}

/// One write in its own savepoint: on error it is rolled back alone (a failed statement
/// would otherwise abort the whole transaction).
fn in_savepoint<T>(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    write: impl FnOnce(&mut Transaction<'_>, &mut Cache) -> DbResult<T>,
) -> DbResult<T> {
    let mut savepoint = tx.savepoint("request")?;
    let answer = write(&mut savepoint, cache)?;
    savepoint.commit()?;
    Ok(answer)
}

const ACCOUNT_BY_ID: &str = "SELECT id, name, password_hash, guest, rating, wins, losses, draws
    FROM accounts WHERE id = $1";
const ACCOUNT_BY_NAME: &str = "SELECT id, name, password_hash, guest, rating, wins, losses, draws
    FROM accounts WHERE lower(name) = lower($1)";

fn account_row(row: &postgres::Row) -> AccountRow {
    let count = |i: usize| u32::try_from(row.get::<_, i64>(i)).unwrap_or(u32::MAX);
    AccountRow {
        id: row.get(0),
        name: row.get(1),
        password_hash: row.get(2),
        guest: row.get(3),
        rating: row.get(4),
        wins: count(5),
        losses: count(6),
        draws: count(7),
    }
}

fn by_id(c: &mut impl GenericClient, k: &mut Cache, id: AccountId) -> DbResult<Option<AccountRow>> {
    let select = k.get(c, ACCOUNT_BY_ID)?;
    Ok(c.query_opt(&select, &[&id])?.as_ref().map(account_row))
}

fn by_name(c: &mut impl GenericClient, k: &mut Cache, name: &str) -> DbResult<Option<AccountRow>> {
    let select = k.get(c, ACCOUNT_BY_NAME)?;
    Ok(c.query_opt(&select, &[&name])?.as_ref().map(account_row))
}

fn ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Inserts an account (a guest exactly when it has no password) and returns it.
fn insert_account(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    name: &str,
    password_hash: Option<&str>,
) -> DbResult<AccountRow> {
    let insert = k.get(
        c,
        "INSERT INTO accounts (name, password_hash, guest, created_at) VALUES ($1, $2, $3, $4)
         RETURNING id, name, password_hash, guest, rating, wins, losses, draws",
    )?;
    match c.query_one(
        &insert,
        &[
            &name,
            &password_hash,
            &password_hash.is_none(),
            &ms(now_ms()),
        ],
    ) {
        Ok(row) => Ok(account_row(&row)),
        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(DbError::NameTaken),
        Err(e) => Err(e.into()),
    }
}

fn create_guest(tx: &mut Transaction<'_>, k: &mut Cache) -> DbResult<AccountRow> {
    let mut rng = rand::rng();
    for _ in 0..super::accounts::GUEST_NAME_ATTEMPTS {
        let name = super::accounts::guest_name(&mut rng);
        match in_savepoint(tx, k, |c, k| insert_account(c, k, &name, None)) {
            Err(DbError::NameTaken) => continue,
            other => return other,
        }
    }
    Err(DbError::Postgres("no free guest name".into()))
}

fn insert_session(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    token_hash: &[u8; 32],
    account: AccountId,
    expires_at: u64,
    max_sessions: u32,
) -> DbResult<()> {
    let insert = k.get(
        c,
        "INSERT INTO sessions (token_hash, account_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4)",
    )?;
    c.execute(
        &insert,
        &[&&token_hash[..], &account, &ms(now_ms()), &ms(expires_at)],
    )?;
    // The new session is kept, and the newest others up to the limit.
    let trim = k.get(
        c,
        "DELETE FROM sessions WHERE account_id = $1 AND token_hash <> $2
         AND token_hash NOT IN (
             SELECT token_hash FROM sessions WHERE account_id = $1 AND token_hash <> $2
             ORDER BY created_at DESC, seq DESC LIMIT $3)",
    )?;
    let others = i64::from(max_sessions.max(1)) - 1;
    c.execute(&trim, &[&account, &&token_hash[..], &others])?;
    Ok(())
}

fn session(
    c: &mut impl GenericClient,
    k: &mut Cache,
    token_hash: &[u8; 32],
    now: u64,
) -> DbResult<Option<SessionRow>> {
    let select = k.get(
        c,
        "SELECT a.id, a.name, a.password_hash, a.guest, a.rating, a.wins, a.losses, a.draws,
                s.expires_at
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.token_hash = $1 AND s.expires_at > $2",
    )?;
    Ok(c.query_opt(&select, &[&&token_hash[..], &ms(now)])?
        .map(|row| SessionRow {
            account: account_row(&row),
            expires_at: row.get::<_, i64>(8).max(0) as u64,
        }))
}

/// `games::record` for PostgreSQL: the accounts are already locked (`lock_rated_accounts`).
fn record_game(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    record: &GameRecord,
    stored: &[u8],
) -> DbResult<Option<SeatPair<RatingChange>>> {
    let game_id = record.game_id.to_string();
    let insert = k.get(
        c,
        "INSERT INTO games (id, rated, one_id, two_id, winner, reason, started_at, ended_at,
                            rounds, record)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (id) DO NOTHING",
    )?;
    let winner: Option<i16> = record.result.winner.map(|s| s.number() as i16);
    let inserted = c.execute(
        &insert,
        &[
            &game_id,
            &record.rated,
            &record.players.one.account_id,
            &record.players.two.account_id,
            &winner,
            &games::reason_name(record.result.reason),
            &ms(record.started_at),
            &ms(record.ended_at),
            &(record.rounds.len() as i64),
            &stored,
        ],
    )?;
    if inserted == 0 {
        // Already recorded (by this process or another): change nothing.
        return recorded_changes(c, k, &game_id);
    }
    // Its live log is of no use once the record commits, and goes with it.
    let forget = k.get(c, "DELETE FROM game_log WHERE game_id = $1")?;
    c.execute(&forget, &[&game_id])?;
    let played = k.get(c, "UPDATE accounts SET played = TRUE WHERE id = $1")?;
    for player in [&record.players.one, &record.players.two] {
        if player.guest {
            c.execute(&played, &[&player.account_id])?;
        }
    }
    let accounts = SeatPair::new(record.players.one.account_id, record.players.two.account_id);
    match record.result.winner {
        Some(winner) if record.changes_ratings() => {
            rate(c, k, &game_id, record.ended_at, accounts, winner).map(Some)
        }
        None if games::is_rated_draw(record) => {
            let draw = k.get(c, "UPDATE accounts SET draws = draws + 1 WHERE id = $1")?;
            c.execute(&draw, &[&accounts.one])?;
            c.execute(&draw, &[&accounts.two])?;
            Ok(None)
        }
        _ => Ok(None),
    }
}

fn rate(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    game_id: &str,
    at: u64,
    accounts: SeatPair<AccountId>,
    winner: Seat,
) -> DbResult<SeatPair<RatingChange>> {
    if accounts.one == accounts.two {
        return Err(DbError::Postgres(format!(
            "game {game_id}: account {} cannot be rated against itself",
            accounts.one
        )));
    }
    let winner_id = *accounts.get(winner);
    let loser_id = *accounts.get(winner.other());
    // Locked by this transaction: no other writer changes them until it commits.
    let rating = k.get(c, "SELECT rating FROM accounts WHERE id = $1")?;
    let stored = |c: &mut Transaction<'_>, id: AccountId| -> DbResult<f64> {
        c.query_opt(&rating, &[&id])?
            .map(|row| row.get(0))
            .ok_or_else(|| DbError::Postgres(format!("no account {id}")))
    };
    let (won, lost) = rate_win(stored(c, winner_id)?, stored(c, loser_id)?);
    let win = k.get(
        c,
        "UPDATE accounts SET rating = $1, wins = wins + 1 WHERE id = $2",
    )?;
    c.execute(&win, &[&won.after, &winner_id])?;
    let loss = k.get(
        c,
        "UPDATE accounts SET rating = $1, losses = losses + 1 WHERE id = $2",
    )?;
    c.execute(&loss, &[&lost.after, &loser_id])?;
    let history = k.get(
        c,
        r#"INSERT INTO rating_history (account_id, game_id, "before", "after", at)
           VALUES ($1, $2, $3, $4, $5)"#,
    )?;
    c.execute(
        &history,
        &[&winner_id, &game_id, &won.before, &won.after, &ms(at)],
    )?;
    c.execute(
        &history,
        &[&loser_id, &game_id, &lost.before, &lost.after, &ms(at)],
    )?;
    Ok(match winner {
        Seat::One => SeatPair::new(won, lost),
        Seat::Two => SeatPair::new(lost, won),
    })
}

fn prune_sessions(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    before: u64,
    limit: u32,
) -> DbResult<usize> {
    let delete = k.get(
        c,
        "DELETE FROM sessions WHERE token_hash IN (
             SELECT token_hash FROM sessions WHERE expires_at <= $1 LIMIT $2)",
    )?;
    Ok(c.execute(&delete, &[&ms(before), &i64::from(limit)])? as usize)
}

fn prune_guests(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    batch: &PruneBatch,
    after: GuestCursor,
) -> DbResult<Pruned> {
    let select = k.get(
        c,
        "SELECT id, created_at FROM accounts
         WHERE guest AND NOT played AND created_at < $1 AND (created_at, id) > ($2, $3)
         ORDER BY created_at, id LIMIT $4",
    )?;
    let candidates: Vec<(AccountId, i64)> = c
        .query(
            &select,
            &[
                &ms(batch.guests_created_before),
                &after.0,
                &after.1,
                &i64::from(batch.limit),
            ],
        )?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let alive = k.get(
        c,
        "SELECT 1 FROM sessions WHERE account_id = $1 AND expires_at > $2 LIMIT 1",
    )?;
    let drop_sessions = k.get(c, "DELETE FROM sessions WHERE account_id = $1")?;
    // `NOT played` again: a game recorded meanwhile by another process keeps its guest.
    let drop_guest = k.get(
        c,
        "DELETE FROM accounts WHERE id = $1 AND guest AND NOT played",
    )?;
    let keep: &HashSet<AccountId> = &batch.keep;
    let mut guests = 0;
    for (id, _) in &candidates {
        if keep.contains(id)
            || c.query_opt(&alive, &[id, &ms(batch.sessions_after)])?
                .is_some()
        {
            continue;
        }
        c.execute(&drop_sessions, &[id])?;
        guests += c.execute(&drop_guest, &[id])? as usize;
    }
    let next = (candidates.len() == batch.limit as usize)
        .then(|| candidates.last().map(|(id, at)| (*at, *id)))
        .flatten();
    Ok(Pruned {
        sessions: 0,
        guests,
        next,
    })
}

fn run_reader(mut client: Client, queue: &Mutex<mpsc::Receiver<Read>>) {
    let mut cache = Cache::default();
    loop {
        let read = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .blocking_recv();
        let Some(read) = read else {
            return;
        };
        match read {
            Read::Leaderboard { page, reply } => {
                let _ = reply.send(leaderboard(&mut client, &mut cache, page));
            }
            Read::PlayerPage { name, page, reply } => {
                let _ = reply.send(player_page(&mut client, &mut cache, &name, page));
            }
            Read::GameRecord { game_id, reply } => {
                let _ = reply.send(stored_record(&mut client, &mut cache, &game_id));
            }
            Read::PlayerGames { name, page, reply } => {
                let _ = reply.send(super::history::player_games_pg(&mut client, &name, page));
            }
            Read::StoredGame { game_id, reply } => {
                let _ = reply.send(super::history::stored_game_pg(&mut client, &game_id));
            }
        }
    }
}

fn leaderboard(c: &mut Client, k: &mut Cache, page: Page) -> DbResult<Vec<LeaderRow>> {
    // Ties by name whatever its case, as SQLite's NOCASE column orders them. The
    // computer's accounts (`bots`) play unrated only: not listed.
    let select = k.get(
        c,
        "SELECT name, rating, wins, losses, draws FROM accounts
         WHERE NOT guest AND lower(name) NOT LIKE 'bot-%'
         ORDER BY rating DESC, lower(name), name LIMIT $1 OFFSET $2",
    )?;
    let count =
        |row: &postgres::Row, i: usize| u32::try_from(row.get::<_, i64>(i)).unwrap_or(u32::MAX);
    Ok(
        c.query(&select, &[&i64::from(page.limit), &i64::from(page.offset)])?
            .iter()
            .map(|row| LeaderRow {
                name: row.get(0),
                rating: row.get(1),
                wins: count(row, 2),
                losses: count(row, 3),
                draws: count(row, 4),
            })
            .collect(),
    )
}

fn player_page(
    c: &mut Client,
    k: &mut Cache,
    name: &str,
    page: Page,
) -> DbResult<Option<PlayerPage>> {
    let Some(account) = by_name(c, k, name)?.filter(|a| !a.guest) else {
        return Ok(None);
    };
    let select = k.get(
        c,
        r#"SELECT game_id, "before", "after", at FROM rating_history
           WHERE account_id = $1 ORDER BY at DESC, game_id DESC LIMIT $2 OFFSET $3"#,
    )?;
    let history = c
        .query(
            &select,
            &[&account.id, &i64::from(page.limit), &i64::from(page.offset)],
        )?
        .iter()
        .map(|row| HistoryRow {
            game_id: row.get(0),
            before: row.get(1),
            after: row.get(2),
            at: row.get::<_, i64>(3).max(0) as u64,
        })
        .collect();
    Ok(Some(PlayerPage {
        name: account.name,
        rating: account.rating,
        wins: account.wins,
        losses: account.losses,
        draws: account.draws,
        history,
    }))
}

fn stored_record(
    c: &mut Client,
    k: &mut Cache,
    game_id: &GameId,
) -> DbResult<Option<serde_json::Value>> {
    let select = k.get(c, "SELECT record FROM games WHERE id = $1")?;
    match c.query_opt(&select, &[&game_id.to_string()])? {
        Some(row) => stored::to_json(game_id, row.get::<_, &[u8]>(0)).map(Some),
        None => Ok(None),
    }
}

/// The live games' step log in `game_log`.
struct StepLog {
    client: Client,
    insert: Statement,
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
    fn open(url: &str, health: watch::Sender<LogHealth>) -> DbResult<StepLog> {
        let mut client = connect(url)?;
        let insert = client.prepare(
            "INSERT INTO game_log (game_id, step, entry)
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bytea[])",
        )?;
        let next = client
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
            client,
            insert,
            next,
            health,
            broken: None,
            #[cfg(any(test, feature = "test-hooks"))]
            fail_commits: std::env::var_os("ELEMENTALS_FAIL_SYNC").is_some(),
        })
    }

    fn run(mut self, mut queue: mpsc::Receiver<journal::Request>) {
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
        let _ = self.client.close();
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
        let outcome = self.write(&ids, &steps, &entries);
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
        let mut tx = self.client.transaction()?;
        tx.execute(&self.insert, &[&ids, &steps, &entries])?;
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
        let rows = self.client.query(
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
