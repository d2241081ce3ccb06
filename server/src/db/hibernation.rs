//! Hibernated games in storage (`game/hibernate.rs`): their wake-up rows, on the writer,
//! and the logs of games being woken, from the step log.

use elementals_protocol::messages::GameId;

use super::journal;
use super::wakeups::{DueWakeups, Sleeper};
use super::writer::Request;
use super::{call, Db, DbResult};
use crate::record::GameLog;

impl Db {
    /// Game `sleeper.game_id` sleeps until `sleeper.due_ms`: its wake-up row is written
    /// (or moved) and committed when this returns.
    pub async fn hibernate(&self, sleeper: Sleeper) -> DbResult<()> {
        self.call(|reply| Request::Hibernate { sleeper, reply })
            .await
    }

    /// Game `game_id` is awake: its wake-up row is deleted when this returns.
    pub async fn woken(&self, game_id: GameId) -> DbResult<()> {
        self.call(|reply| Request::Woken { game_id, reply }).await
    }

    /// At most `limit` hibernated games due by `now_ms`, earliest first, and when the next
    /// one after them is due.
    pub async fn due_wakeups(&self, now_ms: u64, limit: usize) -> DbResult<DueWakeups> {
        self.call(|reply| Request::DueWakeups {
            now_ms,
            limit,
            reply,
        })
        .await
    }

    /// Every hibernated game, with its players and due time.
    pub async fn sleepers(&self) -> DbResult<Vec<Sleeper>> {
        self.call(|reply| Request::Sleepers { reply }).await
    }

    /// The logs of `games`, read from the step log (on SQLite, one pass over its file).
    pub async fn game_logs(&self, games: Vec<GameId>) -> DbResult<Vec<GameLog>> {
        call(&self.journal, |reply| journal::Request::LoadSome {
            games,
            reply,
        })
        .await
    }
}
