"""Full games against the real server (conftest.py starts it): a live game to its end, a
live game resumed after a dropped connection, a correspondence game played a visit at a
time by short-lived clients, aborts and rematches, a player in several games at once, and
requests paced to a server's message limit."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import MAX_CORRESPONDENCE_GAMES, serve

from elementals import Client, ClientClosed, FileNonceStore, Game, ServerError
from elementals.messages import Variant

T = TypeVar("T")
# Each test has a pool of its own (a pool is a variant, preset and rated flag), so that no
# test's player is paired with another test's.
LIVE: Variant = {"number": 5, "range": 2, "distance": 3}
RESUMED: Variant = {"number": 7, "range": 3, "distance": 2}
CORRESPONDENCE: Variant = {"number": 3, "range": 1, "distance": 2}
REMATCHED: Variant = {"number": 9, "range": 4, "distance": 2}
MANY_LIVE: Variant = {"number": 11, "range": 5, "distance": 2}
MANY_CORRESPONDENCE: Variant = {"number": 13, "range": 6, "distance": 2}
ENDED_AWAY: Variant = {"number": 15, "range": 7, "distance": 2}


def run(scenario: Awaitable[T], timeout: float = 60.0) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await scenario

    return asyncio.run(bounded())


def random_pick(game: Game) -> int:
    return random.randint(1, game.variant["number"])


async def paired(url: str, variant: Variant, preset: Any, **options: Any) -> tuple[Client, Client, Game, Game]:
    """Two guests in one pool, and the game it pairs them in."""
    a = await Client.connect(url, **options)
    b = await Client.connect(url, **options)
    await a.guest()
    await b.guest()
    await a.join_pool(variant, preset)
    await b.join_pool(variant, preset)
    game_a, game_b = await asyncio.gather(a.next_game(), b.next_game())
    assert game_a.game_id == game_b.game_id
    assert {game_a.seat, game_b.seat} == {"one", "two"}
    return a, b, game_a, game_b


async def next_push_of(client: Client, kind: str) -> dict[str, Any]:
    """The next push of this type, those before it skipped."""
    while True:
        push = await client.next_push()
        if push["type"] == kind:
            return push


async def until_over(game: Game) -> None:
    while not game.over:
        await game.changed()


async def until_ready(game: Game) -> None:
    """Until the game's first snapshot (which follows `game_start`) has come."""
    while not game.ready:
        await game.changed()


def test_a_live_game_is_played_to_its_end_one_seat_escrowing_and_watched(server_url: str) -> None:
    async def scenario() -> None:
        a, b, game_a, game_b = await paired(server_url, LIVE, "blitz")
        # A spectator needs no account. It asks for no batches: every frame is one message.
        spectator = await Client.connect(server_url, batch=False)
        watched = await spectator.watch(game_a.game_id)
        assert watched.seat is None
        # One seat escrows its reveals with its commits (the server reveals for it), the
        # other reveals itself.
        result_a, result_b = await asyncio.gather(game_a.play(random_pick), game_b.play(random_pick, escrow=True))
        assert result_a == result_b
        assert result_a["reason"] == "edge"
        winner = result_a["winner"]
        assert winner is not None
        # The winner's element stands on its edge: +distance for one, -distance for two.
        edge = LIVE["distance"] if winner == "one" else -LIVE["distance"]
        assert edge in game_a.positions
        assert game_a.history == game_b.history
        assert len(game_a.history) >= LIVE["distance"]
        assert game_a.rated_result is False, "guests play unrated"
        while not watched.over:
            await watched.changed()
        assert watched.result == result_a
        assert watched.history == game_a.history
        # The players asked for batches: a move's reply came in one frame with the events
        # it caused.
        assert a.batches_received > 0 and b.batches_received > 0
        assert spectator.batches_received == 0
        await spectator.close()
        await a.close()
        await b.close()

    run(scenario())


def test_a_dropped_connection_reconnects_resumes_and_reveals_what_it_committed(server_url: str) -> None:
    async def scenario() -> None:
        a, b, game_a, game_b = await paired(server_url, RESUMED, "blitz", backoff=(0.05, 1.0))
        committed: dict[int, int] = {}

        def remembered_pick(game: Game) -> int:
            committed[game.round] = random_pick(game)
            return committed[game.round]

        async def play_and_drop_once() -> None:
            dropped = False
            drop_round = 0
            seat = game_a.seat
            assert seat is not None
            while not game_a.over:
                await game_a.act(remembered_pick)
                s = game_a.snapshot
                if not dropped and s is not None and s["committed"][seat] and not s["revealed"][seat]:
                    # Committed, not revealed: the pick must come back from the nonce store.
                    dropped = True
                    drop_round = s["round"]
                    a.drop_connection()
                    await until_presence(game_b, connected=False)
                if not game_a.over:
                    await game_a.changed()
            assert dropped
            resumed = game_a.history[drop_round - 1]
            assert resumed["picks"][seat] == committed[drop_round]

        async def until_presence(game: Game, connected: bool) -> None:
            """Until `game`'s player hears that the opponent's connection dropped (or came back)."""
            while True:
                event = await game.next_event()
                if event["type"] == "presence" and event["seat"] != game.seat and event["connected"] == connected:
                    return

        await asyncio.gather(play_and_drop_once(), game_b.play(random_pick))
        assert a.reconnects == 1
        assert game_a.result == game_b.result
        assert game_a.result is not None and game_a.result["reason"] == "edge"
        assert game_a.history == game_b.history
        await a.close()
        await b.close()

    run(scenario())


