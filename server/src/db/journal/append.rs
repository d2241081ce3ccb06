//! Appending: a batch's steps checked, written in one write and made durable with one
//! `fdatasync`; a failed write cut off again, a failed sync the journal's end.

use std::io::{self, Seek, SeekFrom, Write};

use elementals_protocol::messages::GameId;

use super::file::{push_frame, PAYLOAD_PREFIX};
use super::{
    broken_error, index, io_error, Journal, LiveGame, LogHealth, Reply, Row, MAX_PAYLOAD_WRITTEN,
    MAX_SCRATCH,
};
use crate::db::{DbError, DbResult};

impl Journal {
    /// Appends a batch: one write and one `fdatasync` for all of them, then each is
    /// answered. An append whose steps do not follow its game's last logged step is
    /// refused alone, and nothing of it is written.
    pub(super) fn append_batch(&mut self, batch: Vec<(GameId, Vec<Row>, Reply<()>)>) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let mut answers: Vec<DbResult<()>> = Vec::with_capacity(batch.len());
        // Each game's state before this batch, to put back if the write fails.
        let mut undo: Vec<(GameId, Option<index::Mark>)> = Vec::new();
        let before = self.live_bytes;
        for (game_id, rows, _) in &batch {
            if let Some(broken) = &self.broken {
                answers.push(Err(broken.clone()));
                continue;
            }
            let current = self.live.get(game_id);
            let mut next = current.map_or(0, |g| g.next_step);
            if let Err(refused) = check_rows(game_id, &mut next, rows) {
                answers.push(Err(refused));
                continue;
            }
            if rows.is_empty() {
                answers.push(Ok(()));
                continue;
            }
            undo.push((*game_id, current.map(LiveGame::mark)));
            let game = self.live.entry(*game_id).or_default();
            for (step, bytes) in rows {
                let start = buf.len();
                push_frame(&mut buf, game_id, *step, bytes);
                let len = buf.len() - start;
                game.note(*step, self.len + start as u64, len);
                self.live_bytes += len as u64;
            }
            answers.push(Ok(()));
        }
        if !buf.is_empty() {
            if let Err(error) = self.write_durably(&buf) {
                for (game_id, mark) in undo.into_iter().rev() {
                    match (mark, self.live.get_mut(&game_id)) {
                        (Some(mark), Some(game)) => game.undo(mark),
                        _ => drop(self.live.remove(&game_id)),
                    }
                }
                self.live_bytes = before;
                for answer in answers.iter_mut().filter(|a| a.is_ok()) {
                    *answer = Err(error.clone());
                }
            }
        }
        for ((_, _, reply), answer) in batch.into_iter().zip(answers) {
            let _ = reply.send(answer);
        }
        if buf.capacity() <= MAX_SCRATCH {
            self.scratch = buf;
        }
    }

    /// Writes `buf` at the end and syncs it. A failed write is cut off again; a failed
    /// sync, or a write that cannot be cut off, breaks the journal for good.
    fn write_durably(&mut self, buf: &[u8]) -> DbResult<()> {
        if let Err(e) = self.file.write_all(buf) {
            let error = io_error("cannot append", &self.path, e);
            let restored = self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.seek(SeekFrom::Start(self.len)).map(|_| ()));
            if let Err(e) = restored {
                return Err(self.break_for_good(broken_error(
                    "cannot cut a failed append off",
                    &self.path,
                    e,
                )));
            }
            self.health.send_if_modified(|h| {
                let failing = *h == LogHealth::Writable;
                if failing {
                    *h = LogHealth::Failing;
                }
                failing
            });
            return Err(error);
        }
        if let Err(e) = self.sync() {
            return Err(self.break_for_good(broken_error("cannot sync", &self.path, e)));
        }
        self.len += buf.len() as u64;
        self.health.send_if_modified(|h| {
            let recovered = *h == LogHealth::Failing;
            if recovered {
                *h = LogHealth::Writable;
            }
            recovered
        });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        #[cfg(any(test, feature = "test-hooks"))]
        if self.fail_syncs {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.file.sync_data()
    }

    fn break_for_good(&mut self, error: DbError) -> DbError {
        tracing::error!(%error, "the game log is broken: no more moves can be made durable; the server stops");
        self.broken = Some(error.clone());
        self.health.send_replace(LogHealth::Broken);
        error
    }
}

/// Checks an append's rows: each step the one after the last (`next`, advanced), each
/// payload within the limit.
pub(crate) fn check_rows(game_id: &GameId, next: &mut u64, rows: &[Row]) -> DbResult<()> {
    for (step, bytes) in rows {
        if *step != *next {
            return Err(DbError::StepOutOfOrder {
                game_id: *game_id,
                step: *step,
                expected: *next,
            });
        }
        if PAYLOAD_PREFIX + bytes.len() > MAX_PAYLOAD_WRITTEN {
            return Err(DbError::StepTooLarge {
                game_id: *game_id,
                step: *step,
                bytes: PAYLOAD_PREFIX + bytes.len(),
                limit: MAX_PAYLOAD_WRITTEN,
            });
        }
        *next += 1;
    }
    Ok(())
}
