//! Commit-reveal for simultaneous picks: a player first sends `SHA-256(preimage)` and only later the
//! pick and nonce, so neither player (nor a spectator) learns a pick before both are locked in.
//!
//! This module owns the exact preimage layout, which clients in any language must reproduce byte for
//! byte, and the pinned [`TEST_VECTORS`] that prove they do. The layout binds the game, the round and
//! the seat, so a commitment cannot be replayed in another game, round, or copied from the opponent.
//!
//! ```text
//! offset len  field
//!  0      1   len(DOMAIN_TAG) = 20
//!  1     20   DOMAIN_TAG "elementals-commit-v1"
//! 21     16   game id, raw UUID bytes
//! 37      4   round, u32 big-endian
//! 41      1   seat number, 1 or 2
//! 42      2   pick, u16 big-endian
//! 44     32   nonce
//! 76          total
//! ```

use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::rules::{Element, Seat};

/// Length of the secret random nonce a client draws for every pick.
pub const NONCE_LEN: usize = 32;

/// Length of a commitment: a SHA-256 digest.
pub const COMMITMENT_LEN: usize = 32;

/// Separates these digests from any other SHA-256 use; the version lets the layout change later.
pub const DOMAIN_TAG: &[u8] = b"elementals-commit-v1";

/// Length of [`preimage`]'s output.
pub const PREIMAGE_LEN: usize = 1 + DOMAIN_TAG.len() + 16 + 4 + 1 + 2 + NONCE_LEN;

/// The bytes that are hashed; see the module docs for the layout.
pub fn preimage(
    game_id: &Uuid,
    round: u32,
    seat: Seat,
    pick: Element,
    nonce: &[u8; NONCE_LEN],
) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(PREIMAGE_LEN);
    // The tag is a short constant, so its length fits a byte.
    bytes.push(DOMAIN_TAG.len() as u8);
    bytes.extend_from_slice(DOMAIN_TAG);
    bytes.extend_from_slice(game_id.as_bytes());
    bytes.extend_from_slice(&round.to_be_bytes());
    bytes.push(seat.number());
    bytes.extend_from_slice(&pick.to_be_bytes());
    bytes.extend_from_slice(nonce);
    bytes
}

/// The commitment to a pick: SHA-256 of its [`preimage`].
pub fn make(
    game_id: &Uuid,
    round: u32,
    seat: Seat,
    pick: Element,
    nonce: &[u8; NONCE_LEN],
) -> [u8; COMMITMENT_LEN] {
    Sha256::digest(preimage(game_id, round, seat, pick, nonce)).into()
}

/// Whether a revealed pick and nonce open `commitment`. False when either slice has the wrong length,
/// which is ordinary bad input from the network rather than an error.
pub fn verify(
    commitment: &[u8],
    game_id: &Uuid,
    round: u32,
    seat: Seat,
    pick: Element,
    nonce: &[u8],
) -> bool {
    let Ok(nonce) = <&[u8; NONCE_LEN]>::try_from(nonce) else {
        return false;
    };
    if commitment.len() != COMMITMENT_LEN {
        return false;
    }
    let expected = make(game_id, round, seat, pick, nonce);
    // Compare every byte rather than stopping at the first difference, so timing says nothing about
    // how much of a guess was right.
    expected
        .iter()
        .zip(commitment)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// A pinned input and its expected preimage and digest, all hex lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestVector {
    /// Hyphenated UUID.
    pub game_id: &'static str,
    pub round: u32,
    pub seat: Seat,
    pub pick: Element,
    pub nonce_hex: &'static str,
    pub preimage_hex: &'static str,
    pub commitment_hex: &'static str,
}

const GAME_A: &str = "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab";
const NONCE_ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const NONCE_COUNT: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const NONCE_FF: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