def test_a_correspondence_game_is_played_in_visits_that_keep_their_nonces_on_disk(
    server_url: str, tmp_path: Path
) -> None:
    async def scenario() -> None:
        a, b, game_a, game_b = await paired(server_url, CORRESPONDENCE, "corr-1d")
        assert game_a.info is not None and game_a.info["time_control"].get("per_phase_ms") == 86_400_000
        assert a.session is not None and b.session is not None
        # Element 2 beats 1 (N=3, R=1): the player picking 2 wins every round.
        players = [
            (a.session["token"], FileNonceStore(tmp_path / "a"), 2),
            (b.session["token"], FileNonceStore(tmp_path / "b"), 1),
        ]
        winner = game_a.seat
        game_id = game_a.game_id
        await a.close()
        await b.close()
        moves: list[str] = []
        result = None
        while result is None:
            for token, store, pick in players:
                async with await Client.connect(server_url, nonces=store) as visitor:
                    auth = await visitor.resume(token)
                    if auth.get("game_id") is None:
                        continue
                    game = await visitor.next_game()
                    assert game.game_id == game_id and game.ready
                    (mine,) = await visitor.my_games()
                    for owed in mine["owed"]:
                        assert owed["deadline"] is not None
                        assert 0 < owed["deadline"] - time.time() * 1000 <= 86_400_000
                    action = "commit" if game.owes_commit else "reveal" if game.owes_reveal else None
                    round = game.round
                    if await game.act(lambda _: pick):
                        assert action is not None
                        moves.append(action)
                        await settled(game, action, round)
                    if game.over:
                        result = game.result
                        break
        assert result == {"winner": winner, "reason": "edge"}
        # Two rounds, each a commit and a reveal per seat, every reveal made by a later
        # client than its commit: the nonces came back from the files.
        assert moves == ["commit", "commit", "reveal", "reveal"] * 2

    async def settled(game: Game, action: str, round: int) -> None:
        """Until the server has shown this seat's move: its `committed`, or its `revealed`
        (and, if it was the round's last reveal, the round's end or the game's)."""
        seat = game.seat
        assert seat is not None
        while not game.over:
            s = game.snapshot
            assert s is not None
            if s["round"] > round:
                return
            if action == "commit" and (s["committed"][seat] or s["phase"] != "commit"):
                return
            if action == "reveal" and s["revealed"][seat] and not s["revealed"]["two" if seat == "one" else "one"]:
                return
            await game.changed()

    run(scenario())


def test_a_superseded_client_stops_and_does_not_reconnect(server_url: str) -> None:
    async def scenario() -> None:
        first = await Client.connect(server_url, backoff=(0.05, 1.0))
        auth = await first.guest()
        second = await Client.connect(server_url)
        await second.resume(auth["token"])
        notice = await first.next_push()
        assert notice["type"] == "notice" and notice["code"] == "superseded"
        # Reconnecting would supersede the newer connection in turn: the client stops.
        with pytest.raises(ClientClosed):
            await first.next_game()
        with pytest.raises(ClientClosed):
            await first.ping()
        assert first.reconnects == 0
        assert await second.ping() >= 0
        await second.close()

    run(scenario())


def test_an_abort_a_declined_rematch_and_an_accepted_one(server_url: str) -> None:
    async def scenario() -> None:
        a, b, game_a, game_b = await paired(server_url, REMATCHED, "blitz")
        await until_ready(game_a)
        # Nobody has committed: the game can be called off.
        await game_a.abort()
        await asyncio.gather(until_over(game_a), until_over(game_b))
        assert game_a.result == game_b.result == {"winner": None, "reason": "aborted"}
        assert game_a.rated_result is False

        first = game_a.game_id
        await a.offer_rematch(first)
        assert await next_push_of(b, "rematch_offered") == {"type": "rematch_offered", "game_id": first, "by": game_a.seat}
        await b.decline_rematch(first)
        assert await next_push_of(a, "rematch_declined") == {"type": "rematch_declined", "game_id": first, "by": game_b.seat}
        with pytest.raises(ServerError) as refused:
            await b.decline_rematch(first)
        assert refused.value.code == "no_rematch"

        # Offered again, and accepted: the new game has the seats swapped.
        await a.offer_rematch(first)
        await next_push_of(b, "rematch_offered")
        await b.offer_rematch(first)
        again_a, again_b = await asyncio.gather(a.next_game(), b.next_game())
        assert again_a.game_id == again_b.game_id != first
        assert (again_a.seat, again_b.seat) == (game_b.seat, game_a.seat)
        await asyncio.gather(until_ready(again_a), until_ready(again_b))
        # Once both have committed in round 1, it can no longer be aborted.
        await again_a.commit(1)
        await again_b.commit(2)
        with pytest.raises(ServerError) as refused:
            await again_b.abort()
        assert refused.value.code == "abort_not_allowed"
        await again_a.resign()
        await asyncio.gather(until_over(again_a), until_over(again_b))
        assert again_a.result == {"winner": again_b.seat, "reason": "resignation"}
        await a.close()
        await b.close()

    run(scenario())


