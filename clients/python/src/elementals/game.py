"""One game as a player or spectator sees it: a snapshot kept current by the game's
numbered events, a stream of those events, and the moves of the seat this client holds.

The client's reader applies every message about the game as it arrives, so `Game`'s state
is always the newest the client knows; a player acts on that state (commit when the round
wants this seat's commitment, reveal when it wants the reveal) rather than on single
events, so a snapshot after a resumed connection simply carries on.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, cast

from .commitment import commitment, new_nonce
from .errors import ConnectionLost, GameEndedAway, ServerError
from .messages import (
    GAME_EVENTS,
    GameInfo,
    GameResult,
    GameSnapshot,
    Phase,
    RoundRecord,
    SeatPairRating,
    Seat,
    Variant,
)
from .nonces import SealedPick

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("elementals")

Message = dict[str, Any]
Strategy = Callable[["Game"], int]

# Events a `Game` holds for a reader that has not read them; past this the oldest go (the
# state is kept current regardless, so a slow reader loses history, never correctness).
EVENTS_CAPACITY = 1024
# Reads of a finished game's record before giving up (it is stored moments after the end):
# with the doubling waits, about 10 s.
RECORD_TRIES = 15


def other(seat: Seat) -> Seat:
    return "two" if seat == "one" else "one"


class Game:
    """A game this client plays or watches. Made by the client, never directly."""

    def __init__(self, client: Client, game_id: str, seat: Seat | None, info: GameInfo | None) -> None:
        self._client = client
        self.game_id = game_id
        self.seat: Seat | None = seat
        self.info: GameInfo | None = info
        self.snapshot: GameSnapshot | None = None
        self.rated_result: bool | None = None
        self.ratings: SeatPairRating | None = None
        self.spectators = 0
        self._events: asyncio.Queue[Message] = asyncio.Queue(EVENTS_CAPACITY)
        self._changed = asyncio.Event()
        self._syncing = False
        # The round whose commit (or reveal) this client has sent since the last snapshot.
        self._sent_commit: int | None = None
        self._sent_reveal: int | None = None
        # Set when the game ended while this client was away: its events are lost, so no
        # rating_update is coming either.
        self.ended_away = False

    # --- state ---

    @property
    def variant(self) -> Variant:
        assert self.info is not None
        return self.info["variant"]

    @property
    def ready(self) -> bool:
        """Whether a snapshot has arrived: until then nothing is known of the round."""
        return self.snapshot is not None

    @property
    def round(self) -> int:
        return self.snapshot["round"] if self.snapshot else 0

    @property
    def phase(self) -> Phase:
        return self.snapshot["phase"] if self.snapshot else "commit"

    @property
    def positions(self) -> list[int]:
        return self.snapshot["positions"] if self.snapshot else []

    @property
    def history(self) -> list[RoundRecord]:
        return self.snapshot["rounds"] if self.snapshot else []

    @property
    def result(self) -> GameResult | None:
        return self.snapshot["result"] if self.snapshot else None

    @property
    def over(self) -> bool:
        return self.phase == "over"

    @property
    def owes_commit(self) -> bool:
        """This seat's commitment is wanted and has not been sent."""
        s = self.snapshot
        return (
            s is not None
            and self.seat is not None
            and s["phase"] == "commit"
            and not s["committed"][self.seat]
            and self._sent_commit != s["round"]
        )

    @property
    def owes_reveal(self) -> bool:
        """This seat's reveal is wanted and has not been sent."""
        s = self.snapshot
        return (
            s is not None
            and self.seat is not None
            and s["phase"] == "reveal"
            and not s["revealed"][self.seat]
            and self._sent_reveal != s["round"]
        )

    # --- what the client's reader feeds in ---

    def _reset(self, snapshot: GameSnapshot, seat: Seat | None) -> None:
        self.snapshot = copy.deepcopy(snapshot)
        self.info = snapshot["game"]
        self.seat = seat
        self.spectators = snapshot["spectators"]
        self._sent_commit = None
        self._sent_reveal = None
        self._syncing = False

    def _receive(self, msg: Message) -> None:
        kind = msg["type"]
        if kind == "snapshot":
            self._reset(cast(GameSnapshot, msg["snapshot"]), msg.get("seat"))
        elif kind == "spectators":
            self.spectators = msg["count"]
        elif kind in GAME_EVENTS:
            if not self._apply(msg):
                return
        self._push(msg)

    def _apply(self, event: Message) -> bool:
        """Applies a numbered event; False if it was stale or came after a gap."""
        s = self.snapshot
        if s is None:
            # The snapshot that follows `game_start` covers it.
            return False
        seq = event["seq"]
        if seq <= s["seq"]:
            return False
        if seq > s["seq"] + 1:
            if not self._syncing:
                self._syncing = True
                self._client._spawn(self._resync())
            return False
        s["seq"] = seq
        kind = event["type"]
        if "clocks" in event:
            s["clocks"] = event["clocks"]
        if kind == "round_start":
            s["round"] = event["round"]
            s["phase"] = "commit"
            s["committed"] = {"one": False, "two": False}
            s["revealed"] = {"one": False, "two": False}
        elif kind == "committed":
            s["committed"][cast(Seat, event["seat"])] = True
        elif kind == "reveal_phase":
            s["phase"] = "reveal"
        elif kind == "revealed":
            s["revealed"][cast(Seat, event["seat"])] = True
        elif kind == "round_result":
            s["rounds"].append(event["record"])
            s["positions"] = event["record"]["positions"]
            s["draw_offer"] = None
        elif kind == "draw_offered":
            s["draw_offer"] = event["by"]
        elif kind == "draw_declined":
            s["draw_offer"] = None
        elif kind == "presence":
            s["connected"][cast(Seat, event["seat"])] = event["connected"]
        elif kind == "game_over":
            s["phase"] = "over"
            s["result"] = event["result"]
            self.rated_result = event["rated"]
        elif kind == "rating_update":
            self.ratings = event["ratings"]
        return True

    async def _resync(self) -> None:
        try:
            await self._client.sync(self.game_id)
        except Exception as err:  # the next event's gap asks again
            log.debug("sync of %s failed: %s", self.game_id, err)
            self._syncing = False

    async def _ended_away(self) -> None:
        """The game ended while this client was away (its `sync` answered `game_over`): the
        result comes from its record, stored moments after the end, over HTTP."""
        delay = 0.05
        for _ in range(RECORD_TRIES):
            try:
                record = await self._client.record(self.game_id)
            except OSError as err:
                log.warning("the record of %s could not be read: %s", self.game_id, err)
                record = None
            if record is not None:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        self.ended_away = True
        if self.snapshot is not None and record is not None and not self.over:
            self.snapshot["phase"] = "over"
            self.snapshot["result"] = record["result"]
            self.rated_result = bool(record["rated"]) and record["result"]["winner"] is not None
        self._changed.set()

    def _push(self, msg: Message) -> None:
        if self._events.full():
            self._events.get_nowait()
        self._events.put_nowait(msg)
        self._changed.set()

    # --- reading ---

    async def next_event(self) -> Message:
        """The next message about this game: a snapshot, a numbered event in order, or a
        `spectators` count. The game's state already includes it."""
        return await self._client._until_dead(self._events.get())

    async def events(self) -> AsyncIterator[Message]:
        """Every message about the game until `game_over` (and `rating_update` if one is
        coming), in order."""
        while True:
            msg = await self.next_event()
            yield msg
            if self.over and not self._rating_pending():
                return

    def _rating_pending(self) -> bool:
        if self.ended_away:
            return False
        decisive = self.result is not None and self.result["winner"] is not None
        return bool(self.rated_result) and decisive and self.ratings is None

    async def changed(self) -> None:
        """Waits until the state has changed since the last call returned (at once if it
        has already). Independent of `next_event`: a player may use either."""
        await self._client._until_dead(self._changed.wait())
        self._changed.clear()

    # --- moves ---

    def _player(self) -> Seat:
        if self.seat is None:
            raise ValueError("a spectator has no moves")
        return self.seat

    async def commit(self, pick: int, *, escrow: bool = False) -> None:
        """Commits this round to `pick` with a fresh nonce, kept in the client's nonce store
        before the commitment is sent. With `escrow` the reveal travels with the commit and
        the server reveals for this seat (PROTOCOL.md section 8 states the trade)."""
        seat = self._player()
        round = self.round
        nonce = new_nonce()
        sealed = SealedPick(round=round, pick=pick, nonce=nonce)
        digest = commitment(self.game_id, round, seat, pick, nonce)
        msg: Message = {"type": "commit", "game_id": self.game_id, "round": round, "commitment": digest}
        if escrow:
            msg["pick"] = pick
            msg["nonce"] = nonce
            self._sent_reveal = round
        else:
            self._client._nonce_save(self.game_id, sealed)
        self._sent_commit = round
        await self._client.request(msg)

    async def reveal(self) -> None:
        """Reveals the pick committed this round, from the client's nonce store (so also one
        committed before a reconnect, or by an earlier process with a `FileNonceStore`)."""
        self._player()
        round = self.round
        sealed = self._client._nonce_load(self.game_id)
        if sealed is None or sealed.round != round:
            raise LookupError(f"no pick kept for round {round} of {self.game_id}")
        self._sent_reveal = round
        await self._client.request(
            {"type": "reveal", "game_id": self.game_id, "round": round, "pick": sealed.pick, "nonce": sealed.nonce}
        )
        self._client._nonce_remove(self.game_id)

    async def resign(self) -> None:
        await self._client.request({"type": "resign", "game_id": self.game_id})

    async def abort(self) -> None:
        """Calls the game off (no result, no rating change) while round 1 still waits for a
        commitment; `ServerError` `abort_not_allowed` once both have committed."""
        await self._client.request({"type": "abort", "game_id": self.game_id})

    async def offer_draw(self) -> None:
        await self._client.request({"type": "offer_draw", "game_id": self.game_id})

    async def decline_draw(self) -> None:
        await self._client.request({"type": "decline_draw", "game_id": self.game_id})

    async def claim_win(self) -> None:
        await self._client.request({"type": "claim_win", "game_id": self.game_id})

    async def act(self, strategy: Strategy, *, escrow: bool = False) -> bool:
        """Does what the state asks of this seat now, if anything: commits `strategy(self)`
        or reveals. A refusal of the move is logged, not raised (the opponent may have
        resigned at that moment); nor is a connection lost on the way (the snapshot after
        the reconnect shows whether the move arrived, and the next call sends what is still
        owed). Returns whether a move was sent."""
        try:
            if self.owes_commit:
                await self.commit(strategy(self), escrow=escrow)
                return True
            if self.owes_reveal and self._client._nonce_load(self.game_id) is not None:
                await self.reveal()
                return True
        except ServerError as err:
            log.warning("move in %s refused: %s", self.game_id, err)
        except ConnectionLost:
            pass
        return False

    async def play(
        self, strategy: Strategy, *, escrow: bool = False, rating_timeout: float = 10.0
    ) -> GameResult:
        """Plays the game to its end: commits `strategy(game)` each round (a pick in
        `1..=variant["number"]`) and reveals it. Survives reconnects. Returns the result,
        once the rating change of a rated game has come too (or `rating_timeout` passed)."""
        self._player()
        while not self.over:
            if self.ended_away:
                raise GameEndedAway(f"{self.game_id} ended while the client was away; its record could not be read")
            await self.act(strategy, escrow=escrow)
            if not self.over and not self.ended_away:
                await self.changed()
        if self._rating_pending():
            try:
                async with asyncio.timeout(rating_timeout):
                    while self._rating_pending():
                        await self.changed()
            except TimeoutError:
                log.warning("no rating_update for %s in time", self.game_id)
        self._client._nonce_remove(self.game_id)
        assert self.result is not None
        return self.result
