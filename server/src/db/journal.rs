//! The live games' log: an append-only file beside the database (`<database>-gamelog`),
//! owned by its own thread ("game-log"), with one `fdatasync` per batch of appends, and
//! at most one `fdatasync` per sync interval (`--game-log-sync-us`, below).
//!
//! Why a file of its own and not a table: a move waits for its step to be durable, so the
//! log is on every move's path. As a SQLite table it cost a b-tree insert into an index
//! keyed by game, and a scattered delete of every finished game's rows, so each group
//! commit rewrote hundreds of pages; and it shared the one writer thread with sign-ins,
//! whose own fsyncs moves then waited behind. Here a batch is one sequential write and
//! one `fdatasync`, on a thread that does nothing else.
//!
//! The file's format, and how a torn tail is told from damage: `journal/file.rs`.
//!
//! Pacing: a batch is begun no sooner than the sync interval after the last one began.
//! Unpaced, at full load the thread would sync thousands of times a second with a handful
//! of appends each, and those syncs, wake-ups and context switches cost more than the
//! moves' own work. A move that comes after a
//! quiet spell is written at once; only when syncs come faster than the interval does an
//! append wait, for at most the interval, to share the next sync with the others.
//!
//! Finished games are not deleted from the file: once a game's record is committed in the
//! database, `Db::record_game` tells the journal to forget it, and the next compaction
//! (a rewrite of the live games' frames into a new file, renamed over the old one) drops
//! its frames. Opening keeps only the games the database has no record of, so a forget
//! lost in a crash costs nothing; it does not rewrite the file (the recorded games'
//! frames wait for the next compaction), so that a server starts on a disk too full to
//! hold a second copy of its log. Only a torn tail is cut off, in place. A game going to
//! sleep is forgotten the same way once its log is committed in the database, and opening
//! leaves out a game whose log is there (`db/hibernation.rs`). Invariant: a game's frames
//! leave the file only after its record, or its log, is durable in the database.
//!
//! Failures: an append whose write fails (a full disk, say) is cut off again and refused
//! (`DbError::Io`, its `io::ErrorKind` kept); the game retries it, and later appends may
//! succeed. A failed `fdatasync`, or a failed write that cannot be cut off, is final
//! (`DbError::LogBroken`): the kernel may have dropped the pages it could not write, so
//! nothing after it is trusted, every later append is refused, and `LogHealth::Broken`
//! tells the server to stop; the restart replays what is on disk.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::GameId;
use tokio::sync::{oneshot, watch};

use super::{DbError, DbResult};
use crate::record::{GameLog, LogStep};

mod append;
mod file;
mod index;
mod thread;
pub(super) use append::check_rows;
use file::{cut_to, damaged, open_for_append, rewrite, scan, FRAME_HEADER, MAGIC, PAYLOAD_PREFIX};
use index::LiveGame;
#[cfg(test)]
pub(super) use thread::run;
pub(super) use thread::spawn;

/// The longest payload written: a hundred times the largest step a game can log (a
/// round's result on the widest board, `the_largest_steps_fit_a_frame_many_times_over`).
pub(crate) const MAX_PAYLOAD_WRITTEN: usize = 64 << 10;

/// Requests queued for the journal. Appends come from every live game at once; a full
/// queue makes the games wait (back-pressure) rather than grow memory.
pub(crate) const REQUEST_QUEUE: usize = 8192;

/// At most this many appends per batch (one write and one `fdatasync`).
pub(super) const MAX_BATCH_APPENDS: usize = 4096;

/// The shortest time from the start of one batch to the start of the next, by default.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_micros(500);

/// The largest batch buffer kept for the next batch; a rare larger one is let go.
const MAX_SCRATCH: usize = 8 << 20;

/// One encoded step: its number and its MessagePack.
pub(super) type Row = (u64, Vec<u8>);