/// Vectors every client implementation must reproduce. The first two differ only in the seat.
pub const TEST_VECTORS: &[TestVector] = &[
    TestVector {
        game_id: GAME_A,
        round: 1,
        seat: Seat::One,
        pick: 5,
        nonce_hex: NONCE_ZERO,
        preimage_hex: "14656c656d656e74616c732d636f6d6d69742d76316f1c2b4a8d3e4f5a9b7c0123456789ab000000010100050000000000000000000000000000000000000000000000000000000000000000",
        commitment_hex: "890016950cf8498d753350110eba90d15f68c3754d178089cb1a88056d3ae60c",
    },
    TestVector {
        game_id: GAME_A,
        round: 1,
        seat: Seat::Two,
        pick: 5,
        nonce_hex: NONCE_ZERO,
        preimage_hex: "14656c656d656e74616c732d636f6d6d69742d76316f1c2b4a8d3e4f5a9b7c0123456789ab000000010200050000000000000000000000000000000000000000000000000000000000000000",
        commitment_hex: "b340f16ab1d2a405cdf369d70c405110ae5a5629f50fadac1235f1f33c109459",
    },
    TestVector {
        game_id: GAME_A,
        round: 2,
        seat: Seat::Two,
        pick: 2,
        nonce_hex: NONCE_COUNT,
        preimage_hex: "14656c656d656e74616c732d636f6d6d69742d76316f1c2b4a8d3e4f5a9b7c0123456789ab00000002020002000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        commitment_hex: "a1be543458a30b436914ec789fc17897d5f7b077304a605bb0076f5b0934a254",
    },
    TestVector {
        game_id: "0190f5e2-7c4b-7d3a-8e1f-a2b3c4d5e6f7",
        round: u32::MAX,
        seat: Seat::One,
        pick: 99,
        nonce_hex: NONCE_FF,
        preimage_hex: "14656c656d656e74616c732d636f6d6d69742d76310190f5e27c4b7d3a8e1fa2b3c4d5e6f7ffffffff010063ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        commitment_hex: "3d53715fdf49c13a26018b888e99084fd03b359958f2f0451143624b5c072c49",
    },
    TestVector {
        game_id: "00000000-0000-0000-0000-000000000000",
        round: 65_536,
        seat: Seat::Two,
        pick: 1,
        nonce_hex: NONCE_COUNT,
        preimage_hex: "14656c656d656e74616c732d636f6d6d69742d76310000000000000000000000000000000000010000020001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        commitment_hex: "2e13a5c56a9af3dfe624560ca62f922937f09779cb20235beafc31b76e72f6a2",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preimage_has_the_documented_layout() {
        let game = Uuid::from_bytes([0xab; 16]);
        let nonce = [0x5a; NONCE_LEN];
        let bytes = preimage(&game, 0x0102_0304, Seat::Two, 0x0a0b, &nonce);
        assert_eq!(bytes.len(), PREIMAGE_LEN);
        assert_eq!(PREIMAGE_LEN, 76);
        assert_eq!(bytes[0], 20);
        assert_eq!(&bytes[1..21], b"elementals-commit-v1");
        assert_eq!(&bytes[21..37], &[0xab; 16]);
        assert_eq!(&bytes[37..41], &[1, 2, 3, 4]);
        assert_eq!(bytes[41], 2);
        assert_eq!(&bytes[42..44], &[0x0a, 0x0b]);
        assert_eq!(&bytes[44..], &nonce);
    }

    #[test]
    fn verify_refuses_wrong_lengths() {
        let game = Uuid::nil();
        let nonce = [7; NONCE_LEN];
        let commitment = make(&game, 1, Seat::One, 3, &nonce);
        assert!(verify(&commitment, &game, 1, Seat::One, 3, &nonce));
        assert!(!verify(&commitment[..31], &game, 1, Seat::One, 3, &nonce));
        assert!(!verify(&[], &game, 1, Seat::One, 3, &nonce));
        let mut long = commitment.to_vec();
        long.push(0);
        assert!(!verify(&long, &game, 1, Seat::One, 3, &nonce));
        assert!(!verify(&commitment, &game, 1, Seat::One, 3, &nonce[..31]));
        assert!(!verify(&commitment, &game, 1, Seat::One, 3, &[7; 33]));
    }
}
