"""The commitment scheme against PROTOCOL.md section 8's test vectors, and the nonce stores."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from elementals import FileNonceStore, MemoryNonceStore, SealedPick, commitment, preimage
from elementals.messages import Seat

SEQ = bytes(range(32))
VECTORS: list[tuple[str, int, Seat, int, bytes, str]] = [
    ("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab", 1, "one", 5, bytes(32),
     "890016950cf8498d753350110eba90d15f68c3754d178089cb1a88056d3ae60c"),
    ("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab", 1, "two", 5, bytes(32),
     "b340f16ab1d2a405cdf369d70c405110ae5a5629f50fadac1235f1f33c109459"),
    ("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab", 2, "two", 2, SEQ,
     "a1be543458a30b436914ec789fc17897d5f7b077304a605bb0076f5b0934a254"),
    ("0190f5e2-7c4b-7d3a-8e1f-a2b3c4d5e6f7", 4294967295, "one", 99, b"\xff" * 32,
     "3d53715fdf49c13a26018b888e99084fd03b359958f2f0451143624b5c072c49"),
    ("00000000-0000-0000-0000-000000000000", 65536, "two", 1, SEQ,
     "2e13a5c56a9af3dfe624560ca62f922937f09779cb20235beafc31b76e72f6a2"),
]


@pytest.mark.parametrize(
    ("round", "seat", "pick", "nonce", "refused"),
    [
        (1, "three", 5, bytes(32), "seat"),
        (-1, "one", 5, bytes(32), "round"),
        (2**32, "one", 5, bytes(32), "round"),
        (1, "one", 65_536, bytes(32), "pick"),
        (1, "two", 5, bytes(31), "nonce"),
    ],
)
def test_a_preimage_refuses_what_it_cannot_encode(round: int, seat: str, pick: int, nonce: bytes, refused: str) -> None:
    with pytest.raises(ValueError, match=refused):
        preimage("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab", round, seat, pick, nonce)  # type: ignore[arg-type]


@pytest.mark.parametrize(("game_id", "round", "seat", "pick", "nonce", "expected"), VECTORS)
def test_commitments_match_the_protocol_vectors(
    game_id: str, round: int, seat: Seat, pick: int, nonce: bytes, expected: str
) -> None:
    assert len(preimage(game_id, round, seat, pick, nonce)) == 76
    assert commitment(game_id, round, seat, pick, nonce).hex() == expected


def test_a_nonce_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError):
        commitment(VECTORS[0][0], 1, "one", 5, bytes(31))


def test_a_file_store_keeps_picks_privately_per_account_until_removed(tmp_path: Path) -> None:
    game = "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab"
    sealed = SealedPick(round=3, pick=4, nonce=bytes([9]) * 32)
    store = FileNonceStore(tmp_path)
    store.save("Alice", game, sealed)
    path = tmp_path / "alice" / f"{game}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Another process (a new store on the same directory) reads it; names ignore case.
    assert FileNonceStore(tmp_path).load("alice", game) == sealed
    # A name that is not plain gets a directory of its own inside the store.
    assert store.load("../alice", game) is None
    assert store.games("alice") == [game]
    assert store.prune("alice", keep={game}) == 0
    assert store.prune("alice", keep=set()) == 1
    assert store.load("alice", game) is None
    memory = MemoryNonceStore()
    memory.save("bob", game, sealed)
    assert memory.load("BOB", game) == sealed
    memory.remove("bob", game)
    assert memory.load("bob", game) is None