/// Room for a commitment or a reveal step, the commonest, without growing the buffer.
const STEP_CAPACITY: usize = 256;

type Reply<T> = oneshot::Sender<DbResult<T>>;

/// What the journal thread is asked to do.
pub(super) enum Request {
    /// Steps of a live game, answered once they are durable.
    Append {
        game_id: GameId,
        rows: Vec<Row>,
        reply: Reply<()>,
    },
    /// The game's record is durable in the database: its frames may go.
    Forget { game_id: GameId },
    /// The logs of every live game but the hibernated ones (`skip`; PostgreSQL's query
    /// leaves them out by itself), in step order.
    Load {
        skip: std::collections::HashSet<GameId>,
        reply: Reply<Vec<GameLog>>,
    },
    /// The logs of these games, in step order: read by key (on SQLite, a game going to
    /// sleep, whose log moves into the database; on PostgreSQL, games being woken).
    LoadSome {
        games: Vec<GameId>,
        reply: Reply<Vec<GameLog>>,
    },
    /// Answered once everything queued before it is durable.
    Flush { reply: Reply<()> },
    /// Like `Flush`, then the thread stops.
    Shutdown { reply: Reply<()> },
    /// Cluster mode (PostgreSQL): claim the games whose lease has lapsed; answers their
    /// logs. Without leases, answers none.
    Claim { reply: Reply<Vec<GameLog>> },
    /// Cluster mode (PostgreSQL): claim the lobby's lease if it is free; answers its token.
    /// Without leases, answers none.
    ClaimLobby { reply: Reply<Option<i64>> },
}

/// When a compaction runs: once the file is at least `min_len` bytes and more than
/// `ratio` times what its live games' frames take.
#[derive(Debug, Clone, Copy)]
pub(super) struct Compaction {
    pub min_len: u64,
    pub ratio: u64,
}

impl Default for Compaction {
    fn default() -> Self {
        // 64 MiB is a few seconds of the busiest load measured, and the rewrite copies at
        // most a quarter of it.
        Compaction {
            min_len: 64 << 20,
            ratio: 4,
        }
    }
}

/// What the journal did in its life; logged when it stops.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct JournalStats {
    pub batches: u64,
    pub appends: u64,
    pub compactions: u64,
}

/// Whether the log can be written, as `/healthz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogHealth {
    /// The last write succeeded.
    Writable,
    /// The last write failed (and was cut off); games retry theirs.
    Failing,
    /// A sync failed: nothing more is written; the server must stop.
    Broken,
}

/// Since when the game log's thread has been busy with one request (a transaction,
/// mostly): a database that stalls (its connection held open, nothing answered) raises no
/// error, only time, which `/healthz` reads (`Db::log_stalled`).
#[derive(Debug, Default)]
pub struct Busy(std::sync::Mutex<Option<std::time::Instant>>);

impl Busy {
    fn at(&self) -> std::sync::MutexGuard<'_, Option<std::time::Instant>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn start(&self) {
        *self.at() = Some(std::time::Instant::now());
    }

    pub(super) fn stop(&self) {
        *self.at() = None;
    }

    /// Whether one request has kept the thread busy for `limit` or longer.
    pub fn longer_than(&self, limit: std::time::Duration) -> bool {
        self.at().is_some_and(|since| since.elapsed() >= limit)
    }
}

