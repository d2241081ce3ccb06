//! What the storage requests answer: accounts, pages, sessions, pruning.

use std::collections::HashSet;

use crate::record::AccountId;

/// An account row.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountRow {
    pub id: AccountId,
    pub name: String,
    /// argon2id PHC string; `None` for guests.
    pub password_hash: Option<String>,
    pub guest: bool,
    pub rating: f64,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// One line of the leaderboard (registered accounts only, best first).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct LeaderRow {
    pub name: String,
    pub rating: f64,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
    /// The player's latest rated game (the newest entry of their rating history), which the
    /// browser's leaderboard links; `None` before their first.
    pub last_game: Option<String>,
}

/// One rating change in a player's history.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct HistoryRow {
    pub game_id: String,
    pub before: f64,
    pub after: f64,
    /// Unix milliseconds.
    pub at: u64,
}

/// `GET /api/players/{name}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct PlayerPage {
    pub name: String,
    pub rating: f64,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
    pub history: Vec<HistoryRow>,
}

/// A valid session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub account: AccountRow,
    /// Unix milliseconds.
    pub expires_at: u64,
}

/// How a use of a session moves its expiry (Unix milliseconds): one that expires before
/// `below` expires at `to` from then on. With `below` a day short of `to`, a session used
/// every minute is written at most once a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slide {
    pub below: u64,
    pub to: u64,
}

/// A page of a list: at most `limit` entries after the first `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u32,
    pub offset: u32,
}

/// Where a pruning pass over the guests stands: the last guest looked at, as
/// (created_at, id); the pass goes on after it.
pub type GuestCursor = (i64, AccountId);

/// What one pruning batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Expired sessions deleted.
    pub sessions: usize,
    /// Guest accounts deleted.
    pub guests: usize,
    /// Where the next batch of the pass goes on; `None` when every guest was looked at.
    pub next: Option<GuestCursor>,
}

/// One pruning batch's inputs (times in Unix milliseconds).
#[derive(Debug, Clone)]
pub struct PruneBatch {
    /// Sessions that expired before this are deleted.
    pub sessions_before: u64,
    /// Guests created before this may be deleted...
    pub guests_created_before: u64,
    /// ...if none of their sessions is alive after this,
    pub sessions_after: u64,
    /// ...and they are not among these (online, seated, or just out of a game).
    pub keep: HashSet<AccountId>,
    /// Where the pass over the guests stands.
    pub after: GuestCursor,
    /// At most this many sessions deleted, and guests looked at.
    pub limit: u32,
}
