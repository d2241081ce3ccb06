//! A step batch's write: one statement (the lease fence and the insert together) in a
//! transaction of its own, so that a batch costs the database three round trips (`BEGIN`,
//! the statement, `COMMIT`) and one commit; as separate statements, the lease check and
//! the `INSERT` cost two more round trips and about a third more of a backend's CPU per
//! batch at a batch of one.
//!
//! The statement runs inside the transaction and not as one implicit transaction of its
//! own, so that its outcome is known whatever happens to it: a statement that fails, or a
//! connection lost while it is out, commits nothing, the batch is refused and its games
//! retry (a restarted PostgreSQL costs a moment of `unavailable`, not the server). Only a
//! `COMMIT` whose answer is lost leaves it unknown whether the batch committed, and then
//! the step log is broken, or, in cluster mode, gives every lease up (`step_log.rs`).
//!
//! The step log's connection bounds every lock wait and statement (`conn::BOUNDED`), so
//! that a lease row locked by another session (an operator's open transaction) costs a
//! refused batch, not a frozen log: after a lock wait the step log writes the batch's
//! games one at a time (`Rows::split`) with a short lock wait (`quick`), and only the
//! locked game waits. A statement that runs too long is refused whole and tried again.

use std::collections::HashSet;

use elementals_protocol::messages::GameId;
use postgres::error::{Severity, SqlState};
use postgres::Client;

use super::lease::Leases;
use super::Cache;
use crate::db::journal::Row;
use crate::db::DbError;

/// A batch's rows, as the statements' columns, and its games.
pub(super) struct Rows {
    games: Vec<GameId>,
    /// Whether each of `games` starts with the batch (its step 0 is in it).
    starts: Vec<bool>,
    ids: Vec<String>,
    steps: Vec<i64>,
    entries: Vec<Vec<u8>>,
}

impl Rows {
    /// The batch's games.
    pub(super) fn games(&self) -> &[GameId] {
        &self.games
    }

    /// The batch as one batch a game.
    pub(super) fn split(self) -> Vec<Rows> {
        let mut one = Vec::with_capacity(self.games.len());
        let mut rows = self.ids.into_iter().zip(self.steps).zip(self.entries);
        let mut ahead = None;
        for (game_id, starts) in self.games.into_iter().zip(self.starts) {
            let id = game_id.to_string();
            let mut game = Rows {
                games: vec![game_id],
                starts: vec![starts],
                ids: Vec::new(),
                steps: Vec::new(),
                entries: Vec::new(),
            };
            // A game's rows follow each other (`of`).
            while let Some(((row_id, step), entry)) = ahead.take().or_else(|| rows.next()) {
                if row_id != id {
                    ahead = Some(((row_id, step), entry));
                    break;
                }
                game.ids.push(row_id);
                game.steps.push(step);
                game.entries.push(entry);
            }
            one.push(game);
        }
        one
    }

    pub(super) fn of(batch: Vec<(GameId, Vec<Row>)>) -> Rows {
        let mut rows = Rows {
            games: Vec::with_capacity(batch.len()),
            starts: Vec::with_capacity(batch.len()),
            ids: Vec::new(),
            steps: Vec::new(),
            entries: Vec::new(),
        };
        for (game_id, steps) in batch {
            rows.games.push(game_id);
            rows.starts
                .push(steps.first().is_some_and(|(step, _)| *step == 0));
            let id = game_id.to_string();
            for (step, bytes) in steps {
                rows.ids.push(id.clone());
                rows.steps.push(step as i64);
                rows.entries.push(bytes);
            }
        }
        rows
    }
}

/// What the fence made of a batch's games.
#[derive(Debug, Default)]
pub(super) struct Fenced {
    /// Their lease not this process's: nothing of them written.
    pub refused: HashSet<GameId>,
    /// New games whose lease the statement took (token 1).
    pub taken: Vec<GameId>,
}

/// Why a batch's statement failed.
pub(super) enum Failed {
    /// Nothing of it was written.
    NotWritten(DbError),
    /// Nothing of it was written: it waited past the lock timeout.
    Waited(DbError),
    /// Nothing of it was written: the session ended before `COMMIT` (PostgreSQL
    /// restarted, or `pg_terminate_backend`), and a new one may take it at once.
    Ended(DbError),
    /// It may or may not have committed.
    Unknown(String),
}

/// A failure before `COMMIT` was sent: the transaction did not commit.
fn not_written(error: postgres::Error) -> Failed {
    let severity = error.as_db_error().and_then(|e| e.parsed_severity());
    match error.code() {
        Some(&SqlState::LOCK_NOT_AVAILABLE) => Failed::Waited(error.into()),
        _ if error.is_closed()
            || io_failed(&error)
            || matches!(severity, Some(Severity::Fatal | Severity::Panic)) =>
        {
            Failed::Ended(error.into())
        }
        _ => Failed::NotWritten(error.into()),
    }
}

/// Whether `error` came of the connection's socket (reset, broken pipe).
fn io_failed(error: &postgres::Error) -> bool {
    std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>())
}

/// The lock wait of a game written alone after its batch waited too long (`Rows::split`):
/// a row that is free is taken at once, so one still locked is the game to hold back.
const QUICK: &str = "SET LOCAL lock_timeout = '100ms'";

/// A failed `COMMIT`: an `ERROR` rolled it back; anything else may have come after it
/// committed.
impl From<postgres::Error> for Failed {
    fn from(error: postgres::Error) -> Failed {
        match error.as_db_error().and_then(|e| e.parsed_severity()) {
            Some(Severity::Error) => Failed::NotWritten(error.into()),
            _ => Failed::Unknown(error.to_string()),
        }
    }
}