/// The open game log.
pub(super) struct Journal {
    path: PathBuf,
    /// Positioned at `len`, the end of the last durable frame.
    file: File,
    len: u64,
    live: HashMap<GameId, LiveGame>,
    live_bytes: u64,
    compaction: Compaction,
    /// After a failed `fdatasync` nothing written since the last good one can be trusted
    /// to be on disk, so every later append is refused with this.
    broken: Option<DbError>,
    /// What the server reads for `/healthz`, and waits on to stop when the log breaks.
    health: watch::Sender<LogHealth>,
    /// Makes every sync fail, for the tests of a broken log (with the `test-hooks`
    /// feature, also set by the `ELEMENTALS_FAIL_SYNC` environment variable).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) fail_syncs: bool,
    /// A batch's bytes are gathered here, kept from one batch to the next: a buffer made
    /// anew for each batch was grown by reallocation and, large ones being returned to
    /// the system at once (`alloc.rs`), paid page faults and zeroed pages on every batch
    /// (a fifth of the game-log thread's samples at full load, 3 % of the server's).
    scratch: Vec<u8>,
    /// Frames read back from the file (at startup, and by key), for `/metrics`.
    frames_read: Arc<AtomicU64>,
    /// Held for the journal's life: a second server on the same database is refused.
    _lock: File,
}

/// The game log's path for a database at `database`.
pub(super) fn path_for(database: &Path) -> PathBuf {
    with_suffix(database, "-gamelog")
}

/// `path` with `suffix` appended to its last component.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut path = path.as_os_str().to_owned();
    path.push(suffix);
    PathBuf::from(path)
}

/// Encodes steps for an append (on the caller's thread, not the journal's); the journal
/// checks their size.
pub(super) fn encode(steps: &[LogStep]) -> DbResult<Vec<Row>> {
    steps
        .iter()
        .map(|step| encode_step(step).map(|bytes| (step.step, bytes)))
        .collect()
}

/// One step as a frame's payload holds it (after the game id and step number).
fn encode_step(step: &LogStep) -> DbResult<Vec<u8>> {
    let mut bytes = Vec::with_capacity(STEP_CAPACITY);
    rmp_serde::encode::write_named(&mut bytes, step)
        .map_err(|e| DbError::Encode(format!("a game log step: {e}")))?;
    Ok(bytes)
}

/// Reads a step back from its MessagePack.
pub(super) fn decode_step(bytes: &[u8]) -> Result<LogStep, String> {
    rmp_serde::from_slice(bytes).map_err(|e| e.to_string())
}

fn io_error(what: &'static str, path: &Path, e: io::Error) -> DbError {
    DbError::Io {
        what,
        path: path.to_owned(),
        kind: e.kind(),
        message: e.to_string(),
    }
}

/// The error that breaks the log for good (see the module).
fn broken_error(what: &'static str, path: &Path, e: io::Error) -> DbError {
    DbError::LogBroken {
        what,
        path: path.to_owned(),
        kind: e.kind(),
        message: e.to_string(),
    }
}

