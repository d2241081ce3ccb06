//! Where each live game's frames are in the file, so that one game's log is read by key
//! (a read per frame) rather than by a pass over every game's frames: a game going to
//! sleep has its log read this way, to move it into the database (`db/hibernation.rs`).
//!
//! A step number seen again for a game is the start of its log put back by a wake (the
//! game was forgotten when it slept, then its steps were appended anew from step 0); those
//! frames supersede the ones from before it slept, which stay in the file until the next
//! compaction copies only the frames indexed here.

use std::os::unix::fs::FileExt;

use elementals_protocol::messages::GameId;

use super::file::{whole_frame, FRAME_HEADER, PAYLOAD_PREFIX};
use super::{decode_step, io_error, DbResult, Journal};
use crate::record::{GameLog, LogStep};

/// A frame's place in the file: its offset and its whole length (header and payload).
#[derive(Debug, Clone, Copy)]
struct FrameAt {
    at: u64,
    len: u32,
}

/// A live game: the next step it may append, and its frames in step order (which is file
/// order too: a game's steps are appended in order, and a compaction keeps the order).
#[derive(Debug, Clone, Default)]
pub(super) struct LiveGame {
    pub(super) next_step: u64,
    frames: Vec<FrameAt>,
    /// What its frames take, for the compaction's ratio.
    pub(super) bytes: u64,
}

/// Where `LiveGame::mark` puts a game back if the write it was marked for fails.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    next_step: u64,
    frames: usize,
    bytes: u64,
}

impl LiveGame {
    /// Step `step`'s frame, `len` bytes at `at`: the next step, or a step seen already,
    /// whose frame and those after it supersede the earlier ones (see the module).
    pub(super) fn note(&mut self, step: u64, at: u64, len: usize) {
        if step < self.next_step {
            let dropped = (self.next_step - step).min(self.frames.len() as u64) as usize;
            for frame in self.frames.drain(self.frames.len() - dropped..) {
                self.bytes -= u64::from(frame.len);
            }
        }
        self.frames.push(FrameAt {
            at,
            len: len as u32,
        });
        self.next_step = step + 1;
        self.bytes += len as u64;
    }

    /// Whether the frame at `at` is one of this game's indexed frames.
    pub(super) fn holds(&self, at: u64) -> bool {
        self.frames.binary_search_by_key(&at, |f| f.at).is_ok()
    }

    pub(super) fn mark(&self) -> Mark {
        Mark {
            next_step: self.next_step,
            frames: self.frames.len(),
            bytes: self.bytes,
        }
    }

    pub(super) fn undo(&mut self, mark: Mark) {
        self.next_step = mark.next_step;
        self.frames.truncate(mark.frames);
        self.bytes = mark.bytes;
    }
}

impl Journal {
    /// Whether the frame of `game_id` at `at` is live: its game is, and it is indexed.
    pub(super) fn indexed(&self, game_id: &GameId, at: u64) -> bool {
        self.live.get(game_id).is_some_and(|g| g.holds(at))
    }

    /// The logs of those of `games` that are live, read by key: one read per frame, of
    /// their frames only. A game whose frame no longer reads back as written (or does not
    /// decode) is left out, and logged.
    pub(super) fn load_some(&self, games: &[GameId]) -> DbResult<Vec<GameLog>> {
        let mut logs = Vec::new();
        let mut frame = Vec::new();
        for game_id in games {
            let Some(game) = self.live.get(game_id) else {
                continue;
            };
            let mut steps = Vec::with_capacity(game.frames.len());
            for at in &game.frames {
                frame.resize(at.len as usize, 0);
                self.file
                    .read_exact_at(&mut frame, at.at)
                    .map_err(|e| io_error("cannot read", &self.path, e))?;
                self.count_read(1);
                match read_step(game_id, &frame) {
                    Ok(step) => steps.push(step),
                    Err(error) => {
                        tracing::error!(%game_id, %error, "cannot read a game's log back; skipping the game");
                        steps.clear();
                        break;
                    }
                }
            }
            if !steps.is_empty() {
                logs.push(GameLog {
                    game_id: *game_id,
                    steps,
                });
            }
        }
        Ok(logs)
    }
}

/// The step a frame read by key holds, checked against its checksum and its game.
fn read_step(game_id: &GameId, frame: &[u8]) -> Result<LogStep, String> {
    if whole_frame(frame) != Some(frame.len()) {
        return Err("the frame does not read back as written".into());
    }
    let payload = &frame[FRAME_HEADER..];
    if payload[..16] != *game_id.0.as_bytes() {
        return Err("the frame holds another game".into());
    }
    decode_step(&payload[PAYLOAD_PREFIX..])
}
