//! Checking a finished game's signed transcript (`GET /api/games/{id}/transcript`,
//! PROTOCOL.md section 12) offline: the Ed25519 signature over the bytes as sent, every
//! commitment against its pick and nonce, every round against the rules, the result, and
//! the rating change from the ratings before the game.
//!
//! [`verify`] stops at the first failure and says which check failed and where; a bot can
//! call it on a transcript it fetched, the `elementals verify` command on a file or URL.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};
use elementals_protocol::commitment;
use elementals_protocol::messages::{EndReason, GameResult, SeatPair};
use elementals_protocol::rating::{rate_win, RatingChange};
use elementals_protocol::rules::{Board, Seat};
use elementals_protocol::transcript::{self, SignedTranscript};
use serde::Deserialize;

/// A finished game's record, as the transcript's `game` holds it (without account ids).
pub use elementals_protocol::record::{GameRecord, Hash32, RecordPlayer, RoundLog};

/// How far a rating after the game may be from the one recomputed: JSON carries the
/// numbers as decimal text, which a parser may read back one unit in the last place off.
pub const RATING_TOLERANCE: f64 = 1e-9;

/// Why a transcript is refused. Each names the check that failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// Not a transcript envelope, or one whose fields do not decode.
    #[error("not a transcript: {0}")]
    Malformed(String),
    /// Signed with another key than the one required (`--key`).
    #[error("signed with key {found}, not with the key required ({expected})")]
    WrongKey { expected: String, found: String },
    /// The envelope's key id is not its key's.
    #[error("the key id {claimed} is not the id of the key given ({actual})")]
    KeyId { claimed: String, actual: String },
    /// The signature does not match the transcript's bytes: they were changed, or signed
    /// by another key.
    #[error("bad signature: the transcript's bytes are not what key {key_id} signed")]
    Signature { key_id: String },
    /// The signed body is not a transcript of a version this client knows.
    #[error("the signed body is not a transcript this client reads: {0}")]
    Body(String),
    #[error("round {round}: player {seat}'s commitment does not match their pick and nonce")]
    Commitment { round: u32, seat: u8 },
    #[error("round {round}: {what}")]
    Rules { round: u32, what: String },
    #[error("the result does not follow from the game: {0}")]
    Result(String),
    #[error("the rating change does not follow from the ratings before the game: {0}")]
    Rating(String),
}

/// The signed body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Transcript {
    pub format: String,
    pub game: GameRecord,
    /// Both seats' ratings before and after the game; `None` if it changed no rating.
    pub ratings: Option<SeatPair<RatingChange>>,
}

/// A transcript that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The id of the key that signed it.
    pub key_id: String,
    pub transcript: Transcript,
}

/// Checks a transcript as `GET /api/games/{id}/transcript` answers it (its JSON bytes).
/// With `required_key` (the server's public key, 32 bytes), a transcript signed by any
/// other key is refused; without, any key is accepted and [`Verified::key_id`] says which
/// signed it, to compare with the server's `GET /api/transcript-key`.
pub fn verify(json: &[u8], required_key: Option<&[u8; 32]>) -> Result<Verified, VerifyError> {
    let signed: SignedTranscript =
        serde_json::from_slice(json).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    verify_signed(&signed, required_key)
}

/// [`verify`] on an envelope already parsed.
pub fn verify_signed(
    signed: &SignedTranscript,
    required_key: Option<&[u8; 32]>,
) -> Result<Verified, VerifyError> {
    let key: [u8; 32] = decode_fixed("public_key", &signed.public_key)?;
    let key_id = transcript::key_id(&key);
    if let Some(required) = required_key {
        if *required != key {
            return Err(VerifyError::WrongKey {
                expected: transcript::key_id(required),
                found: key_id,
            });
        }
    }
    if signed.key_id != key_id {
        return Err(VerifyError::KeyId {
            claimed: signed.key_id.clone(),
            actual: key_id,
        });
    }
    let signature: [u8; 64] = decode_fixed("signature", &signed.signature)?;
    let bytes = BASE64
        .decode(&signed.transcript)
        .map_err(|e| VerifyError::Malformed(format!("transcript: not base64: {e}")))?;
    let verifying = VerifyingKey::from_bytes(&key)
        .map_err(|_| VerifyError::Malformed("public_key: not an Ed25519 public key".into()))?;
    verifying
        .verify_strict(&bytes, &Signature::from_bytes(&signature))
        .map_err(|_| VerifyError::Signature {
            key_id: key_id.clone(),
        })?;
    let transcript: Transcript =
        serde_json::from_slice(&bytes).map_err(|e| VerifyError::Body(e.to_string()))?;
    check(&transcript)?;
    Ok(Verified { key_id, transcript })
}

/// Every check but the signature's: the format, the commitments, the rounds, the result
/// and the ratings.
pub fn check(transcript: &Transcript) -> Result<(), VerifyError> {
    if transcript.format != transcript::FORMAT {
        return Err(VerifyError::Body(format!(
            "format {:?}, not {:?}",
            transcript.format,
            transcript::FORMAT
        )));
    }
    let game = &transcript.game;
    let board = check_rounds(game)?;
    check_result(game, &board)?;
    check_ratings(game, transcript.ratings.as_ref())
}

