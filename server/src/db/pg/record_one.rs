//! A finished game recorded alone (when its run fails in bulk), and the answer for a game
//! already recorded.

use elementals_protocol::messages::SeatPair;
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::Seat;
use postgres::Transaction;

use super::lease;
use super::records::Changes;
use super::{ms, Cache};
use crate::db::{games, DbError, DbResult};
use crate::record::{AccountId, GameRecord};

/// Both seats' changes of a stored game; `None` if it changed no rating.
pub(super) fn recorded_changes(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    game_id: &str,
) -> DbResult<Changes> {
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

/// `games::record` for PostgreSQL: the accounts are already locked (`lock_rated_accounts`).
pub(super) fn record_game(
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
    // Its live log (and lease) is of no use once the record commits, and goes with it.
    let forget = k.get(c, lease::FORGET_GAMES)?;
    c.execute(&forget, &[&std::slice::from_ref(&game_id)])?;
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

/// `games::rate` for PostgreSQL, under the batch's row locks; only for a record that
/// `changes_ratings` (two different accounts).
pub(super) fn rate(
    c: &mut Transaction<'_>,
    k: &mut Cache,
    game_id: &str,
    at: u64,
    accounts: SeatPair<AccountId>,
    winner: Seat,
) -> DbResult<SeatPair<RatingChange>> {
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
