//! Persistence: the one writer that owns the SQLite database.
//!
//! `Db` is a cloneable handle to a dedicated OS thread that owns the only connection.
//! Requests arrive over a bounded channel; finished games are written in batches, one
//! transaction per batch, with durable commit settings (WAL, synchronous=FULL). Game
//! actors never touch the database: they hand a `GameRecord` over and await the reply
//! only after their game has ended.

use elementals_protocol::messages::SeatPair;
use elementals_protocol::rating::RatingChange;

use crate::record::{AccountId, GameRecord};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("name already taken")]
    NameTaken,
    #[error("database: {0}")]
    Sqlite(String),
    #[error("the database writer has stopped")]
    Closed,
}

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
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeaderRow {
    pub name: String,
    pub rating: f64,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// One rating change in a player's history.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HistoryRow {
    pub game_id: String,
    pub before: f64,
    pub after: f64,
    /// Unix milliseconds.
    pub at: u64,
}

/// `GET /api/players/{name}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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

#[derive(Clone)]
pub struct Db {
    // filled in by the persistence implementation
}

pub type DbResult<T> = Result<T, DbError>;

#[allow(unused_variables)]
impl Db {
    /// Open (creating if needed) the database at `path`, apply migrations, start the writer.
    pub fn open(path: &std::path::Path) -> DbResult<Db> {
        todo!()
    }
    pub async fn create_account(
        &self,
        name: String,
        password_hash: String,
    ) -> DbResult<AccountRow> {
        todo!()
    }
    /// A guest account with a unique generated name (`guest-` and digits).
    pub async fn create_guest(&self) -> DbResult<AccountRow> {
        todo!()
    }
    /// Case-insensitive.
    pub async fn account_by_name(&self, name: String) -> DbResult<Option<AccountRow>> {
        todo!()
    }
    pub async fn account_by_id(&self, id: AccountId) -> DbResult<Option<AccountRow>> {
        todo!()
    }
    pub async fn insert_session(
        &self,
        token_hash: [u8; 32],
        account: AccountId,
        expires_at: u64,
    ) -> DbResult<()> {
        todo!()
    }
    /// The session for this token hash if it exists, is not revoked and `now` is before expiry.
    pub async fn session(&self, token_hash: [u8; 32], now: u64) -> DbResult<Option<SessionRow>> {
        todo!()
    }
    pub async fn revoke_session(&self, token_hash: [u8; 32]) -> DbResult<()> {
        todo!()
    }
    /// Record a finished game exactly once per game id; for a game that changes ratings,
    /// apply both changes in the same transaction. A repeated call for the same id changes
    /// nothing and returns the changes recorded the first time.
    pub async fn record_game(
        &self,
        record: GameRecord,
    ) -> DbResult<Option<SeatPair<RatingChange>>> {
        todo!()
    }
    pub async fn leaderboard(&self, limit: u32) -> DbResult<Vec<LeaderRow>> {
        todo!()
    }
    pub async fn player_page(&self, name: String) -> DbResult<Option<PlayerPage>> {
        todo!()
    }
    /// The stored record of a finished game, as JSON.
    pub async fn game_record(&self, game_id: String) -> DbResult<Option<serde_json::Value>> {
        todo!()
    }
    /// Wait until everything sent before this call is committed, then stop the writer.
    pub async fn shutdown(&self) -> DbResult<()> {
        todo!()
    }
}
