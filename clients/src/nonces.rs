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
//!
//! The files are per game, so one process may play many games at once (correspondence:
//! up to 50 beside a live one), each game's reveal surviving a restart on its own.
//!
//! A game that ended while no process of the account ran (lost on time while away) leaves
//! its file behind; `prune` removes it when the account signs in and the server names the
//! games it sits in (`authenticated.games`). Files older than `NonceStore::MAX_AGE` go then
//! too, whatever they are.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use elementals_protocol::commitment::NONCE_LEN;
use elementals_protocol::messages::GameId;
use elementals_protocol::time_control::MAX_PER_PHASE_MS;
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
    /// How old a kept commit may grow before `prune` removes it as useless: 56 days. A
    /// commit is of use until its round's reveal deadline, at most two phases of the
    /// longest correspondence control (`MAX_PER_PHASE_MS`, 14 days) after it was written;
    /// twice that leaves four weeks' margin for a clock set wrong or a server long down.
    pub const MAX_AGE: Duration = Duration::from_millis(4 * MAX_PER_PHASE_MS);

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

    /// Removes what is kept for games other than `seated` (the games the server says the
    /// account sits in when it signs in: every other game kept has ended), and for any
    /// game, files older than `max_age` (`MAX_AGE`; left in place when their age cannot be
    /// read). Returns how many went.
    pub fn prune(&self, seated: &[GameId], max_age: Duration) -> io::Result<usize> {
        let now = SystemTime::now();
        let mut removed = 0;
        for game in self.games()? {
            let modified = fs::metadata(self.path(game)).and_then(|m| m.modified());
            let old = modified.is_ok_and(|at| now.duration_since(at).unwrap_or_default() > max_age);
            if !seated.contains(&game) || old {
                self.remove(game)?;
                removed += 1;
            }
        }
        Ok(removed)
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

    #[test]
    fn pruning_keeps_only_the_seated_games_and_no_file_past_its_age() {
        let dir = tempfile::tempdir().unwrap();
        let store = NonceStore::open(dir.path(), "bea").unwrap();
        let sealed = SealedPick {
            round: 1,
            pick: 2,
            nonce: [3; NONCE_LEN],
        };
        let games: Vec<GameId> = (0..4u8).map(|n| GameId::new_random_from([n; 16])).collect();
        for game in &games {
            store.save(*game, &sealed).unwrap();
        }
        // Signed in seated in games[0] and games[3]: games[1] and games[2] ended while it
        // was away.
        let seated = [games[0], games[3]];
        assert_eq!(store.prune(&seated, NonceStore::MAX_AGE).unwrap(), 2);
        let mut kept = store.games().unwrap();
        kept.sort();
        let mut expected = seated.to_vec();
        expected.sort();
        assert_eq!(kept, expected);
        assert_eq!(store.load(games[0]).unwrap(), Some(sealed));
        assert_eq!(store.load(games[3]).unwrap(), Some(sealed));
        // Seated in nothing: nothing kept is of use.
        store.save(games[1], &sealed).unwrap();
        assert_eq!(store.prune(&[], NonceStore::MAX_AGE).unwrap(), 3);
        assert!(store.games().unwrap().is_empty());
        // Past its age, even the seated game's file goes: its reveal deadline has passed.
        store.save(games[0], &sealed).unwrap();
        let path = store.dir().join(format!("{}.json", games[0]));
        let long_ago = SystemTime::now() - NonceStore::MAX_AGE - Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert_eq!(store.prune(&[games[0]], NonceStore::MAX_AGE).unwrap(), 1);
        assert!(store.games().unwrap().is_empty());
        // A fresh one stays.
        store.save(games[0], &sealed).unwrap();
        assert_eq!(store.prune(&[games[0]], NonceStore::MAX_AGE).unwrap(), 0);
    }
}
