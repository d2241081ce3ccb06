//! Durable nonces: the pick and nonce of a commit not yet revealed, kept in a file of its own
//! (`DIR/ACCOUNT/GAME.json`) so that a process restarted between its commit and its reveal
//! can still reveal when it comes back (PROTOCOL.md section 8: without escrow, the pick is
//! lost with the process otherwise, and the seat loses the round's reveal on time).
//!
//! A file is written whole (a temporary file, `fsync`, renamed over, the directory synced)
//! before the commit is sent, and removed once the reveal is acknowledged or the game is
//! over. A game has at most one unrevealed commit, so one file a game. The writes are
//! small and synchronous: one a round, on the player's own task. On Unix each file is
//! readable by its owner only.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use elementals_protocol::commitment::NONCE_LEN;
use elementals_protocol::messages::GameId;
use serde::{Deserialize, Serialize};

use crate::player::SealedPick;

/// One account's unrevealed commits, a file per game under its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceStore {
    dir: PathBuf,
}

/// What a file holds.
#[derive(Serialize, Deserialize)]
struct Stored {
    round: u32,
    pick: u16,
    /// 64 hex digits.
    nonce: String,
}

impl NonceStore {
    /// The store of `account` under `state_dir` (both made if missing). The account's name
    /// is used as it is when it is plain (letters, digits, `_`, `-`), else hex-encoded.
    pub fn open(state_dir: &Path, account: &str) -> io::Result<NonceStore> {
        let plain = !account.is_empty()
            && account
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let name = if plain {
            account.to_ascii_lowercase()
        } else {
            format!("x-{}", hex::encode(account))
        };
        let dir = state_dir.join(name);
        fs::create_dir_all(&dir)?;
        Ok(NonceStore { dir })
    }

    /// The directory holding this account's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, game: GameId) -> PathBuf {
        self.dir.join(format!("{game}.json"))
    }

    /// Keeps `sealed` for `game`, durably, replacing what was kept for it. Returns only once
    /// the file and its directory entry are on disk.
    pub fn save(&self, game: GameId, sealed: &SealedPick) -> io::Result<()> {
        let stored = Stored {
            round: sealed.round,
            pick: sealed.pick,
            nonce: hex::encode(sealed.nonce),
        };
        let bytes = serde_json::to_vec(&stored).map_err(io::Error::other)?;
        let path = self.path(game);
        let tmp = path.with_extension("tmp");
        let mut file = private_file(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)?;
        File::open(&self.dir)?.sync_all()
    }

    /// What is kept for `game`, if anything readable is.
    pub fn load(&self, game: GameId) -> io::Result<Option<SealedPick>> {
        let bytes = match fs::read(self.path(game)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let stored: Stored = serde_json::from_slice(&bytes).map_err(io::Error::other)?;
        let mut nonce = [0u8; NONCE_LEN];
        hex::decode_to_slice(&stored.nonce, &mut nonce).map_err(io::Error::other)?;
        Ok(Some(SealedPick {
            round: stored.round,
            pick: stored.pick,
            nonce,
        }))
    }

    /// Forgets `game`'s commit (revealed, or the game is over); nothing kept is no error.
    pub fn remove(&self, game: GameId) -> io::Result<()> {
        match fs::remove_file(self.path(game)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The games with a commit kept, in no order.
    pub fn games(&self) -> io::Result<Vec<GameId>> {
        let mut games = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if let Some(id) = name.strip_suffix(".json").and_then(|s| s.parse().ok()) {
                games.push(id);
            }
        }
        Ok(games)
    }
}

/// A new file only its owner may read (on Unix): it holds picks the opponent has not seen.
fn private_file(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_pick_reads_back_until_removed_and_names_are_kept_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = NonceStore::open(dir.path(), "Alice").unwrap();
        let game = GameId::new_random_from([7; 16]);
        assert_eq!(store.load(game).unwrap(), None);
        let sealed = SealedPick {
            round: 3,
            pick: 4,
            nonce: [9; NONCE_LEN],
        };
        store.save(game, &sealed).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = store.dir().join(format!("{game}.json"));
            let mode = fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "only its owner reads it");
        }
        // Another process (a new store on the same directory) reads it.
        let again = NonceStore::open(dir.path(), "alice").unwrap();
        assert_eq!(again.load(game).unwrap(), Some(sealed));
        assert_eq!(again.games().unwrap(), [game]);
        // A name that is not plain gets a directory of its own, inside the state directory.
        let odd = NonceStore::open(dir.path(), "../alice").unwrap();
        assert!(odd.dir().starts_with(dir.path()));
        assert_eq!(odd.load(game).unwrap(), None);
        again.remove(game).unwrap();
        again.remove(game).unwrap();
        assert_eq!(store.load(game).unwrap(), None);
        assert!(store.games().unwrap().is_empty());
    }
}
