//! Finished games recorded in bulk: a run of a batch's records in a handful of
//! statements, under row locks taken in id order at the start of the batch.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use elementals_protocol::messages::SeatPair;
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::Seat;
use postgres::Transaction;

use super::lease;
use super::record_one::{record_game, recorded_changes};
use super::store::in_savepoint;
use super::{ms, Cache};
use crate::db::writer::{self, pending, Pending, Request};
use crate::db::{games, DbError, DbResult};
use crate::record::{AccountId, GameRecord};

/// A finished game handed to the writer, and where its answer goes.
pub(super) type GameToRecord = (Arc<GameRecord>, Vec<u8>, writer::Reply<Changes>);

pub(super) type Changes = Option<SeatPair<RatingChange>>;

/// Records a run of finished games: in bulk (a handful of statements for the whole run,
/// not a dozen round trips per game), in a savepoint; should that fail, the savepoint is
/// rolled back and each game is recorded alone, so that one bad record fails alone.
pub(super) fn record_run(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    ratings: &mut HashMap<AccountId, f64>,
    run: Vec<GameToRecord>,
    answers: &mut Vec<Pending>,
) {
    if run.is_empty() {
        return;
    }
    let bulk = (|| -> DbResult<Vec<Changes>> {
        let mut savepoint = tx.savepoint("records")?;
        // Rated on a copy: a run rolled back leaves the ratings as they were.
        let mut rated = ratings.clone();
        let changes = record_in_bulk(&mut savepoint, cache, &mut rated, &run)?;
        savepoint.commit()?;
        *ratings = rated;
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
            // The games recorded alone read and write ratings in the database.
            ratings.clear();
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
pub(super) fn record_in_bulk(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    ratings: &mut HashMap<AccountId, f64>,
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

    // The stored ratings of the accounts the run rates that the batch has not read yet.
    let missing: Vec<AccountId> = run
        .iter()
        .filter(|(r, _, _)| r.changes_ratings())
        .flat_map(|(r, _, _)| [r.players.one.account_id, r.players.two.account_id])
        .filter(|id| !ratings.contains_key(id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !missing.is_empty() {
        let select = k.get(c, "SELECT id, rating FROM accounts WHERE id = ANY($1)")?;
        for row in c.query(&select, &[&missing])? {
            ratings.insert(row.get(0), row.get(1));
        }
    }

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

    // The history first: its foreign keys lock the accounts' rows in a share mode that
    // the batch's lock already covers, where the rows the update writes would each take
    // a lock of their own.
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
    if !forget.is_empty() {
        // Their live logs (and leases) are of no use once the records commit, and go
        // with them.
        let delete = k.get(c, lease::FORGET_GAMES)?;
        c.execute(&delete, &[&forget])?;
    }
    Ok(answers)
}

/// A run's rating history rows, column by column (`UNNEST`'s arrays).
#[derive(Default)]
pub(super) struct HistoryColumns {
    account: Vec<AccountId>,
    game: Vec<String>,
    before: Vec<f64>,
    after: Vec<f64>,
    at: Vec<i64>,
}

/// A run's changes to accounts, column by column.
#[derive(Default)]
pub(super) struct UpdateColumns {
    id: Vec<AccountId>,
    rating: Vec<Option<f64>>,
    wins: Vec<i64>,
    losses: Vec<i64>,
    draws: Vec<i64>,
    played: Vec<bool>,
}

/// Locks, in id order, every account whose rating the batch may change, and returns their
/// ratings: another writer's batch takes them in the same order, so neither waits on the
/// other in a cycle, and none changes them until this one commits.
pub(super) fn lock_rated_accounts(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    batch: &[Request],
) -> DbResult<HashMap<AccountId, f64>> {
    let ids: BTreeSet<AccountId> = batch
        .iter()
        .filter_map(|r| match r {
            Request::RecordGame { record, .. } if record.rated => Some(record),
            _ => None,
        })
        .flat_map(|r| [r.players.one.account_id, r.players.two.account_id])
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<AccountId> = ids.into_iter().collect();
    let lock = cache.get(
        tx,
        "SELECT id, rating FROM accounts WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
    )?;
    Ok(tx
        .query(&lock, &[&ids])?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}
