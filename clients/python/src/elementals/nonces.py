"""Where a committed pick and its nonce wait for the reveal.

A pick committed without escrow must be revealed later, perhaps on another connection (a
dropped one resumed) or by another process (a correspondence game played a visit at a
time). The store is written before the commit is sent and cleared once the reveal is
answered. `MemoryNonceStore` outlives a client's reconnects; `FileNonceStore` outlives the
process too, one JSON file a game, in the same layout the Rust client (`elementals-client`)
uses, so either can reveal what the other committed.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .commitment import NONCE_LEN


@dataclass(frozen=True)
class SealedPick:
    """A pick committed to and not yet revealed."""

    round: int
    pick: int
    nonce: bytes


class NonceStore(Protocol):
    """One account's unrevealed commits, one a game."""

    def save(self, account: str, game_id: str, sealed: SealedPick) -> None: ...

    def load(self, account: str, game_id: str) -> SealedPick | None: ...

    def remove(self, account: str, game_id: str) -> None: ...


class MemoryNonceStore:
    """Kept in this process only."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], SealedPick] = {}

    def save(self, account: str, game_id: str, sealed: SealedPick) -> None:
        self._kept[(account.lower(), game_id)] = sealed

    def load(self, account: str, game_id: str) -> SealedPick | None:
        return self._kept.get((account.lower(), game_id))

    def remove(self, account: str, game_id: str) -> None:
        self._kept.pop((account.lower(), game_id), None)


class FileNonceStore:
    """`DIR/ACCOUNT/GAME.json`, written whole and synced before `save` returns, readable
    by its owner only: it holds picks the opponent has not seen."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _account_dir(self, account: str) -> Path:
        plain = account != "" and all(c.isascii() and (c.isalnum() or c in "_-") for c in account)
        name = account.lower() if plain else "x-" + account.encode().hex()
        return self.directory / name

    def _path(self, account: str, game_id: str) -> Path:
        # A game id is a UUID; anything else would not name a file of this store.
        if not all(c in "0123456789abcdef-" for c in game_id):
            raise ValueError(f"not a game id: {game_id!r}")
        return self._account_dir(account) / f"{game_id}.json"

    def save(self, account: str, game_id: str, sealed: SealedPick) -> None:
        path = self._path(account, game_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"round": sealed.round, "pick": sealed.pick, "nonce": sealed.nonce.hex()})
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(body)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def load(self, account: str, game_id: str) -> SealedPick | None:
        try:
            stored = json.loads(self._path(account, game_id).read_text())
        except FileNotFoundError:
            return None
        nonce = bytes.fromhex(stored["nonce"])
        if len(nonce) != NONCE_LEN:
            raise ValueError(f"a kept nonce of {len(nonce)} bytes")
        return SealedPick(round=int(stored["round"]), pick=int(stored["pick"]), nonce=nonce)

    def remove(self, account: str, game_id: str) -> None:
        self._path(account, game_id).unlink(missing_ok=True)

    def games(self, account: str) -> list[str]:
        """The games with a commit kept for `account`."""
        directory = self._account_dir(account)
        if not directory.is_dir():
            return []
        return sorted(p.stem for p in directory.glob("*.json"))

    def prune(self, account: str, keep: set[str]) -> int:
        """Removes what is kept for games not in `keep` (for example the ids `my_games`
        lists: every other game has ended). Returns how many went."""
        gone = [g for g in self.games(account) if g not in keep]
        for game_id in gone:
            self.remove(account, game_id)
        return len(gone)