/// Without leases: the rows, inserted.
pub(super) fn write_unfenced(
    c: &mut Client,
    cache: &mut Cache,
    rows: &Rows,
    quick: bool,
) -> Result<Fenced, Failed> {
    let insert = cache
        .get(
            c,
            "INSERT INTO game_log (game_id, step, entry)
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bytea[])",
        )
        .map_err(Failed::NotWritten)?;
    let mut tx = c.transaction().map_err(not_written)?;
    if quick {
        tx.batch_execute(QUICK).map_err(not_written)?;
    }
    tx.execute(&insert, &[&rows.ids, &rows.steps, &rows.entries])
        .map_err(not_written)?;
    tx.commit()?;
    Ok(Fenced::default())
}

/// The statement of `write_fenced` (`$1`–`$3` the rows; `$4` the node; `$5` the new games;
/// `$6`, `$7` the held games and their tokens).
pub(super) const WRITE_FENCED: &str = "WITH taken AS (
         INSERT INTO game_leases (game_id, node_id, token, epoch)
         SELECT id, $4, 1, n.epoch
         FROM UNNEST($5::text[]) AS id JOIN node_leases n ON n.node_id = $4
         ON CONFLICT (game_id) DO NOTHING
         RETURNING game_id
     ), locked AS MATERIALIZED (
         SELECT game_id, node_id, token FROM game_leases
         WHERE game_id = ANY($6::text[])
         FOR KEY SHARE
     ), held AS (
         SELECT l.game_id FROM locked l
         JOIN UNNEST($6::text[], $7::bigint[]) AS h(game_id, token)
             ON l.game_id = h.game_id AND l.token = h.token
         WHERE l.node_id = $4
     ), fenced AS (
         SELECT game_id, true AS taken FROM taken
         UNION ALL SELECT game_id, false FROM held
     ), written AS (
         INSERT INTO game_log (game_id, step, entry)
         SELECT r.game_id, r.step, r.entry
         FROM UNNEST($1::text[], $2::bigint[], $3::bytea[]) AS r(game_id, step, entry)
         WHERE r.game_id IN (SELECT game_id FROM fenced)
     )
     SELECT game_id, taken FROM fenced";

/// Cluster mode: takes the leases of the batch's new games (their first step in it, no
/// token held; at the node's epoch), locks those of the others `FOR KEY SHARE` and checks
/// that they name this node with the token it holds, and inserts the rows of the games that pass; all in one
/// statement (`lease.rs` says why the lock keeps a claimed game from being written).
///
/// The leases are locked by key alone (`locked`: `game_id = ANY`, the primary key) and
/// checked after: a prepared statement's generic plan guesses an `UNNEST` at 10 rows and
/// would otherwise join by hash over a scan of every lease, or, with the node's id in
/// the same `WHERE`, read all of the node's leases by the index on (node_id, epoch), once
/// a batch (either most of PostgreSQL's CPU under load). Locking a lease another node
/// has taken meanwhile only delays its next claim by this transaction.
pub(super) fn write_fenced(
    c: &mut Client,
    cache: &mut Cache,
    leases: &Leases,
    rows: &Rows,
    quick: bool,
) -> Result<Fenced, Failed> {
    let write = cache.get(c, WRITE_FENCED).map_err(Failed::NotWritten)?;
    let (mut new, mut held, mut tokens) = (Vec::new(), Vec::new(), Vec::new());
    for (game_id, starts) in rows.games.iter().zip(&rows.starts) {
        match leases.token(game_id) {
            Some(token) => {
                held.push(game_id.to_string());
                tokens.push(token);
            }
            None if *starts => new.push(game_id.to_string()),
            // Neither held nor new: refused.
            None => {}
        }
    }
    let mut tx = c.transaction().map_err(not_written)?;
    if quick {
        tx.batch_execute(QUICK).map_err(not_written)?;
    }
    let passed = tx
        .query(
            &write,
            &[
                &rows.ids,
                &rows.steps,
                &rows.entries,
                &leases.node_id,
                &new,
                &held,
                &tokens,
            ],
        )
        .map_err(not_written)?;
    tx.commit()?;
    let mut fenced = Fenced::default();
    let mut passing = HashSet::with_capacity(passed.len());
    for row in &passed {
        let (id, taken): (String, bool) = (row.get(0), row.get(1));
        if let Ok(game_id) = id.parse::<GameId>() {
            if taken {
                fenced.taken.push(game_id);
            }
            passing.insert(game_id);
        }
    }
    fenced.refused = rows
        .games
        .iter()
        .copied()
        .filter(|game_id| !passing.contains(game_id))
        .collect();
    Ok(fenced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_split_gives_each_game_its_own_rows_in_order() {
        let games: Vec<GameId> = (1..=3u8)
            .map(|n| GameId::new_random_from([n; 16]))
            .collect();
        let batch = vec![
            (games[0], vec![(0, vec![1]), (1, vec![2])]),
            (games[1], vec![(7, vec![3])]),
            (games[2], vec![(0, vec![4]), (1, vec![5]), (2, vec![6])]),
        ];
        let split = Rows::of(batch).split();
        assert_eq!(split.len(), 3);
        type Seen = (Vec<GameId>, Vec<bool>, Vec<i64>, Vec<Vec<u8>>);
        let seen: Vec<Seen> = split
            .into_iter()
            .map(|r| (r.games, r.starts, r.steps, r.entries))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    vec![games[0]],
                    vec![true],
                    vec![0, 1],
                    vec![vec![1], vec![2]]
                ),
                (vec![games[1]], vec![false], vec![7], vec![vec![3]]),
                (
                    vec![games[2]],
                    vec![true],
                    vec![0, 1, 2],
                    vec![vec![4], vec![5], vec![6]]
                ),
            ]
        );
    }
}
