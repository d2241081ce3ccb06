//! Signed transcripts of finished games: the server's Ed25519 key (read from its file or
//! its PostgreSQL database, or made and written there at the first start), and the signing
//! of a game's stored record with the rating changes it made, in the format of PROTOCOL.md
//! section 12.
//!
//! The signed bytes are a JSON object made once per request and sent as they are (base64),
//! so a verifier checks exactly those bytes and no canonical form of JSON is needed.
//! Ed25519 signatures are deterministic: a game's transcript is the same bytes each time.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rating::RatingChange;
use elementals_protocol::transcript::{self, SignedTranscript, TranscriptKey};

use crate::db::Location;

/// What a SQLite database's name is followed by to name its transcript key's file.
pub const KEY_FILE_SUFFIX: &str = "-transcript-key";

/// The key file's permissions: its owner's to read and write, nobody else's.
pub const KEY_FILE_MODE: u32 = 0o600;

/// Why the transcript key cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("transcript key {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("transcript key {}: not 64 hex characters (an Ed25519 secret key)", path.display())]
    Malformed { path: PathBuf },
    #[error("transcript key in the database: {0}")]
    Db(#[from] crate::db::DbError),
}

/// The server's signing key.
pub struct Signing {
    key: SigningKey,
    public: TranscriptKey,
}

impl Signing {
    /// The key `--transcript-key` names, or the one beside a SQLite database, or the one
    /// in a PostgreSQL database (made by the first process to start on it). The database
    /// is migrated first: `Db::open` comes before.
    pub fn for_config(file: Option<&Path>, database: &Path) -> Result<Signing, KeyError> {
        match (file, Location::of(database)) {
            (Some(file), _) => Signing::from_file(file),
            (None, Location::Sqlite(path)) => Signing::from_file(&default_path(path)),
            (None, Location::Postgres(url)) => {
                let secret = crate::db::shared_transcript_key(url, rand::random())?;
                Ok(Signing::new(SigningKey::from_bytes(&secret)))
            }
        }
    }

    /// The key in `path`, made and written there (owner-only) if the file is missing.
    pub fn from_file(path: &Path) -> Result<Signing, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_owned(),
            source,
        };
        let read = || -> Result<Option<Signing>, KeyError> {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    let mut secret = [0u8; 32];
                    hex::decode_to_slice(text.trim(), &mut secret).map_err(|_| {
                        KeyError::Malformed {
                            path: path.to_owned(),
                        }
                    })?;
                    Ok(Some(Signing::new(SigningKey::from_bytes(&secret))))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io(e)),
            }
        };
        if let Some(signing) = read()? {
            return Ok(signing);
        }
        let key = SigningKey::from_bytes(&rand::random());
        write_new(path, &hex::encode(key.to_bytes())).map_err(io)?;
        tracing::info!(path = %path.display(), "transcript key created");
        // Read back: of two servers making the file at once, both keep the one written.
        read()?.ok_or_else(|| io(std::io::ErrorKind::NotFound.into()))
    }

    fn new(key: SigningKey) -> Signing {
        let public = key.verifying_key().to_bytes();
        Signing {
            public: TranscriptKey {
                algorithm: transcript::ALGORITHM.into(),
                public_key: BASE64.encode(public),
                key_id: transcript::key_id(&public),
            },
            key,
        }
    }

    /// What `GET /api/transcript-key` answers.
    pub fn public(&self) -> &TranscriptKey {
        &self.public
    }

    /// The signed transcript of a finished game: `record` as `GET /api/games/{id}` answers
    /// it, and both seats' rating changes if it changed ratings.
    pub fn sign(
        &self,
        record: serde_json::Value,
        ratings: Option<SeatPair<RatingChange>>,
    ) -> SignedTranscript {
        let body = serde_json::json!({
            "format": transcript::FORMAT,
            "game": record,
            "ratings": ratings,
        });
        // A `Value` always serializes.
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let signature = self.key.sign(&bytes);
        SignedTranscript {
            transcript: BASE64.encode(&bytes),
            signature: BASE64.encode(signature.to_bytes()),
            public_key: self.public.public_key.clone(),
            key_id: self.public.key_id.clone(),
        }
    }
}

/// `<database>-transcript-key` ([`KEY_FILE_SUFFIX`]), beside the SQLite file as its game
/// log is.
pub fn default_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(KEY_FILE_SUFFIX);
    PathBuf::from(name)
}

/// Writes `text` to a new file at `path`, readable by its owner only: written under a
/// temporary name, synced, then linked to `path` unless a file is there already, so that a
/// crash leaves the whole key or none and a key once written is never replaced.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(KEY_FILE_MODE);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    drop(file);
    // A file that appeared meanwhile (another server sharing the path) is kept.
    match std::fs::hard_link(&tmp, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    }
    std::fs::remove_file(&tmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, VerifyingKey};

    #[test]
    fn a_key_made_at_the_first_start_is_read_back_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = default_path(&dir.path().join("e.db"));
        let first = Signing::for_config(None, &dir.path().join("e.db")).unwrap();
        let second = Signing::from_file(&path).unwrap();
        assert_eq!(first.public(), second.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, KEY_FILE_MODE);
        }
        // Nothing else is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_malformed_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "not a key").unwrap();
        assert!(matches!(
            Signing::from_file(&path),
            Err(KeyError::Malformed { .. })
        ));
    }

    #[test]
    fn the_signature_covers_the_bytes_sent() {
        let signing = Signing::new(SigningKey::from_bytes(&[7; 32]));
        let signed = signing.sign(serde_json::json!({"game_id": "x"}), None);
        let bytes = BASE64.decode(&signed.transcript).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["format"], transcript::FORMAT);
        assert_eq!(body["ratings"], serde_json::Value::Null);
        let key: [u8; 32] = BASE64
            .decode(&signed.public_key)
            .unwrap()
            .try_into()
            .unwrap();
        let signature: [u8; 64] = BASE64
            .decode(&signed.signature)
            .unwrap()
            .try_into()
            .unwrap();
        let key = VerifyingKey::from_bytes(&key).unwrap();
        let signature = Signature::from_bytes(&signature);
        assert!(key.verify_strict(&bytes, &signature).is_ok());
        let mut changed = bytes.clone();
        changed[10] ^= 1;
        assert!(key.verify_strict(&changed, &signature).is_err());
        // Deterministic: the same game signs to the same bytes.
        assert_eq!(
            signing.sign(serde_json::json!({"game_id": "x"}), None),
            signed
        );
    }
}
