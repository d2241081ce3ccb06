//! `DbError`: what a request to storage can fail with, on either backend.

use std::io;
use std::path::PathBuf;

use elementals_protocol::messages::GameId;

#[derive(Debug, Clone, thiserror::Error)]
pub enum DbError {
    #[error("name already taken")]
    NameTaken,
    #[error("database: {0}")]
    Sqlite(String),
    #[error("postgresql: {0}")]
    Postgres(String),
    #[error("the database writer has stopped")]
    Closed,
    /// The database cannot be reached for now (its connection is lost and not yet made
    /// again): the request changed nothing and may be retried.
    #[error("the database cannot be reached: {0}")]
    Unavailable(String),
    #[error("encoding {0}")]
    Encode(String),
    /// A read or write of the game log failed; the journal is left as it was before it.
    #[error("game log {}: {what}: {message}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        kind: io::ErrorKind,
        message: String,
    },
    /// The game log can no longer be written safely (a failed `fdatasync`): nothing more
    /// is appended, and the server stops; the restart replays what is on disk.
    #[error("game log {}: {what}: {message}; nothing more can be made durable", path.display())]
    LogBroken {
        what: &'static str,
        path: PathBuf,
        kind: io::ErrorKind,
        message: String,
    },
    /// Bad frames with whole ones after them: not a torn tail. The file is left as it is.
    #[error(
        "game log {}: damaged at byte {offset}, with whole frames after the damage; \
         refusing to start rather than drop them (a copy: {})",
        path.display(),
        copy.as_ref().map_or("none could be made".into(), |c| c.display().to_string())
    )]
    LogDamaged {
        path: PathBuf,
        offset: u64,
        copy: Option<PathBuf>,
    },
    #[error("game log {}: another server is using this database", path.display())]
    Locked { path: PathBuf },
    #[error("game {game_id}: step {step} refused: the log expects step {expected}")]
    StepOutOfOrder {
        game_id: GameId,
        step: u64,
        expected: u64,
    },
    /// Cluster mode: this node no longer holds the game's lease (another node has claimed
    /// it). Nothing of the game was written; its actor stops on this node.
    #[error("game {game_id}: its lease is held by another node")]
    LeaseLost { game_id: GameId },
    #[error("game {game_id}: step {step} is {bytes} bytes, over the log's limit of {limit}")]
    StepTooLarge {
        game_id: GameId,
        step: u64,
        bytes: usize,
        limit: usize,
    },
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError::Sqlite(e.to_string())
    }
}
