//! Accounts and sessions, and the pages read from them: the leaderboard and a player's page;
//! and their pruning: expired sessions, and guests nobody can sign in as any more.
//!
//! Names are compared case-insensitively by the column's `COLLATE NOCASE`, so "Ann" and
//! "ann" are one account and the UNIQUE constraint is what refuses a taken name.

use std::collections::HashSet;

use rand::Rng;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::schema::{ms_from_sql, ms_to_sql};
use super::writer::now_ms;
use super::{
    AccountRow, DbError, DbResult, GuestCursor, HistoryRow, LeaderRow, Page, PlayerPage, Pruned,
    SessionRow, Slide,
};
use crate::record::AccountId;

/// Attempts at a free random guest name before giving up. With 2^50 names, a draw meets a
/// taken one with a chance of the accounts stored over 10^15: never 32 times in a row.
pub(super) const GUEST_NAME_ATTEMPTS: u32 = 32;

/// The alphabet of guest names: digits and lower-case letters without `i l o u`, which are
/// easily misread (Crockford's base32). 32 symbols: 5 random bits each.
const GUEST_ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Symbols after `guest-`: 50 random bits, and 16 characters in all, within the 20 a name
/// may have.
pub(crate) const GUEST_SYMBOLS: usize = 10;

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

/// A guest name: `guest-` and ten symbols drawn from the thread's CSPRNG.
pub(super) fn guest_name(rng: &mut impl Rng) -> String {
    let mut name = String::with_capacity(6 + GUEST_SYMBOLS);
    name.push_str("guest-");
    for _ in 0..GUEST_SYMBOLS {
        name.push(char::from(GUEST_ALPHABET[rng.random_range(0..32)]));
    }
    name
}

