//! Accounts and sessions, and the pages read from them: the leaderboard and a player's page.
//!
//! Names are compared case-insensitively by the column's `COLLATE NOCASE`, so "Ann" and
//! "ann" are one account and the UNIQUE constraint is what refuses a taken name.

use rand::Rng;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::schema::{ms_from_sql, ms_to_sql};
use super::writer::now_ms;
use super::{AccountRow, DbError, DbResult, HistoryRow, LeaderRow, PlayerPage, SessionRow};
use crate::record::AccountId;

/// A player page shows at most this many rating changes, newest first.
const HISTORY_LIMIT: u32 = 200;

/// Attempts at a free random guest name before giving up.
const GUEST_NAME_ATTEMPTS: u32 = 32;

/// The columns [`account_row`] reads, in its order.
const ACCOUNT_COLUMNS: &str = "a.id, a.name, a.password_hash, a.guest, a.rating, a.wins, \
                               a.losses, a.draws";

fn account_row(row: &Row<'_>) -> rusqlite::Result<AccountRow> {
    Ok(AccountRow {
        id: row.get(0)?,
        name: row.get(1)?,
        password_hash: row.get(2)?,
        guest: row.get(3)?,
        rating: row.get(4)?,
        wins: row.get(5)?,
        losses: row.get(6)?,
        draws: row.get(7)?,
    })
}

pub(super) fn create_account(
    conn: &Connection,
    name: &str,
    password_hash: &str,
) -> DbResult<AccountRow> {
    insert_account(conn, name, Some(password_hash))
}

/// A guest named `guest-` and six random digits, drawing again while the name is taken.
pub(super) fn create_guest(conn: &Connection) -> DbResult<AccountRow> {
    let mut rng = rand::rng();
    for _ in 0..GUEST_NAME_ATTEMPTS {
        let name = format!("guest-{:06}", rng.random_range(0..1_000_000));
        match insert_account(conn, &name, None) {
            Err(DbError::NameTaken) => continue,
            other => return other,
        }
    }
    Err(DbError::Sqlite(format!(
        "no free guest name after {GUEST_NAME_ATTEMPTS} attempts"
    )))
}

/// Insert an account (a guest exactly when it has no password) and read it back.
fn insert_account(
    conn: &Connection,
    name: &str,
    password_hash: Option<&str>,
) -> DbResult<AccountRow> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO accounts (name, password_hash, guest, created_at) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            name,
            password_hash,
            password_hash.is_none(),
            ms_to_sql(now_ms())
        ]);
    match inserted {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => return Err(DbError::NameTaken),
        Err(e) => return Err(e.into()),
    }
    by_id(conn, conn.last_insert_rowid())?
        .ok_or_else(|| DbError::Sqlite("account vanished after insert".into()))
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    e.sqlite_extended_error_code() == Some(rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
}

pub(super) fn by_name(conn: &Connection, name: &str) -> DbResult<Option<AccountRow>> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([name], account_row)
        .optional()?)
}

pub(super) fn by_id(conn: &Connection, id: AccountId) -> DbResult<Option<AccountRow>> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], account_row)
        .optional()?)
}

pub(super) fn insert_session(
    conn: &Connection,
    token_hash: &[u8; 32],
    account: AccountId,
    expires_at: u64,
) -> DbResult<()> {
    conn.prepare_cached(
        "INSERT INTO sessions (token_hash, account_id, created_at, expires_at, revoked)
         VALUES (?1, ?2, ?3, ?4, 0)",
    )?
    .execute(params![
        token_hash,
        account,
        ms_to_sql(now_ms()),
        ms_to_sql(expires_at)
    ])?;
    Ok(())
}

pub(super) fn session(
    conn: &Connection,
    token_hash: &[u8; 32],
    now: u64,
) -> DbResult<Option<SessionRow>> {
    let sql = format!(
        "SELECT {ACCOUNT_COLUMNS}, s.expires_at
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.token_hash = ?1 AND s.revoked = 0 AND s.expires_at > ?2"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![token_hash, ms_to_sql(now)], |row| {
            Ok(SessionRow {
                account: account_row(row)?,
                expires_at: ms_from_sql(row, 8)?,
            })
        })
        .optional()?)
}

/// Revoking an unknown or already revoked session is not an error: the outcome is the same.
pub(super) fn revoke_session(conn: &Connection, token_hash: &[u8; 32]) -> DbResult<()> {
    conn.prepare_cached("UPDATE sessions SET revoked = 1 WHERE token_hash = ?1")?
        .execute([token_hash])?;
    Ok(())
}

/// Registered accounts, best rating first, ties by name.
pub(super) fn leaderboard(conn: &Connection, limit: u32) -> DbResult<Vec<LeaderRow>> {
    let mut statement = conn.prepare_cached(
        "SELECT name, rating, wins, losses, draws FROM accounts
         WHERE guest = 0 ORDER BY rating DESC, name LIMIT ?1",
    )?;
    let rows = statement.query_map([limit], |row| {
        Ok(LeaderRow {
            name: row.get(0)?,
            rating: row.get(1)?,
            wins: row.get(2)?,
            losses: row.get(3)?,
            draws: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An account's latest rating changes: the history's key read backwards, no sort. A player
/// sits in one game at a time, so their games end one after another and are rated in that
/// order; two ending in the same millisecond (never seen) would be listed by game id.
pub(super) const PLAYER_HISTORY: &str = r#"
    SELECT game_id, "before", "after", at FROM rating_history
    WHERE account_id = ?1 ORDER BY at DESC, game_id DESC LIMIT ?2"#;

/// An account's standing and its rating history, newest first.
/// Guests have none: their accounts are temporary and play unrated games only.
pub(super) fn player_page(conn: &Connection, name: &str) -> DbResult<Option<PlayerPage>> {
    let Some(account) = by_name(conn, name)?.filter(|a| !a.guest) else {
        return Ok(None);
    };
    let mut statement = conn.prepare_cached(PLAYER_HISTORY)?;
    let history = statement
        .query_map(params![account.id, HISTORY_LIMIT], |row| {
            Ok(HistoryRow {
                game_id: row.get(0)?,
                before: row.get(1)?,
                after: row.get(2)?,
                at: ms_from_sql(row, 3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Some(PlayerPage {
        name: account.name,
        rating: account.rating,
        wins: account.wins,
        losses: account.losses,
        draws: account.draws,
        history,
    }))
}
