//! Transcripts made here, by the rules and a key of the test's own: each check accepts the
//! game as played and refuses it changed in the one way it guards against.

use ed25519_dalek::{Signer, SigningKey};
use elementals_protocol::messages::GameId;
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use serde_json::{json, Value};

use super::*;

/// The seed's example game: player two wins at the edge after five rounds.
const SEED_PICKS: [(u16, u16); 5] = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];

const GAME: &str = "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab";

/// The body of a rated game between two registered players, played by the rules.
fn body() -> Value {
    let game_id: GameId = GAME.parse().unwrap();
    let mut board = Board::new(Variant::CLASSIC);
    let mut rounds = Vec::new();
    for (i, (one, two)) in SEED_PICKS.into_iter().enumerate() {
        let round = i as u32 + 1;
        let nonces = SeatPair::new([i as u8; 32], [0x80 | i as u8; 32]);
        let commit = |seat, pick, nonce: &[u8; 32]| {
            hex::encode(commitment::make(&game_id.0, round, seat, pick, nonce))
        };
        let outcome = board.play(one, two).unwrap();
        rounds.push(json!({
            "round": round,
            "commitments": {"one": commit(Seat::One, one, &nonces.one),
                            "two": commit(Seat::Two, two, &nonces.two)},
            "nonces": {"one": hex::encode(nonces.one), "two": hex::encode(nonces.two)},
            "picks": {"one": one, "two": two},
            "outcome": outcome,
            "positions": board.positions(),
            "clocks_ms": {"one": 170_000, "two": 170_000},
        }));
    }
    let (won, lost) = rate_win(1.25, 1.0);
    json!({
        "format": transcript::FORMAT,
        "game": {
            "game_id": GAME,
            "variant": Variant::CLASSIC,
            "time_control": TimeControl::BLITZ,
            "rated": true,
            "players": {"one": {"name": "ann", "guest": false, "rating": 1.0},
                        "two": {"name": "bob", "guest": false, "rating": 1.25}},
            "started_at": 1_000,
            "ended_at": 61_000,
            "result": {"winner": "two", "reason": "edge"},
            "rounds": rounds,
            "final_clocks_ms": {"one": 170_000, "two": 170_000},
        },
        "ratings": {"one": lost, "two": won},
    })
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

/// The envelope the server would send for these bytes.
fn signed_bytes(bytes: &[u8]) -> Vec<u8> {
    let key = key();
    let public = key.verifying_key().to_bytes();
    serde_json::to_vec(&SignedTranscript {
        transcript: BASE64.encode(bytes),
        signature: BASE64.encode(key.sign(bytes).to_bytes()),
        public_key: BASE64.encode(public),
        key_id: transcript::key_id(&public),
    })
    .unwrap()
}

fn signed(body: &Value) -> Vec<u8> {
    signed_bytes(&serde_json::to_vec(body).unwrap())
}

#[test]
fn a_game_played_by_the_rules_verifies() {
    let verified = verify(&signed(&body()), None).unwrap();
    assert_eq!(
        verified.key_id,
        transcript::key_id(&key().verifying_key().to_bytes())
    );
    assert_eq!(verified.transcript.game.rounds.len(), 5);
    // Pinned to the key that signed it, too.
    let public = key().verifying_key().to_bytes();
    assert!(verify(&signed(&body()), Some(&public)).is_ok());
}

#[test]
fn one_byte_changed_breaks_the_signature() {
    let envelope = signed(&body());
    let mut parsed: SignedTranscript = serde_json::from_slice(&envelope).unwrap();
    let mut bytes = BASE64.decode(&parsed.transcript).unwrap();
    // A digit of a clock: still valid JSON of a valid game, but not what was signed.
    let at = bytes.windows(6).position(|w| w == b"170000").unwrap();
    bytes[at] = b'2';
    parsed.transcript = BASE64.encode(&bytes);
    assert!(matches!(
        verify_signed(&parsed, None),
        Err(VerifyError::Signature { .. })
    ));
}

#[test]
fn another_key_than_the_one_required_is_refused() {
    let other = SigningKey::from_bytes(&[1; 32]).verifying_key().to_bytes();
    assert!(matches!(
        verify(&signed(&body()), Some(&other)),
        Err(VerifyError::WrongKey { .. })
    ));
}

#[test]
fn a_commitment_that_does_not_match_is_refused() {
    let mut body = body();
    // Round 3's pick for player one changed: its commitment no longer opens to it.
    body["game"]["rounds"][2]["picks"]["one"] = json!(4);
    assert_eq!(
        verify(&signed(&body), None),
        Err(VerifyError::Commitment { round: 3, seat: 1 })
    );
}

#[test]
fn a_round_against_the_rules_is_refused() {
    let mut body = body();
    body["game"]["rounds"][0]["positions"] = json!([0, 0, 0, 0, 0]);
    assert!(matches!(
        verify(&signed(&body), None),
        Err(VerifyError::Rules { round: 1, .. })
    ));
}

#[test]
fn a_result_the_board_does_not_give_is_refused() {
    let mut body = body();
    body["game"]["result"] = json!({"winner": "one", "reason": "resignation"});
    assert!(matches!(
        verify(&signed(&body), None),
        Err(VerifyError::Result(_))
    ));
}

#[test]
fn a_wrong_rating_change_is_refused() {
    let mut body = body();
    body["ratings"]["two"]["after"] = json!(2.0);
    let refused = verify(&signed(&body), None).unwrap_err();
    assert!(matches!(refused, VerifyError::Rating(_)), "{refused}");
    // An unrated game carries no ratings.
    let mut body = self::body();
    body["game"]["rated"] = json!(false);
    assert!(matches!(
        verify(&signed(&body), None),
        Err(VerifyError::Rating(_))
    ));
    body["ratings"] = Value::Null;
    assert!(verify(&signed(&body), None).is_ok());
}

#[test]
fn what_is_not_a_transcript_is_malformed() {
    for bad in [&b"{}"[..], b"not json", b"{\"transcript\":1}"] {
        assert!(matches!(verify(bad, None), Err(VerifyError::Malformed(_))));
    }
    assert!(matches!(
        verify(&signed_bytes(b"[1,2,3]"), None),
        Err(VerifyError::Body(_))
    ));
}

#[test]
fn a_public_key_is_read_as_base64_or_hex() {
    let public = key().verifying_key().to_bytes();
    assert_eq!(parse_public_key(&BASE64.encode(public)), Ok(public));
    assert_eq!(parse_public_key(&hex::encode(public)), Ok(public));
    assert!(parse_public_key("short").is_err());
}

#[test]
fn the_example_of_protocol_md_verifies() {
    let protocol = include_str!("../../PROTOCOL.md");
    let at = protocol
        .find("```json\n{\"transcript\": ")
        .expect("PROTOCOL.md's example transcript");
    let example = &protocol[at + "```json\n".len()..];
    let example = &example[..example.find("```").unwrap()];
    let verified = verify(example.as_bytes(), Some(&key().verifying_key().to_bytes())).unwrap();
    assert_eq!(verified.transcript.game.result.reason, EndReason::Aborted);
    assert_eq!(verified.transcript.ratings, None);
}
