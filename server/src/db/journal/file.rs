//! The game log's file: its frames, reading them back, and rewriting it.
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

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use elementals_protocol::messages::GameId;

use super::super::{DbError, DbResult};
use super::{io_error, with_suffix, LiveGame};

/// The first bytes of every game-log file this server writes (a version in the last byte).
pub(super) const MAGIC: &[u8; 8] = b"ELGLOG\0\x02";
/// Length and checksum before each payload.
pub(super) const FRAME_HEADER: usize = 8;
/// Game id and step number at the start of each payload.
pub(super) const PAYLOAD_PREFIX: usize = 16 + 8;
/// The longest payload read back: a longer declared length is damage, not data.
pub(super) const MAX_PAYLOAD: usize = 16 << 20;
/// Appends one frame to `buf`: the payload is written in place, then its length and
/// checksum filled in before it.
pub(super) fn push_frame(buf: &mut Vec<u8>, game_id: &GameId, step: u64, encoded: &[u8]) {
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
pub(super) struct ScanEnd {
    pub(super) valid_len: u64,
    pub(super) torn: u64,
    pub(super) damage: Option<Damage>,
}

/// A bad frame with a whole valid frame somewhere after it (see the module).
#[derive(Debug, Clone, Copy)]
pub(super) struct Damage {
    offset: u64,
}

/// Checks a payload's declared length and checksum against the bytes that follow them.
pub(super) fn whole_frame(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(..FRAME_HEADER)?;
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if !(PAYLOAD_PREFIX..=MAX_PAYLOAD).contains(&len) {
        return None;
    }
    let payload = bytes.get(FRAME_HEADER..FRAME_HEADER + len)?;
    (crc32fast::hash(payload) == crc).then_some(FRAME_HEADER + len)
}

/// Calls `each(at, game_id, step, encoded)` for every whole frame (`at` its offset), in
/// file order.
pub(super) fn scan(
    path: &Path,
    mut each: impl FnMut(u64, GameId, u64, &[u8]),
) -> io::Result<ScanEnd> {
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
        each(at, GameId(id), step, &payload[PAYLOAD_PREFIX..]);
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
pub(super) fn damaged(path: &Path, damage: Damage) -> DbError {
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
pub(super) fn cut_to(path: &Path, len: u64) -> DbResult<()> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| {
            file.set_len(len)?;
            file.sync_all()
        })
        .map_err(|e| io_error("cannot cut the torn tail off", path, e))
}

/// Writes a new file holding the magic and the frames of `path` that `keep(at, game_id)`
/// says to; syncs it and renames it over `path`. Returns the games it holds. With
/// `whole`, the frames of `path` must end exactly there, or nothing is replaced: frames
/// found bad since they were written are not dropped.
pub(super) fn rewrite(
    path: &Path,
    keep: impl Fn(u64, &GameId) -> bool,
    whole: Option<u64>,
) -> DbResult<HashMap<GameId, LiveGame>> {
    let tmp = with_suffix(path, ".tmp");
    let file = File::create(&tmp).map_err(|e| io_error("cannot create", &tmp, e))?;
    let mut copier = Copier {
        out: BufWriter::with_capacity(256 << 10, file),
        frame: Vec::new(),
        live: HashMap::new(),
        written: 0,
        failed: None,
    };
    copier.write(MAGIC);
    if path.exists() {
        let end = scan(path, |at, game_id, step, encoded| {
            if keep(at, &game_id) {
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
pub(super) struct Copier {
    out: BufWriter<File>,
    frame: Vec<u8>,
    live: HashMap<GameId, LiveGame>,
    /// Bytes written so far: where the next frame goes.
    written: u64,
    failed: Option<io::Error>,
}

impl Copier {
    fn write(&mut self, bytes: &[u8]) {
        if self.failed.is_none() {
            self.failed = self.out.write_all(bytes).err();
        }
        self.written += bytes.len() as u64;
    }

    fn copy(&mut self, game_id: GameId, step: u64, encoded: &[u8]) {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        push_frame(&mut frame, &game_id, step, encoded);
        let at = self.written;
        self.write(&frame);
        let game = self.live.entry(game_id).or_default();
        game.note(step, at, frame.len());
        self.frame = frame;
    }
}

pub(super) fn open_for_append(path: &Path) -> DbResult<(File, u64)> {
    // Read too: a game's frames are read back by key (`index.rs`).
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io_error("cannot open", path, e))?;
    let len = file
        .seek(SeekFrom::End(0))
        .map_err(|e| io_error("cannot open", path, e))?;
    Ok((file, len))
}
