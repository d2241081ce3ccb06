//! Commitments against the pinned vectors, and what they must bind: game, round, seat, pick, nonce.

use elementals_protocol::commitment::{
    make, preimage, verify, TestVector, NONCE_LEN, PREIMAGE_LEN, TEST_VECTORS,
};
use elementals_protocol::rules::{Element, Seat};
use proptest::prelude::*;
use uuid::Uuid;

fn inputs(v: &TestVector) -> (Uuid, [u8; NONCE_LEN]) {
    let game = Uuid::parse_str(v.game_id).unwrap();
    let nonce = hex::decode(v.nonce_hex).unwrap().try_into().unwrap();
    (game, nonce)
}

#[test]
fn pinned_vectors_reproduce() {
    for v in TEST_VECTORS {
        let (game, nonce) = inputs(v);
        let bytes = preimage(&game, v.round, v.seat, v.pick, &nonce);
        assert_eq!(bytes.len(), PREIMAGE_LEN);
        assert_eq!(hex::encode(&bytes), v.preimage_hex, "{v:?}");
        let commitment = make(&game, v.round, v.seat, v.pick, &nonce);
        assert_eq!(hex::encode(commitment), v.commitment_hex, "{v:?}");
        let pinned = hex::decode(v.commitment_hex).unwrap();
        assert!(verify(&pinned, &game, v.round, v.seat, v.pick, &nonce));
    }
}

#[test]
fn pinned_vectors_cover_the_edges() {
    let has = |f: &dyn Fn(&TestVector) -> bool| TEST_VECTORS.iter().any(f);
    assert!(TEST_VECTORS.len() >= 4);
    assert!(has(&|v| v.seat == Seat::One) && has(&|v| v.seat == Seat::Two));
    assert!(has(&|v| v.round == 1) && has(&|v| v.round == u32::MAX));
    assert!(has(&|v| v.nonce_hex == "00".repeat(NONCE_LEN)));
    assert!(has(&|v| v.nonce_hex == "ff".repeat(NONCE_LEN)));
    let counting: String = (0..NONCE_LEN as u8).map(|b| format!("{b:02x}")).collect();
    assert!(has(&|v| v.nonce_hex == counting));
    // The first two differ only in the seat.
    let (a, b) = (&TEST_VECTORS[0], &TEST_VECTORS[1]);
    assert_eq!(
        (a.game_id, a.round, a.pick, a.nonce_hex),
        (b.game_id, b.round, b.pick, b.nonce_hex)
    );
    assert_ne!(a.seat, b.seat);
    assert_ne!(a.commitment_hex, b.commitment_hex);
}

#[test]
fn the_published_table_matches_the_pinned_vectors() {
    let doc = include_str!("../../docs/commitment-vectors.md");
    for v in TEST_VECTORS {
        let row = format!("| `{}` | `{}` |", v.preimage_hex, v.commitment_hex);
        assert!(doc.contains(&row), "docs/commitment-vectors.md lacks {row}");
        assert!(doc.contains(v.game_id) && doc.contains(v.nonce_hex));
    }
}

#[test]
fn the_opponents_commitment_does_not_open_for_me() {
    let v = &TEST_VECTORS[0];
    let (game, nonce) = inputs(v);
    let mine = make(&game, v.round, v.seat, v.pick, &nonce);
    let theirs = make(&game, v.round, v.seat.other(), v.pick, &nonce);
    assert_ne!(mine, theirs);
    assert!(!verify(&theirs, &game, v.round, v.seat, v.pick, &nonce));
}

#[test]
fn wrong_reveals_fail() {
    let v = &TEST_VECTORS[2];
    let (game, nonce) = inputs(v);
    let c = make(&game, v.round, v.seat, v.pick, &nonce);
    let mut other_nonce = nonce;
    other_nonce[31] ^= 1;
    assert!(!verify(&c, &game, v.round, v.seat, v.pick, &other_nonce));
    assert!(!verify(&c, &game, v.round, v.seat, v.pick + 1, &nonce));
    assert!(!verify(&c, &game, v.round + 1, v.seat, v.pick, &nonce));
    assert!(!verify(&c, &Uuid::nil(), v.round, v.seat, v.pick, &nonce));
    let mut flipped = c;
    flipped[0] ^= 0x80;
    assert!(!verify(&flipped, &game, v.round, v.seat, v.pick, &nonce));
}

fn seat() -> impl Strategy<Value = Seat> {
    prop_oneof![Just(Seat::One), Just(Seat::Two)]
}

fn uuid() -> impl Strategy<Value = Uuid> {
    any::<[u8; 16]>().prop_map(Uuid::from_bytes)
}

type Reveal = (Uuid, u32, Seat, Element, [u8; NONCE_LEN]);

fn reveal() -> impl Strategy<Value = Reveal> {
    (
        uuid(),
        any::<u32>(),
        seat(),
        any::<u16>(),
        any::<[u8; NONCE_LEN]>(),
    )
}

proptest! {
    #[test]
    fn a_commitment_opens_with_its_own_reveal((game, round, seat, pick, nonce) in reveal()) {
        let c = make(&game, round, seat, pick, &nonce);
        prop_assert!(verify(&c, &game, round, seat, pick, &nonce));
        prop_assert_eq!(preimage(&game, round, seat, pick, &nonce).len(), PREIMAGE_LEN);
    }

    #[test]
    fn changing_any_input_breaks_the_commitment(
        (game, round, seat, pick, nonce) in reveal(),
        field in 0..5usize,
        other in reveal(),
    ) {
        let c = make(&game, round, seat, pick, &nonce);
        let (mut g, mut r, mut s, mut p, mut n) = (game, round, seat, pick, nonce);
        match field {
            0 => { prop_assume!(other.0 != game); g = other.0 }
            1 => { prop_assume!(other.1 != round); r = other.1 }
            2 => s = seat.other(),
            3 => { prop_assume!(other.3 != pick); p = other.3 }
            _ => { prop_assume!(other.4 != nonce); n = other.4 }
        }
        prop_assert!(!verify(&c, &g, r, s, p, &n));
        prop_assert_ne!(make(&g, r, s, p, &n), c);
    }

    #[test]
    fn wrong_lengths_never_verify(
        (game, round, seat, pick, nonce) in reveal(),
        short_c in 0..32usize,
        long_n in 33..64usize,
    ) {
        let c = make(&game, round, seat, pick, &nonce);
        prop_assert!(!verify(&c[..short_c], &game, round, seat, pick, &nonce));
        let mut padded = nonce.to_vec();
        padded.resize(long_n, 0);
        prop_assert!(!verify(&c, &game, round, seat, pick, &padded));
    }
}