impl Journal {
    /// Opens (creating if needed) the log at `path`, keeping only the games for which
    /// `settled` says the database holds them now (a record, or the log of a game
    /// asleep). A torn tail is cut off; the file is not otherwise rewritten (see the
    /// module). Damage before the end is refused (`DbError::LogDamaged`).
    pub(super) fn open(
        path: &Path,
        compaction: Compaction,
        mut settled: impl FnMut(&GameId) -> DbResult<bool>,
    ) -> DbResult<Journal> {
        let lock_path = with_suffix(path, ".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io_error("cannot open the lock file", &lock_path, e))?;
        lock.try_lock().map_err(|_| DbError::Locked {
            path: path.to_owned(),
        })?;

        // The games the file holds, and where its whole frames end.
        let mut live: HashMap<GameId, LiveGame> = HashMap::new();
        let mut fresh = true;
        if path.exists() {
            let end = scan(path, |at, game_id, step, encoded| {
                let len = FRAME_HEADER + PAYLOAD_PREFIX + encoded.len();
                live.entry(game_id).or_default().note(step, at, len);
            })
            .map_err(|e| io_error("cannot read", path, e))?;
            if let Some(damage) = end.damage {
                return Err(damaged(path, damage));
            }
            fresh = end.valid_len == 0;
            if end.torn > 0 && !fresh {
                tracing::warn!(
                    path = %path.display(),
                    kept = end.valid_len,
                    dropped = end.torn,
                    "the game log ends in a torn write (a crash mid-append); dropping it"
                );
                cut_to(path, end.valid_len)?;
            }
            let mut finished = Vec::new();
            for game_id in live.keys() {
                if settled(game_id)? {
                    finished.push(*game_id);
                }
            }
            for game_id in finished {
                live.remove(&game_id);
            }
        }
        if fresh {
            let keep = |_, game_id: &GameId| live.contains_key(game_id);
            live = rewrite(path, keep, None)?;
        }
        let (file, len) = open_for_append(path)?;
        let live_bytes = live.values().map(|g| g.bytes).sum();
        Ok(Journal {
            path: path.to_owned(),
            file,
            len,
            live,
            live_bytes,
            compaction,
            broken: None,
            health: watch::Sender::new(LogHealth::Writable),
            #[cfg(any(test, feature = "test-hooks"))]
            fail_syncs: std::env::var_os("ELEMENTALS_FAIL_SYNC").is_some(),
            scratch: Vec::new(),
            frames_read: Arc::default(),
            _lock: lock,
        })
    }

    /// Whether the log can be written, kept up to date by the journal's thread.
    pub(super) fn health(&self) -> watch::Receiver<LogHealth> {
        self.health.subscribe()
    }

    /// How many games the log holds.
    pub(super) fn live_games(&self) -> usize {
        self.live.len()
    }

    /// The count of frames read back from the file, shared with `Db`.
    pub(super) fn frames_read(&self) -> Arc<AtomicU64> {
        self.frames_read.clone()
    }

    fn count_read(&self, frames: u64) {
        self.frames_read.fetch_add(frames, Relaxed);
    }

    fn forget(&mut self, game_id: &GameId) {
        if let Some(game) = self.live.remove(game_id) {
            self.live_bytes -= game.bytes;
        }
    }

    fn wants_compaction(&self) -> bool {
        let live = MAGIC.len() as u64 + self.live_bytes;
        self.broken.is_none()
            && self.len >= self.compaction.min_len
            && self.len > self.compaction.ratio.saturating_mul(live)
    }

    /// Rewrites the file with the live games' indexed frames only. On failure the old file stays
    /// (it holds everything) and the next try waits for another `min_len` of growth.
    fn compact(&mut self) -> DbResult<()> {
        let kept = rewrite(&self.path, |at, id| self.indexed(id, at), Some(self.len))?;
        let (file, len) = open_for_append(&self.path)?;
        self.file = file;
        self.len = len;
        self.live_bytes = kept.values().map(|g| g.bytes).sum();
        self.live = kept;
        Ok(())
    }

    /// The logs of the live games `wanted`, read back from the file (one pass over it,
    /// however many are wanted: at startup, all of them).
    fn load(&self, wanted: impl Fn(&GameId) -> bool) -> DbResult<Vec<GameLog>> {
        let mut logs: HashMap<GameId, Vec<LogStep>> = HashMap::new();
        let mut broken: Vec<GameId> = Vec::new();
        let mut read = 0;
        scan(&self.path, |at, game_id, _, bytes| {
            read += 1;
            if !self.indexed(&game_id, at) || !wanted(&game_id) || broken.contains(&game_id) {
                return;
            }
            match decode_step(bytes) {
                Ok(step) => logs.entry(game_id).or_default().push(step),
                Err(error) => {
                    tracing::error!(%game_id, %error, "cannot decode a game's log; skipping the game");
                    logs.remove(&game_id);
                    broken.push(game_id);
                }
            }
        })
        .map_err(|e| io_error("cannot read", &self.path, e))?;
        self.count_read(read);
        let mut logs: Vec<GameLog> = logs
            .into_iter()
            .map(|(game_id, mut steps)| {
                steps.sort_by_key(|s| s.step);
                GameLog { game_id, steps }
            })
            .collect();
        logs.sort_by_key(|l| l.game_id.0);
        Ok(logs)
    }
}
