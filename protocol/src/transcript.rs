//! Signed transcripts of finished games (`GET /api/games/{id}/transcript`, PROTOCOL.md
//! section 12): the envelope as it travels, and the names both ends agree on. Signing is
//! the server's and checking the client library's (`elementals_client::transcript`); this
//! crate holds no key and does no cryptography beyond the key's id.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `format` field of every signed body of this version.
pub const FORMAT: &str = "elementals-transcript-v1";

/// The signature scheme, as `GET /api/transcript-key` names it.
pub const ALGORITHM: &str = "ed25519";

/// What `GET /api/games/{id}/transcript` answers. Every byte string is standard base64
/// with padding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignedTranscript {
    /// The signed bytes: a UTF-8 JSON object (see PROTOCOL.md), verified as they are, never
    /// re-encoded.
    pub transcript: String,
    /// The Ed25519 signature of those bytes, 64 bytes.
    pub signature: String,
    /// The server's Ed25519 public key, 32 bytes.
    pub public_key: String,
    /// [`key_id`] of that key.
    pub key_id: String,
}

/// What `GET /api/transcript-key` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptKey {
    pub algorithm: String,
    pub public_key: String,
    pub key_id: String,
}

/// A public key's id: the first 8 bytes of its SHA-256, as 16 lowercase hex characters.
pub fn key_id(public_key: &[u8; 32]) -> String {
    Sha256::digest(public_key)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_id_is_its_hash_prefix_in_hex() {
        // SHA-256 of 32 zero bytes begins 66687aadf862bd77.
        assert_eq!(key_id(&[0; 32]), "66687aadf862bd77");
    }
}