/// A guest with a generated name (see [`guest_name`]), drawing again while it is taken.
pub(super) fn create_guest(conn: &Connection) -> DbResult<AccountRow> {
    let mut rng = rand::rng();
    for _ in 0..GUEST_NAME_ATTEMPTS {
        match insert_account(conn, &guest_name(&mut rng), None) {
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

/// A new session; past `max_sessions` of its account, the oldest others are deleted.
pub(super) fn insert_session(
    conn: &Connection,
    token_hash: &[u8; 32],
    account: AccountId,
    expires_at: u64,
    max_sessions: u32,
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
    conn.prepare_cached(
        "DELETE FROM sessions WHERE account_id = ?1 AND rowid NOT IN (
             SELECT rowid FROM sessions WHERE account_id = ?1
             ORDER BY created_at DESC, rowid DESC LIMIT ?2)",
    )?
    .execute(params![account, max_sessions.max(1)])?;
    Ok(())
}

/// A use of the session: its row, its expiry moved as `slide` says.
pub(super) fn session(
    conn: &Connection,
    token_hash: &[u8; 32],
    now: u64,
    slide: Slide,
) -> DbResult<Option<SessionRow>> {
    let sql = format!(
        "SELECT {ACCOUNT_COLUMNS}, s.expires_at
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.token_hash = ?1 AND s.revoked = 0 AND s.expires_at > ?2"
    );
    let row = conn
        .prepare_cached(&sql)?
        .query_row(params![token_hash, ms_to_sql(now)], |row| {
            Ok(SessionRow {
                account: account_row(row)?,
                expires_at: ms_from_sql(row, 8)?,
            })
        })
        .optional()?;
    let Some(mut row) = row else { return Ok(None) };
    if row.expires_at < slide.below {
        conn.prepare_cached("UPDATE sessions SET expires_at = ?2 WHERE token_hash = ?1")?
            .execute(params![token_hash, ms_to_sql(slide.to)])?;
        row.expires_at = slide.to;
    }
    Ok(Some(row))
}

/// A revoked session is deleted: its token is then unknown. Revoking an unknown session is
/// not an error: the outcome is the same.
pub(super) fn revoke_session(conn: &Connection, token_hash: &[u8; 32]) -> DbResult<()> {
    conn.prepare_cached("DELETE FROM sessions WHERE token_hash = ?1")?
        .execute([token_hash])?;
    Ok(())
}

/// Registered accounts, best rating first, ties by name; not the computer's (`bots`), which
/// play unrated only.
pub(super) fn leaderboard(conn: &Connection, page: Page) -> DbResult<Vec<LeaderRow>> {
    let mut statement = conn.prepare_cached(
        "SELECT name, rating, wins, losses, draws,
                (SELECT game_id FROM rating_history h WHERE h.account_id = accounts.id
                 ORDER BY at DESC, game_id DESC LIMIT 1)
         FROM accounts
         WHERE guest = 0 AND name NOT LIKE 'bot-%'
         ORDER BY rating DESC, name LIMIT ?1 OFFSET ?2",
    )?;
    let rows = statement.query_map([page.limit, page.offset], |row| {
        Ok(LeaderRow {
            name: row.get(0)?,
            rating: row.get(1)?,
            wins: row.get(2)?,
            losses: row.get(3)?,
            draws: row.get(4)?,
            last_game: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An account's latest rating changes: the history's key read backwards, no sort. A player
/// sits in one game at a time, so their games end one after another and are rated in that
/// order; two ending in the same millisecond (never seen) would be listed by game id.
pub(super) const PLAYER_HISTORY: &str = r#"
    SELECT game_id, "before", "after", at FROM rating_history
    WHERE account_id = ?1 ORDER BY at DESC, game_id DESC LIMIT ?2 OFFSET ?3"#;

/// An account's standing and a page of its rating history, newest first.
/// Guests have none: their accounts are temporary and play unrated games only.
pub(super) fn player_page(
    conn: &Connection,
    name: &str,
    page: Page,
) -> DbResult<Option<PlayerPage>> {
    let Some(account) = by_name(conn, name)?.filter(|a| !a.guest) else {
        return Ok(None);
    };
    let mut statement = conn.prepare_cached(PLAYER_HISTORY)?;
    let history = statement
        .query_map(params![account.id, page.limit, page.offset], |row| {
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

/// Up to ?2 sessions that expired at ?1 or before.
pub(super) const EXPIRED_SESSIONS: &str = "DELETE FROM sessions WHERE rowid IN (
    SELECT rowid FROM sessions WHERE expires_at <= ?1 LIMIT ?2)";

/// Deletes up to `limit` sessions that expired before `before`; returns how many.
pub(super) fn prune_sessions(conn: &Connection, before: u64, limit: u32) -> DbResult<usize> {
    Ok(conn
        .prepare_cached(EXPIRED_SESSIONS)?
        .execute(params![ms_to_sql(before), limit])?)
}

/// Up to ?4 guests with no game, created before ?1, oldest first after (?2, ?3) as
/// (created_at, id): read in the order of their index, without a sort. The index is named:
/// without statistics the planner would rather take the leaderboard's and sort.
pub(super) const GUEST_CANDIDATES: &str = "SELECT id, created_at
    FROM accounts INDEXED BY accounts_idle_guests
    WHERE guest = 1 AND played = 0 AND created_at < ?1 AND (created_at, id) > (?2, ?3)
    ORDER BY created_at, id LIMIT ?4";

/// Looks at up to `limit` guests created before `created_before` with no game on record,
/// oldest first from `after`, and deletes those with no session alive after
/// `sessions_after` that are not in `keep` (online, seated, or just out of a game).
/// The caller turns foreign keys off: the games' account columns have no index, and the
/// accounts looked at have no game by `played`.
pub(super) fn prune_guests(
    conn: &Connection,
    created_before: u64,
    sessions_after: u64,
    keep: &HashSet<AccountId>,
    after: GuestCursor,
    limit: u32,
) -> DbResult<Pruned> {
    let candidates: Vec<(AccountId, i64)> = conn
        .prepare_cached(GUEST_CANDIDATES)?
        .query_map(
            params![ms_to_sql(created_before), after.0, after.1, limit],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut alive = conn.prepare_cached(
        "SELECT 1 FROM sessions WHERE account_id = ?1 AND expires_at > ?2 LIMIT 1",
    )?;
    let mut drop_sessions = conn.prepare_cached("DELETE FROM sessions WHERE account_id = ?1")?;
    let mut drop_guest =
        conn.prepare_cached("DELETE FROM accounts WHERE id = ?1 AND guest = 1 AND played = 0")?;
    let mut guests = 0;
    for (id, _) in &candidates {
        if keep.contains(id) || alive.exists(params![id, ms_to_sql(sessions_after)])? {
            continue;
        }
        drop_sessions.execute([id])?;
        guests += drop_guest.execute([id])?;
    }
    let next = (candidates.len() == limit as usize)
        .then(|| candidates.last().map(|(id, at)| (*at, *id)))
        .flatten();
    Ok(Pruned {
        sessions: 0,
        guests,
        next,
    })
}