/// Each round's commitments, then its play on the board; returns the final board.
fn check_rounds(game: &GameRecord) -> Result<Board, VerifyError> {
    game.variant.validate().map_err(|e| VerifyError::Rules {
        round: 0,
        what: format!("the variant is not playable: {e}"),
    })?;
    let mut board = Board::new(game.variant);
    for (i, round) in game.rounds.iter().enumerate() {
        let n = round.round;
        let rules = |what: String| VerifyError::Rules { round: n, what };
        if usize::try_from(n).ok() != Some(i + 1) {
            return Err(rules(format!("listed as round {}", i + 1)));
        }
        for seat in Seat::BOTH {
            let matches = commitment::verify(
                &round.commitments.get(seat).0,
                &game.game_id.0,
                n,
                seat,
                *round.picks.get(seat),
                &round.nonces.get(seat).0,
            );
            if !matches {
                return Err(VerifyError::Commitment {
                    round: n,
                    seat: seat.number(),
                });
            }
        }
        let outcome = board
            .play(round.picks.one, round.picks.two)
            .map_err(|e| rules(e.to_string()))?;
        if outcome != round.outcome {
            return Err(rules(format!(
                "the outcome recorded is {:?}; the rules give {outcome:?}",
                round.outcome
            )));
        }
        if board.positions() != round.positions.as_slice() {
            return Err(rules(format!(
                "the positions recorded are {:?}; the rules give {:?}",
                round.positions,
                board.positions()
            )));
        }
    }
    Ok(board)
}

/// The result against the board and the reason.
fn check_result(game: &GameRecord, board: &Board) -> Result<(), VerifyError> {
    let GameResult { winner, reason } = game.result;
    let fail = |what: String| Err(VerifyError::Result(what));
    match (board.winner(), reason) {
        (Some(edge), EndReason::Edge) if winner == Some(edge) => {}
        (Some(edge), _) => {
            return fail(format!(
                "player {} reached the edge, but the result is {winner:?} by {reason:?}",
                edge.number()
            ))
        }
        (None, EndReason::Edge) => return fail("no element reached the edge".into()),
        (None, _) => {}
    }
    let decisive = matches!(
        reason,
        EndReason::Edge
            | EndReason::Time
            | EndReason::NoReveal
            | EndReason::Resignation
            | EndReason::Abandoned
    );
    if decisive != winner.is_some() {
        return fail(format!("{reason:?} with winner {winner:?}"));
    }
    if reason == EndReason::Aborted && !game.rounds.is_empty() {
        return fail("an aborted game has rounds played".into());
    }
    Ok(())
}

/// A game that changes ratings (rated, between two registered players, won) carries both
/// seats' changes, and they are the rules' from the ratings before; any other carries none.
fn check_ratings(
    game: &GameRecord,
    ratings: Option<&SeatPair<RatingChange>>,
) -> Result<(), VerifyError> {
    let fail = |what: String| Err(VerifyError::Rating(what));
    let players = &game.players;
    let registered = !players.one.guest && !players.two.guest;
    let two_accounts = !players.one.name.eq_ignore_ascii_case(&players.two.name);
    let changes = game.rated && registered && two_accounts;
    match (game.result.winner, ratings) {
        (Some(winner), Some(ratings)) if changes => {
            let (won, lost) = rate_win(
                ratings.get(winner).before,
                ratings.get(winner.other()).before,
            );
            for (seat, expected) in [(winner, won), (winner.other(), lost)] {
                let given = ratings.get(seat);
                if (given.after - expected.after).abs() > RATING_TOLERANCE {
                    return fail(format!(
                        "player {} went from {} to {}; the rating rules give {}",
                        seat.number(),
                        given.before,
                        given.after,
                        expected.after
                    ));
                }
            }
            Ok(())
        }
        (Some(_), None) if changes => fail("a rated game won by a player carries none".into()),
        (_, Some(_)) => fail("a game that changes no rating carries rating changes".into()),
        (_, None) => Ok(()),
    }
}

fn decode_fixed<const N: usize>(field: &str, text: &str) -> Result<[u8; N], VerifyError> {
    let bytes = BASE64
        .decode(text)
        .map_err(|e| VerifyError::Malformed(format!("{field}: not base64: {e}")))?;
    <[u8; N]>::try_from(bytes.as_slice())
        .map_err(|_| VerifyError::Malformed(format!("{field}: {} bytes, not {N}", bytes.len())))
}

/// A public key given as text: standard base64 of its 32 bytes (as
/// `GET /api/transcript-key` gives it), or 64 hex characters.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], VerifyError> {
    let text = text.trim();
    let mut key = [0u8; 32];
    if text.len() == 64 && hex::decode_to_slice(text, &mut key).is_ok() {
        return Ok(key);
    }
    decode_fixed("key", text)
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
