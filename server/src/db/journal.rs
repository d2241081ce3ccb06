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
//! Format: an 8-byte magic, then frames. A frame is its payload's length (u32, little
//! endian), the payload's CRC-32, and the payload: the game id (16 bytes), the step number
//! (u64, little endian) and the step (`record::LogStep`) as a MessagePack map with named
//! fields. A frame's payload is at most `MAX_PAYLOAD_WRITTEN` bytes: a larger step is
//! refused (`DbError::StepTooLarge`), never written.
//!
//! A crash can only tear the last frames written, so reading stops at the first frame that
//! is short, declares an impossible length or fails its checksum. What follows it tells a
//! torn tail from damage: if no whole valid frame starts anywhere after it, the bytes are
//! the remains of an append cut short, and opening drops them; if one does, acknowledged
//! frames lie beyond a bad one, and opening refuses the file (`DbError::LogDamaged`),
//! keeping a copy (`<log>.damaged-<unix seconds>`) and changing nothing. (A power loss that
//! kept a later page of the last, unsynced batch but not an earlier one looks like damage
//! too: the conservative reading, which asks an operator rather than guess.)
//!
//! The magic's last byte is the format's version (2: MessagePack steps); a file of any
//! other version is refused rather than misread.
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
//! hold a second copy of its log. Only a torn tail is cut off, in place. Invariant: a
//! game's frames leave the file only after its record is durable in the database.
//!
//! Failures: an append whose write fails (a full disk, say) is cut off again and refused
//! (`DbError::Io`, its `io::ErrorKind` kept); the game retries it, and later appends may
//! succeed. A failed `fdatasync`, or a failed write that cannot be cut off, is final
//! (`DbError::LogBroken`): the kernel may have dropped the pages it could not write, so
//! nothing after it is trusted, every later append is refused, and `LogHealth::Broken`
//! tells the server to stop; the restart replays what is on disk.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use elementals_protocol::messages::GameId;
use tokio::sync::{mpsc, oneshot, watch};

use super::{DbError, DbResult};
use crate::record::{GameLog, LogStep};

/// The first bytes of every game-log file this server writes (a version in the last byte).
const MAGIC: &[u8; 8] = b"ELGLOG\0\x02";
/// Length and checksum before each payload.
const FRAME_HEADER: usize = 8;
/// Game id and step number at the start of each payload.
const PAYLOAD_PREFIX: usize = 16 + 8;
/// The longest payload read back: a longer declared length is damage, not data.
const MAX_PAYLOAD: usize = 16 << 20;
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
    /// The logs of every live game, in step order.
    Load { reply: Reply<Vec<GameLog>> },
    /// Answered once everything queued before it is durable.
    Flush { reply: Reply<()> },
    /// Like `Flush`, then the thread stops.
    Shutdown { reply: Reply<()> },
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

