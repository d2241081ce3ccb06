//! Stable, machine-readable error codes carried by the `error` message.
//!
//! A code never changes meaning once published; clients switch on the code and show the
//! human `message` that comes with it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal : $desc:literal, )*) => {
        /// Every error a server may answer with. Serialized as its snake_case string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $( $(#[$doc])* #[doc = $desc] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in documentation order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as it appears on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            /// One line on what the code means, as published in PROTOCOL.md.
            pub fn description(self) -> &'static str {
                match self { $(ErrorCode::$variant => $desc,)* }
            }
        }
    };
}

error_codes! {
    BadMessage = "bad_message": "The frame is not a valid message: not MessagePack, truncated, trailing bytes, too deeply nested, a text frame, a wrong field type or a missing field.",
    UnknownType = "unknown_type": "The message's `type` is not one this protocol version defines.",
    UnknownField = "unknown_field": "The message carries a field its type does not define.",
    MessageTooLarge = "message_too_large": "The message exceeds the size limit (the connection is then closed with 1009).",
    UnsupportedVersion = "unsupported_version": "`hello` asked for a protocol version the server does not speak.",
    HelloRequired = "hello_required": "The first message on a connection must be `hello`.",
    NotAuthenticated = "not_authenticated": "This request needs a signed-in session (register, login, guest or resume first).",
    AlreadyAuthenticated = "already_authenticated": "The connection is already signed in.",
    InvalidName = "invalid_name": "The name is outside the documented limits (3-20 characters: letters, digits, `_` or `-`).",
    InvalidPassword = "invalid_password": "The password is outside the documented limits (8-128 bytes).",
    NameTaken = "name_taken": "An account with that name already exists.",
    BadCredentials = "bad_credentials": "Unknown name or wrong password.",
    InvalidToken = "invalid_token": "The session token is unknown, expired or revoked.",
    GuestNotAllowed = "guest_not_allowed": "Guests cannot do this (for example, create a rated game).",
    RateLimited = "rate_limited": "Too many messages or attempts; slow down. Repeated, the connection is closed with 1008.",
    InvalidVariant = "invalid_variant": "The variant breaks the rules' bounds (see Limits).",
    InvalidTimeControl = "invalid_time_control": "The time control is outside the bounds, or the preset name is unknown.",
    AlreadyQueued = "already_queued": "The player is already waiting in a pool or has an open seek.",
    NotQueued = "not_queued": "The player is not waiting in any pool.",
    AlreadyInGame = "already_in_game": "The player is seated in a live game that has not ended (one live game at a time), or, for a rematch, the opponent cannot start that game.",
    TooManyGames = "too_many_games": "The player sits in as many unfinished correspondence games as allowed (50, see Limits): finish one first.",
    UnknownSeek = "unknown_seek": "No open seek has that id (it may have been taken).",
    OwnSeek = "own_seek": "A player cannot accept their own seek or challenge themselves.",
    UnknownChallenge = "unknown_challenge": "No pending challenge with that id is addressed to, or from, this player.",
    UnknownPlayer = "unknown_player": "No player with that name is known or online.",
    TooManyRequests = "too_many_requests": "Too many open seeks or challenges, or live games watched, at once; or the server runs as many games against the computer as it allows.",
    UnknownStrength = "unknown_strength": "No computer opponent plays at that strength.",
    UnknownGame = "unknown_game": "No live game has that id.",
    NotSeated = "not_seated": "The connection holds no seat in that game.",
    WrongRound = "wrong_round": "The message names a round other than the current one.",
    WrongPhase = "wrong_phase": "The message does not fit the round's phase (for example, a reveal before both have committed).",
    AlreadyCommitted = "already_committed": "This seat has already committed in this round.",
    AlreadyRevealed = "already_revealed": "This seat has already revealed in this round.",
    BadCommitment = "bad_commitment": "The commitment is not exactly 32 bytes.",
    DuplicateCommitment = "duplicate_commitment": "The commitment equals the opponent's: copying is refused.",
    BadNonce = "bad_nonce": "The nonce is not exactly 32 bytes.",
    InvalidPick = "invalid_pick": "The pick is not an element of this game's variant (1..=number).",
    RevealMismatch = "reveal_mismatch": "The pick and nonce do not match the commitment; a corrected reveal may be sent until the reveal deadline.",
    EscrowMismatch = "escrow_mismatch": "A commit's escrowed pick and nonce do not open its commitment, or only one of the two was sent; the commit is refused and nothing changes.",
    GameOver = "game_over": "The game has ended.",
    NoDrawOffer = "no_draw_offer": "There is no draw offer from the opponent to decline.",
    NoRematch = "no_rematch": "A rematch cannot be offered for that game now.",
    ClaimNotAllowed = "claim_not_allowed": "The opponent is connected, or their grace period has not run out.",
    AbortNotAllowed = "abort_not_allowed": "Both players have committed in round 1: the game can no longer be aborted (resign instead).",
    NotWatching = "not_watching": "The connection is not watching that game.",
    ShuttingDown = "shutting_down": "The server is shutting down and takes no new games.",
    Unavailable = "unavailable": "The game's log cannot be written now (the server's disk is full, say). The move was kept but has not taken effect: the game is held, no clock running, and the server retries; once the move is logged it takes effect and its events follow as usual (`sync` shows where the game stands). Do not send it again.",
    Internal = "internal": "The server failed; nothing was changed. Retry later.",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_strings_match_as_str() {
        for code in ErrorCode::ALL {
            let bytes = rmp_serde::to_vec(code).unwrap();
            let s: String = rmp_serde::from_slice(&bytes).unwrap();
            assert_eq!(s, code.as_str());
            assert!(!code.description().is_empty());
        }
    }
}
