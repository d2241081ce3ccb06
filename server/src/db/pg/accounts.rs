//! Accounts, sessions and their pruning on the writer's connection.

use std::collections::HashSet;

use postgres::error::SqlState;
use postgres::{GenericClient, Transaction};

use super::store::in_savepoint;
use super::{ms, Cache};
use crate::db::writer::now_ms;
use crate::db::{
    AccountRow, DbError, DbResult, GuestCursor, PruneBatch, Pruned, SessionRow, Slide,
};
use crate::record::AccountId;

pub(super) const ACCOUNT_BY_ID: &str =
    "SELECT id, name, password_hash, guest, rating, wins, losses, draws
    FROM accounts WHERE id = $1";
pub(super) const ACCOUNT_BY_NAME: &str =
    "SELECT id, name, password_hash, guest, rating, wins, losses, draws
    FROM accounts WHERE lower(name) = lower($1)";

pub(super) fn account_row(row: &postgres::Row) -> AccountRow {
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

pub(super) fn by_id(
    c: &mut impl GenericClient,
    k: &mut Cache,
    id: AccountId,
) -> DbResult<Option<AccountRow>> {
    let select = k.get(c, ACCOUNT_BY_ID)?;
    Ok(c.query_opt(&select, &[&id])?.as_ref().map(account_row))
}

pub(super) fn by_name(
    c: &mut impl GenericClient,
    k: &mut Cache,
    name: &str,
) -> DbResult<Option<AccountRow>> {
    let select = k.get(c, ACCOUNT_BY_NAME)?;
    Ok(c.query_opt(&select, &[&name])?.as_ref().map(account_row))
}

/// Inserts an account (a guest exactly when it has no password) and returns it.
pub(super) fn insert_account(
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

pub(super) fn create_guest(tx: &mut Transaction<'_>, k: &mut Cache) -> DbResult<AccountRow> {
    let mut rng = rand::rng();
    for _ in 0..crate::db::accounts::GUEST_NAME_ATTEMPTS {
        let name = crate::db::accounts::guest_name(&mut rng);
        match in_savepoint(tx, k, |c, k| insert_account(c, k, &name, None)) {
            Err(DbError::NameTaken) => continue,
            other => return other,
        }
    }
    Err(DbError::Postgres("no free guest name".into()))
}

pub(super) fn insert_session(
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

/// A use of the session: its row, its expiry moved as `slide` says.
pub(super) fn session(
    c: &mut impl GenericClient,
    k: &mut Cache,
    token_hash: &[u8; 32],
    now: u64,
    slide: Slide,
) -> DbResult<Option<SessionRow>> {
    let select = k.get(
        c,
        "SELECT a.id, a.name, a.password_hash, a.guest, a.rating, a.wins, a.losses, a.draws,
                s.expires_at
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.token_hash = $1 AND s.expires_at > $2",
    )?;
    let row = c
        .query_opt(&select, &[&&token_hash[..], &ms(now)])?
        .map(|row| SessionRow {
            account: account_row(&row),
            expires_at: row.get::<_, i64>(8).max(0) as u64,
        });
    let Some(mut row) = row else { return Ok(None) };
    if row.expires_at < slide.below {
        let update = k.get(
            c,
            "UPDATE sessions SET expires_at = $2 WHERE token_hash = $1",
        )?;
        c.execute(&update, &[&&token_hash[..], &ms(slide.to)])?;
        row.expires_at = slide.to;
    }
    Ok(Some(row))
}

pub(super) fn prune_sessions(
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

pub(super) fn prune_guests(
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
