//! Hibernated games in storage (`game/hibernate.rs`): their wake-up rows, on the writer,
//! and their logs.
//!
//! On PostgreSQL a game's log stays in `game_log`, which is read by key. On SQLite the
//! step log is a file (`journal.rs`) that only a pass over it could read a game from, so a
//! game going to sleep moves its log into the database, and a wake takes it back:
//!
//! - Sleeping: the game's frames are read from the file by key, written as one row
//!   (`sleeping_logs`) in the transaction of its wake-up row, and only once that is
//!   committed does the file forget the game (its frames go at the next compaction).
//! - Waking: the row is read by key, the steps are appended to the file anew from step 0
//!   (after a forget, so the file takes them as the game's whole log), and then `woken`
//!   deletes both rows.
//!
//! A crash anywhere leaves one copy that wins: while a game has a row, the row is its log,
//! and opening the file leaves the game's frames out (they are the same steps or fewer:
//! nothing is appended between the row's commit and its deletion). Once the row is gone,
//! the file's frames are the log; of two runs of the same steps in the file, the later
//! (put back by the wake) is the one kept (`journal/index.rs`).

use elementals_protocol::messages::GameId;

use super::journal;
use super::wakeups::{DueWakeups, Sleeper};
use super::writer::Request;
use super::{call, Db, DbError, DbResult};
use crate::record::{GameLog, LogStep};

impl Db {
    /// Game `sleeper.game_id` sleeps until `sleeper.due_ms`: its wake-up row is written
    /// (or moved) and committed when this returns, and on SQLite its log with it (see the
    /// module).
    pub async fn hibernate(&self, sleeper: Sleeper) -> DbResult<()> {
        let game_id = sleeper.game_id;
        let log = match self.log_file {
            None => None,
            Some(_) => {
                let logs = call(&self.journal, |reply| journal::Request::LoadSome {
                    games: vec![game_id],
                    reply,
                })
                .await?;
                let Some(log) = logs.into_iter().next() else {
                    return Err(DbError::Encode(format!(
                        "the log of game {game_id}, going to sleep: the step log has none"
                    )));
                };
                Some(encode_log(&log.steps)?)
            }
        };
        self.call(|reply| Request::Hibernate {
            sleeper,
            log,
            reply,
        })
        .await?;
        // Committed: the step log forgets the game (on SQLite its frames may go, its log
        // moved into the row; on PostgreSQL the row's transaction let its lease go, so any
        // node may wake it). A wake reads its log again, and the step log learns its next
        // step from that read.
        self.forget_in_log(game_id).await;
        Ok(())
    }

    /// Game `game_id` is awake: its wake-up row (and on SQLite its moved log) is deleted
    /// when this returns.
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

    /// The logs of hibernated `games` being woken, read by key; on SQLite each is put back
    /// in the step log when this returns (its row goes with `woken`, see the module). A
    /// game with no log is left out.
    pub async fn game_logs(&self, games: Vec<GameId>) -> DbResult<Vec<GameLog>> {
        if self.log_file.is_none() {
            return self.logs_in_step_log(games).await;
        }
        let rows = self
            .call(|reply| Request::SleepingLogs {
                games: games.clone(),
                reply,
            })
            .await?;
        // A game put to sleep by a server that kept sleepers' logs in the file has no row:
        // its log is still there, live.
        let moved: std::collections::HashSet<GameId> = rows.iter().map(|(id, _)| *id).collect();
        let unmoved: Vec<GameId> = games.into_iter().filter(|g| !moved.contains(g)).collect();
        let mut logs = match unmoved.is_empty() {
            true => Vec::new(),
            false => self.logs_in_step_log(unmoved).await?,
        };
        let mut put_back = Vec::new();
        for (game_id, bytes) in rows {
            match decode_log(&bytes) {
                Ok(steps) => put_back.push(GameLog { game_id, steps }),
                Err(error) => {
                    tracing::error!(%game_id, %error, "cannot decode a hibernated game's log; skipping the game");
                }
            }
        }
        let appends = put_back.iter().map(|log| self.put_back(log));
        for appended in futures::future::join_all(appends).await {
            appended?;
        }
        logs.extend(put_back);
        Ok(logs)
    }

    /// A woken game's log appended to the step log as the game's whole log: whatever the
    /// file held of it is forgotten first (a wake that failed after its put-back).
    async fn put_back(&self, log: &GameLog) -> DbResult<()> {
        self.forget_in_log(log.game_id).await;
        self.append_log(log.game_id, &log.steps).await
    }

    async fn forget_in_log(&self, game_id: GameId) {
        let _ = self
            .journal
            .send(journal::Request::Forget { game_id })
            .await;
    }

    async fn logs_in_step_log(&self, games: Vec<GameId>) -> DbResult<Vec<GameLog>> {
        call(&self.journal, |reply| journal::Request::LoadSome {
            games,
            reply,
        })
        .await
    }
}

/// A sleeping game's steps as its `sleeping_logs` row holds them.
pub(super) fn encode_log(steps: &[LogStep]) -> DbResult<Vec<u8>> {
    rmp_serde::to_vec_named(steps).map_err(|e| DbError::Encode(format!("a game's log: {e}")))
}

fn decode_log(bytes: &[u8]) -> Result<Vec<LogStep>, String> {
    rmp_serde::from_slice(bytes).map_err(|e| e.to_string())
}