def test_one_connection_plays_a_live_game_and_correspondence_games_at_once(server_url: str) -> None:
    async def scenario() -> None:
        a, b, live_a, live_b = await paired(server_url, MANY_LIVE, "blitz")
        games_b = [live_b]
        for _ in range(MAX_CORRESPONDENCE_GAMES):
            await a.join_pool(MANY_CORRESPONDENCE, "corr-1d")
            await b.join_pool(MANY_CORRESPONDENCE, "corr-1d")
            corr_a, corr_b = await asyncio.gather(a.next_game(), b.next_game())
            assert corr_a.game_id == corr_b.game_id
            games_b.append(corr_b)
        with pytest.raises(ServerError) as refused:
            await a.join_pool(MANY_CORRESPONDENCE, "corr-1d")
        assert refused.value.code == "too_many_games"

        # A new connection signs in with the token: every game comes back to it, ready.
        assert a.session is not None
        a2 = await Client.connect(server_url)
        auth = await a2.resume(a.session["token"])
        ids = [game.game_id for game in games_b]
        assert auth.get("game_id") == live_a.game_id
        assert auth.get("games", [])[0] == live_a.game_id
        assert sorted(auth.get("games", [])) == sorted(ids)
        games_a2 = [await a2.next_game() for _ in ids]
        assert sorted(game.game_id for game in games_a2) == sorted(ids)
        assert sorted(game.game_id for game in a2.games) == sorted(ids)
        assert all(game.ready for game in games_a2)
        with pytest.raises(ClientClosed):
            await a.next_game()

        # All three are played at once, their moves interleaved on the two connections.
        results = await asyncio.gather(
            *(game.play(random_pick) for game in games_a2), *(game.play(random_pick) for game in games_b)
        )
        assert all(result["reason"] == "edge" for result in results)
        for game in games_b:
            mine = a2.game(game.game_id)
            assert mine is not None and mine.result == game.result
        await a2.close()
        await b.close()

    run(scenario())


def test_a_game_that_ends_while_the_client_is_away_ends_with_its_record(server_url: str) -> None:
    async def scenario() -> None:
        # A reconnects a second or two after its drop: by then B has resigned.
        a, b, game_a, game_b = await paired(server_url, ENDED_AWAY, "blitz", backoff=(2.0, 2.0))
        await asyncio.gather(until_ready(game_a), until_ready(game_b))
        a.drop_connection()
        await game_b.resign()
        await until_over(game_b)
        # A hears no game_over: after its resume the game is not among its seats, its sync
        # answers game_over, and the result comes from the game's record.
        result = await game_a.play(random_pick)
        assert a.reconnects == 1
        assert result == game_b.result == {"winner": game_a.seat, "reason": "resignation"}
        assert game_a.ended_away
        await a.close()
        await b.close()

    run(scenario())


def test_requests_are_paced_to_the_servers_message_limit() -> None:
    # A server allowing 10 messages a second, in bursts of 20: 40 pings sent at once would
    # have some refused (an error with no id, the ping never answered).
    async def scenario(url: str) -> None:
        async with await Client.connect(url, request_timeout=10.0) as client:
            assert client.welcome is not None and client.welcome["limits"]["max_messages_per_s"] == 10
            started = time.monotonic()
            rtts = await asyncio.gather(*(client.ping() for _ in range(40)))
            assert len(rtts) == 40
            # The first ten go at once, the other thirty at ten a second.
            assert time.monotonic() - started >= 2.5

    with serve(message_rate=10) as url:
        run(scenario(url))


def test_the_http_server_behind_a_websocket_url() -> None:
    from elementals.client import http_url

    assert http_url("ws://127.0.0.1:7878/ws", "/api/games/x") == "http://127.0.0.1:7878/api/games/x"
    assert http_url("wss://example.org/elementals/ws", "/api/games/x") == "https://example.org/elementals/api/games/x"
    assert http_url("wss://example.org/", "/api/games/x") == "https://example.org/api/games/x"
