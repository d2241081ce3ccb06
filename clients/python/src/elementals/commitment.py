"""The commitment scheme of PROTOCOL.md section 8: SHA-256 over a 76-byte preimage."""

from __future__ import annotations

import hashlib
import secrets
import uuid

from .messages import Seat

DOMAIN_TAG = b"elementals-commit-v1"
NONCE_LEN = 32


def preimage(game_id: str, round: int, seat: Seat, pick: int, nonce: bytes) -> bytes:
    """The 76 bytes a commitment hashes: tag, game id, round, own seat, pick, nonce."""
    if len(nonce) != NONCE_LEN:
        raise ValueError(f"a nonce is {NONCE_LEN} bytes, not {len(nonce)}")
    # Untyped callers may pass anything: a wrong value must not hash to some commitment.
    if seat not in ("one", "two"):
        raise ValueError(f"a seat is 'one' or 'two', not {seat!r}")
    if not 0 <= round <= 0xFFFF_FFFF:
        raise ValueError(f"a round is a u32, not {round}")
    if not 0 <= pick <= 0xFFFF:
        raise ValueError(f"a pick is a u16, not {pick}")
    return b"".join(
        (
            bytes([len(DOMAIN_TAG)]),
            DOMAIN_TAG,
            uuid.UUID(game_id).bytes,
            round.to_bytes(4, "big"),
            bytes([1 if seat == "one" else 2]),
            pick.to_bytes(2, "big"),
            nonce,
        )
    )


def commitment(game_id: str, round: int, seat: Seat, pick: int, nonce: bytes) -> bytes:
    """SHA-256 of the preimage: the 32 bytes sent in `commit`."""
    return hashlib.sha256(preimage(game_id, round, seat, pick, nonce)).digest()


def new_nonce() -> bytes:
    """32 bytes from the operating system's CSPRNG: a predictable nonce gives the pick away."""
    return secrets.token_bytes(NONCE_LEN)