/// A live game: the next step it may append and the bytes its frames take.
#[derive(Debug, Clone, Copy)]
struct LiveGame {
    next_step: u64,
    bytes: u64,
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
    /// `recorded` says no record is stored. A torn tail is cut off; the file is not
    /// otherwise rewritten (see the module). Damage before the end is refused
    /// (`DbError::LogDamaged`).
    pub(super) fn open(
        path: &Path,
        compaction: Compaction,
        mut recorded: impl FnMut(&GameId) -> DbResult<bool>,
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
            let end = scan(path, |game_id, step, encoded| {
                let game = live.entry(game_id).or_insert(LiveGame {
                    next_step: 0,
                    bytes: 0,
                });
                game.next_step = game.next_step.max(step + 1);
                game.bytes += (FRAME_HEADER + PAYLOAD_PREFIX + encoded.len()) as u64;
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
                if recorded(game_id)? {
                    finished.push(*game_id);
                }
            }
            for game_id in finished {
                live.remove(&game_id);
            }
        }
        if fresh {
            let keep = |game_id: &GameId| live.contains_key(game_id);
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

    /// Appends a batch: one write and one `fdatasync` for all of them, then each is
    /// answered. An append whose steps do not follow its game's last logged step is
    /// refused alone, and nothing of it is written.
    fn append_batch(&mut self, batch: Vec<(GameId, Vec<Row>, Reply<()>)>) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let mut answers: Vec<DbResult<()>> = Vec::with_capacity(batch.len());
        // Each game's state before this batch, to put back if the write fails.
        let mut undo: Vec<(GameId, Option<LiveGame>)> = Vec::new();
        let before = self.live_bytes;
        for (game_id, rows, _) in &batch {
            if let Some(broken) = &self.broken {
                answers.push(Err(broken.clone()));
                continue;
            }
            let current = self.live.get(game_id).copied();
            let mut next = current.map_or(0, |g| g.next_step);
            if let Err(refused) = check_rows(game_id, &mut next, rows) {
                answers.push(Err(refused));
                continue;
            }
            if rows.is_empty() {
                answers.push(Ok(()));
                continue;
            }
            let start = buf.len();
            for (step, bytes) in rows {
                push_frame(&mut buf, game_id, *step, bytes);
            }
            let bytes = (buf.len() - start) as u64;
            undo.push((*game_id, current));
            let game = self.live.entry(*game_id).or_insert(LiveGame {
                next_step: 0,
                bytes: 0,
            });
            game.next_step = next;
            game.bytes += bytes;
            self.live_bytes += bytes;
            answers.push(Ok(()));
        }
        if !buf.is_empty() {
            if let Err(error) = self.write_durably(&buf) {
                for (game_id, state) in undo.into_iter().rev() {
                    match state {
                        Some(state) => self.live.insert(game_id, state),
                        None => self.live.remove(&game_id),
                    };
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

    /// Rewrites the file with the live games' frames only. On failure the old file stays
    /// (it holds everything) and the next try waits for another `min_len` of growth.
    fn compact(&mut self) -> DbResult<()> {
        let live = &self.live;
        let kept = rewrite(&self.path, |id| live.contains_key(id), Some(self.len))?;
        let (file, len) = open_for_append(&self.path)?;
        self.file = file;
        self.len = len;
        self.live_bytes = kept.values().map(|g| g.bytes).sum();
        Ok(())
    }

    /// Every live game's log, read back from the file.
    fn load(&self) -> DbResult<Vec<GameLog>> {
        let mut logs: HashMap<GameId, Vec<LogStep>> = HashMap::new();
        let mut broken: Vec<GameId> = Vec::new();
        scan(&self.path, |game_id, _, bytes| {
            if !self.live.contains_key(&game_id) || broken.contains(&game_id) {
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

/// Appends one frame to `buf`: the payload is written in place, then its length and
/// checksum filled in before it.
fn push_frame(buf: &mut Vec<u8>, game_id: &GameId, step: u64, encoded: &[u8]) {
    let start = buf.len();
    buf.resize(start + FRAME_HEADER, 0);
    buf.extend_from_slice(game_id.0.as_bytes());
    buf.extend_from_slice(&step.to_le_bytes());
    buf.extend_from_slice(encoded);
    let payload = &buf[start + FRAME_HEADER..];
    let len = (payload.len() as u32).to_le_bytes();
    let crc = crc32fast::hash(payload).to_le_bytes();
    buf[start..start + 4].copy_from_slice(&len);
    buf[start + 4..start + FRAME_HEADER].copy_from_slice(&crc);
}

/// Where a scan stopped: the end of the last whole frame, how many bytes after it were not
/// a whole frame, and whether those bytes are damage rather than a torn tail.
struct ScanEnd {
    valid_len: u64,
    torn: u64,
    damage: Option<Damage>,
}

/// A bad frame with a whole valid frame somewhere after it (see the module).
#[derive(Debug, Clone, Copy)]
struct Damage {
    offset: u64,
}

/// Checks a payload's declared length and checksum against the bytes that follow them.
fn whole_frame(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(..FRAME_HEADER)?;
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if !(PAYLOAD_PREFIX..=MAX_PAYLOAD).contains(&len) {
        return None;
    }
    let payload = bytes.get(FRAME_HEADER..FRAME_HEADER + len)?;
    (crc32fast::hash(payload) == crc).then_some(FRAME_HEADER + len)
}

/// Calls `each(game_id, step, encoded)` for every whole frame, in file order, in a file of
/// either version.
fn scan(path: &Path, mut each: impl FnMut(GameId, u64, &[u8])) -> io::Result<ScanEnd> {
    let file = File::open(path)?;
    let total = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(256 << 10, file);
    let mut magic = [0; MAGIC.len()];
    if total < MAGIC.len() as u64 {
        // Created, then cut short before its magic was durable: nothing was ever in it.
        return Ok(ScanEnd {
            valid_len: 0,
            torn: total,
            damage: None,
        });
    }
    reader.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not an Elementals game log (wrong magic)",
        ));
    }
    let mut at = MAGIC.len() as u64;
    let mut frame = Vec::new();
    while total - at >= FRAME_HEADER as u64 {
        frame.resize(FRAME_HEADER, 0);
        reader.read_exact(&mut frame)?;
        let len = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes")) as u64;
        if len > MAX_PAYLOAD as u64 || total - at < FRAME_HEADER as u64 + len {
            break;
        }
        frame.resize(FRAME_HEADER + len as usize, 0);
        reader.read_exact(&mut frame[FRAME_HEADER..])?;
        if whole_frame(&frame).is_none() {
            break;
        }
        let payload = &frame[FRAME_HEADER..];
        let id = uuid::Uuid::from_bytes(payload[..16].try_into().expect("16 bytes"));
        let step = u64::from_le_bytes(payload[16..24].try_into().expect("8 bytes"));
        each(GameId(id), step, &payload[PAYLOAD_PREFIX..]);
        at += frame.len() as u64;
    }
    let damage = if at < total {
        // What is left cannot be read as the next frame: a torn tail, unless a whole frame
        // starts somewhere in it.
        let mut rest = Vec::with_capacity((total - at) as usize);
        let mut file = reader.into_inner();
        file.seek(SeekFrom::Start(at))?;
        file.read_to_end(&mut rest)?;
        (1..rest.len())
            .any(|from| whole_frame(&rest[from..]).is_some())
            .then_some(Damage { offset: at })
    } else {
        None
    };
    Ok(ScanEnd {
        valid_len: at,
        torn: total - at,
        damage,
    })
}

/// The error for a log damaged at `damage`, after keeping a copy of it beside it.
fn damaged(path: &Path, damage: Damage) -> DbError {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let copy = with_suffix(path, &format!(".damaged-{unix}"));
    let copy = match std::fs::copy(path, &copy) {
        Ok(_) => Some(copy),
        Err(error) => {
            tracing::error!(copy = %copy.display(), %error, "cannot copy the damaged game log");
            None
        }
    };
    DbError::LogDamaged {
        path: path.to_owned(),
        offset: damage.offset,
        copy,
    }
}

/// Cuts the file at `path` to `len` bytes, durably (a torn tail dropped in place).
fn cut_to(path: &Path, len: u64) -> DbResult<()> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| {
            file.set_len(len)?;
            file.sync_all()
        })
        .map_err(|e| io_error("cannot cut the torn tail off", path, e))
}

/// Checks an append's rows: each step the one after the last (`next`, advanced), each
/// payload within the limit.
pub(super) fn check_rows(game_id: &GameId, next: &mut u64, rows: &[Row]) -> DbResult<()> {
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

/// Writes a new file holding the magic and the frames of `path` whose game `keep`s;
/// syncs it and renames it over `path`. Returns the games it holds. With
/// `whole`, the frames of `path` must end exactly there, or nothing is replaced: frames
/// found bad since they were written are not dropped.
fn rewrite(
    path: &Path,
    keep: impl Fn(&GameId) -> bool,
    whole: Option<u64>,
) -> DbResult<HashMap<GameId, LiveGame>> {
    let tmp = with_suffix(path, ".tmp");
    let file = File::create(&tmp).map_err(|e| io_error("cannot create", &tmp, e))?;
    let mut copier = Copier {
        out: BufWriter::with_capacity(256 << 10, file),
        frame: Vec::new(),
        live: HashMap::new(),
        failed: None,
    };
    copier.write(MAGIC);
    if path.exists() {
        let end = scan(path, |game_id, step, encoded| {
            if keep(&game_id) {
                copier.copy(game_id, step, encoded);
            }
        })
        .map_err(|e| io_error("cannot read", path, e))?;
        if let Some(len) = whole.filter(|len| *len != end.valid_len) {
            let _ = std::fs::remove_file(&tmp);
            return Err(damaged(
                path,
                end.damage.unwrap_or(Damage {
                    offset: end.valid_len.min(len),
                }),
            ));
        }
    }
    let Copier {
        out, live, failed, ..
    } = copier;
    let written = failed.map_or(Ok(()), Err).and_then(|()| {
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error("cannot write", &tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| io_error("cannot rename over", path, e))?;
    // The rename itself is durable once the directory is synced.
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("cannot sync the directory of", path, e))?;
    Ok(live)
}

/// Writes frames into a new file, counting what each game takes; the first error sticks.
struct Copier {
    out: BufWriter<File>,
    frame: Vec<u8>,
    live: HashMap<GameId, LiveGame>,
    failed: Option<io::Error>,
}

impl Copier {
    fn write(&mut self, bytes: &[u8]) {
        if self.failed.is_none() {
            self.failed = self.out.write_all(bytes).err();
        }
    }

    fn copy(&mut self, game_id: GameId, step: u64, encoded: &[u8]) {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        push_frame(&mut frame, &game_id, step, encoded);
        self.write(&frame);
        let game = self.live.entry(game_id).or_insert(LiveGame {
            next_step: 0,
            bytes: 0,
        });
        game.next_step = game.next_step.max(step + 1);
        game.bytes += frame.len() as u64;
        self.frame = frame;
    }
}

fn open_for_append(path: &Path) -> DbResult<(File, u64)> {
    let mut file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io_error("cannot open", path, e))?;
    let len = file
        .seek(SeekFrom::End(0))
        .map_err(|e| io_error("cannot open", path, e))?;
    Ok((file, len))
}

/// Starts the journal's thread and returns the sender of its queue.
pub(super) fn spawn(journal: Journal, sync_interval: Duration) -> DbResult<mpsc::Sender<Request>> {
    let (requests, queue) = mpsc::channel(REQUEST_QUEUE);
    let path = journal.path.clone();
    std::thread::Builder::new()
        .name("game-log".into())
        .spawn(move || run(journal, queue, sync_interval))
        .map_err(|e| io_error("cannot start the game log thread", &path, e))?;
    Ok(requests)
}

/// The journal loop: runs until every sender is dropped or a `Shutdown` is reached.
/// Appends queued together are written together, up to `MAX_BATCH_APPENDS`; a batch is
/// begun no sooner than `sync_interval` after the last one began.
pub(super) fn run(
    mut journal: Journal,
    mut queue: mpsc::Receiver<Request>,
    sync_interval: Duration,
) -> JournalStats {
    let mut stats = JournalStats::default();
    // When the last batch began.
    let mut last_batch: Option<Instant> = None;
    let mut next: Option<Request> = None;
    // After a failed compaction, the length the file must reach before the next try.
    let mut retry_at = 0;
    let shutdown = loop {
        let Some(request) = next.take().or_else(|| queue.blocking_recv()) else {
            break None;
        };
        match request {
            Request::Append {
                game_id,
                rows,
                reply,
            } => {
                // Syncs are coming fast: let the appends of the rest of the interval
                // gather, and share this one's sync.
                if let Some(last) = last_batch {
                    std::thread::sleep(
                        (last + sync_interval).saturating_duration_since(Instant::now()),
                    );
                }
                let mut batch = vec![(game_id, rows, reply)];
                while batch.len() < MAX_BATCH_APPENDS {
                    match queue.try_recv() {
                        Ok(Request::Append {
                            game_id,
                            rows,
                            reply,
                        }) => batch.push((game_id, rows, reply)),
                        // A forget needs no place in the order: it comes once the game's
                        // record is durable, long after its last append was answered. It
                        // no longer cuts a batch short (a game ends every few batches at
                        // full load, and each cut cost an `fdatasync`).
                        Ok(Request::Forget { game_id }) => journal.forget(&game_id),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                stats.batches += 1;
                stats.appends += batch.len() as u64;
                last_batch = Some(Instant::now());
                journal.append_batch(batch);
            }
            Request::Forget { game_id } => journal.forget(&game_id),
            Request::Load { reply } => {
                let _ = reply.send(journal.load());
            }
            // Every append before it was answered only once durable.
            Request::Flush { reply } => {
                let _ = reply.send(Ok(()));
            }
            Request::Shutdown { reply } => break Some(reply),
        }
        if journal.wants_compaction() && journal.len >= retry_at {
            match journal.compact() {
                Ok(()) => stats.compactions += 1,
                Err(error) => {
                    tracing::error!(%error, "cannot compact the game log; it keeps growing");
                    retry_at = journal.len + journal.compaction.min_len;
                }
            }
        }
    };
    drop(queue);
    tracing::info!(
        batches = stats.batches,
        appends = stats.appends,
        compactions = stats.compactions,
        live_games = journal.live_games(),
        "game log stopped"
    );
    // Closed (and its lock released) before a shutdown is answered, so that the database
    // can be opened again at once.
    drop(journal);
    if let Some(reply) = shutdown {
        let _ = reply.send(Ok(()));
    }
    stats
}
