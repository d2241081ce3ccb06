"""A connection to an Elementals server that outlives its sockets.

`Client` says `hello`, signs in, sends requests with fresh ids and hands each its typed
reply, routes every message about a game to that game's `Game`, and queues the lobby's
pushes. An account may sit in several games at once (one live game and many
correspondence games): each is a `Game` of its own, and one connection plays them all.
After signing in, the server sends the snapshot of one game the account sits in and the
client asks (`sync`) for every other game `authenticated.games` lists, so each is ready
to play. When the socket drops it reconnects with backoff, says `hello` again, `resume`s
with the session's token, gets every game back the same way and watches again what it
watched; play carries on from the snapshots.

The client asks for batches (`hello` with `batch: true`): the server then sends what one
event causes as one frame holding a MessagePack array of messages, which the reader unpacks
and handles one by one, in order.

Requests are paced to the server's message limit (`welcome.limits`), so a burst of them
(the syncs after signing in to fifty games, say) is never refused as `rate_limited`.

One task, the reader, reads the socket: replies complete the futures of their requests,
everything else is dispatched synchronously, so a game's state never lags its messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any, TypeVar, cast

import msgpack
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from .errors import ClientClosed, ConnectionLost, ElementalsError, RequestTimeout, ServerError
from .game import Game
from .messages import (
    GAME_EVENTS,
    Authenticated,
    Challenge,
    Counts,
    LiveGame,
    MyGame,
    Preset,
    Queued,
    Seek,
    Snapshot,
    Strength,
    TimeControl,
    Variant,
    Welcome,
)
from .nonces import MemoryNonceStore, NonceStore, SealedPick

log = logging.getLogger("elementals")

__version__ = "0.1.0"

PROTOCOL_VERSION = 1
# PROTOCOL.md section 1: server messages may be this large (snapshots of long games).
MAX_SERVER_MESSAGE_BYTES = 4 * 1024 * 1024
# Pushes held for a reader that has not read them (the lobby sends about one a second
# while queued); past this the oldest go.
PUSHES_CAPACITY = 1024
# Close codes after which reconnecting would not help (PROTOCOL.md section 10): superseded
# by a newer connection (reconnecting would supersede it in turn), or a client bug.
FINAL_CLOSE_CODES = frozenset({4000, 1002, 1003, 1009})
# PROTOCOL.md section 11: the message rate a server allows unless its `welcome` says.
DEFAULT_MESSAGES_PER_S = 20

Message = dict[str, Any]
T = TypeVar("T")


def http_url(ws_url: str, path: str) -> str:
    """`path` on the HTTP server of a WebSocket URL: `ws://host/ws` gives `http://host` + path
    (`wss` gives `https`; a prefix before `/ws`, as behind a proxy, is kept)."""
    parts = urllib.parse.urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    base = parts.path.removesuffix("/").removesuffix("/ws")
    return urllib.parse.urlunsplit((scheme, parts.netloc, base + path, "", ""))


def unsent_games(auth: Authenticated) -> list[str]:
    """The games an account sits in whose snapshot does not follow its `authenticated`
    unasked: all of `games` but `game_id`."""
    return [game_id for game_id in auth.get("games", []) if game_id != auth.get("game_id")]


class Pacer:
    """A token bucket that spaces the client's messages to `rate` a second, in bursts of at
    most `rate`: half the burst a server allows (twice its rate), so that the frames a
    network bunches together on the way still pass."""

    def __init__(self, rate: float) -> None:
        self.rate = max(rate, 1.0)
        self._tokens = self.rate
        self._at = time.monotonic()
        # FIFO: requests leave in the order they were made.
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        async with self._lock:
            while True:
                now = time.monotonic()
                self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
                self._at = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self._tokens) / self.rate)


class Client:
    """A session with a server. Make it with `await Client.connect(url)`."""

    def __init__(
        self,
        url: str,
        *,
        nonces: NonceStore | None = None,
        client_name: str = f"elementals-python/{__version__}",
        request_timeout: float = 30.0,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.25, 15.0),
        batch: bool = True,
    ) -> None:
        self.url = url
        self.nonces: NonceStore = nonces if nonces is not None else MemoryNonceStore()
        self.client_name = client_name
        self.request_timeout = request_timeout
        self.reconnect = reconnect
        self.backoff = backoff
        self.batch = batch
        # Frames that held a batch (an array of messages) rather than one message.
        self.batches_received = 0
        self.welcome: Welcome | None = None
        self.session: Authenticated | None = None
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self._next_id = 1
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._games: dict[str, Game] = {}
        self._watched: set[str] = set()
        self._new_games: asyncio.Queue[Game] = asyncio.Queue()
        self._pushes: asyncio.Queue[Message] = asyncio.Queue(PUSHES_CAPACITY)
        self._ready = asyncio.Event()
        self._dead = asyncio.Event()
        self._fatal: ElementalsError | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reconnecting = False
        self._pacer = Pacer(DEFAULT_MESSAGES_PER_S)

    @classmethod
    async def connect(cls, url: str, **options: Any) -> Client:
        """Connects and says `hello`. `options` are `Client`'s keyword arguments."""
        client = cls(url, **options)
        await client.open()
        return client

    async def open(self) -> Welcome:
        self.welcome = await self._connect_once()
        self._ready.set()
        return self.welcome

    async def close(self) -> None:
        """Closes the connection; the client makes no more requests."""
        self._die(ClientClosed("the client was closed"))
        for task in list(self._tasks):
            task.cancel()
        if self._ws is not None:
            await self._ws.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def account_name(self) -> str:
        if self.session is None:
            raise ValueError("not signed in")
        return self.session["account"]["name"]

    # --- requests ---

    async def request(self, msg: Message) -> Message:
        """Sends `msg` (a dict with `type`; the id is added) once the client is connected
        and signed in again after any reconnect, and returns its reply. Raises
        `ServerError` for an `error` reply, `ConnectionLost` if the connection drops first,
        `RequestTimeout` after `request_timeout` seconds."""
        try:
            async with asyncio.timeout(self.request_timeout):
                await self._until_dead(self._ready.wait())
                assert self._ws is not None
                return await self._send(self._ws, msg)
        except TimeoutError:
            raise RequestTimeout(f"no reply to {msg['type']} in {self.request_timeout} s") from None

    async def _send(self, ws: ClientConnection, msg: Message) -> Message:
        await self._pacer.take()
        if self._fatal is not None:
            raise self._fatal
        request_id = self._next_id
        self._next_id = self._next_id % 0xFFFF_FFFF + 1
        reply: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = reply
        try:
            await ws.send(msgpack.packb({**msg, "id": request_id}, use_bin_type=True))
            answer = await reply
        except websockets.ConnectionClosed:
            raise ConnectionLost(f"the connection dropped before {msg['type']} was sent") from None
        finally:
            self._pending.pop(request_id, None)
        if answer["type"] == "error":
            raise ServerError(answer["code"], answer["message"])
        return answer

    async def ping(self) -> float:
        """Round-trip time of an application `ping`, in seconds."""
        start = asyncio.get_running_loop().time()
        await self.request({"type": "ping"})
        return asyncio.get_running_loop().time() - start

    # --- signing in ---

    async def _authenticate(self, msg: Message) -> Authenticated:
        auth = cast(Authenticated, await self.request(msg))
        self.session = auth
        for game_id in unsent_games(auth):
            try:
                await self.request({"type": "sync", "game_id": game_id})
            except ServerError as err:
                # It ended between the two answers: its record is all that is left.
                log.info("sync of %s after signing in failed: %s", game_id, err)
            except ConnectionLost:
                # The reconnect that follows syncs every game again.
                break
        return auth

    async def guest(self) -> Authenticated:
        return await self._authenticate({"type": "guest"})

    async def register(self, name: str, password: str) -> Authenticated:
        return await self._authenticate({"type": "register", "name": name, "password": password})

    async def login(self, name: str, password: str) -> Authenticated:
        return await self._authenticate({"type": "login", "name": name, "password": password})

    async def resume(self, token: str) -> Authenticated:
        """Signs in with the token of an earlier session. Every game the account sits in
        (`games` of the answer) has its snapshot by the time this returns, and `next_game`
        returns each."""
        return await self._authenticate({"type": "resume", "token": token})

    async def logout(self) -> None:
        await self.request({"type": "logout"})
        self.session = None

    # --- the lobby ---

    async def join_pool(self, variant: Variant, time_control: Preset, rated: bool | None = None) -> Queued:
        msg: Message = {"type": "join_pool", "variant": variant, "time_control": time_control}
        if rated is not None:
            msg["rated"] = rated
        return cast(Queued, await self.request(msg))

    async def leave_pool(self) -> None:
        await self.request({"type": "leave_pool"})

    async def create_seek(self, variant: Variant, time_control: TimeControl, rated: bool | None = None) -> Seek:
        msg: Message = {"type": "create_seek", "variant": variant, "time_control": time_control}
        if rated is not None:
            msg["rated"] = rated
        return cast(Seek, (await self.request(msg))["seek"])

    async def cancel_seek(self, seek_id: int) -> None:
        await self.request({"type": "cancel_seek", "seek_id": seek_id})

    async def list_seeks(self) -> list[Seek]:
        return cast(list[Seek], (await self.request({"type": "list_seeks"}))["seeks"])

    async def accept_seek(self, seek_id: int) -> None:
        await self.request({"type": "accept_seek", "seek_id": seek_id})

    async def challenge(
        self, opponent: str, variant: Variant, time_control: TimeControl, rated: bool | None = None
    ) -> Challenge:
        msg: Message = {"type": "challenge", "opponent": opponent, "variant": variant, "time_control": time_control}
        if rated is not None:
            msg["rated"] = rated
        return cast(Challenge, (await self.request(msg))["challenge"])

    async def accept_challenge(self, challenge_id: int) -> None:
        await self.request({"type": "accept_challenge", "challenge_id": challenge_id})

    async def decline_challenge(self, challenge_id: int) -> None:
        await self.request({"type": "decline_challenge", "challenge_id": challenge_id})

    async def cancel_challenge(self, challenge_id: int) -> None:
        await self.request({"type": "cancel_challenge", "challenge_id": challenge_id})

    async def offer_rematch(self, game_id: str) -> None:
        """Offers the opponent of a finished game a rematch (they get `rematch_offered`), or
        accepts theirs: the new game comes from `next_game`."""
        await self.request({"type": "offer_rematch", "game_id": game_id})

    async def decline_rematch(self, game_id: str) -> None:
        """Declines the opponent's offer of a rematch of a finished game; they get
        `rematch_declined`. `ServerError` `no_rematch` without a standing offer."""
        await self.request({"type": "decline_rematch", "game_id": game_id})

    async def play_bot(self, strength: Strength, variant: Variant, time_control: Preset) -> None:
        """Starts a game against the server's computer player; `next_game` returns it."""
        await self.request({"type": "play_bot", "strength": strength, "variant": variant, "time_control": time_control})

    async def lobby_counts(self) -> Counts:
        return cast(Counts, await self.request({"type": "lobby_counts"}))

    async def my_games(self) -> list[MyGame]:
        """The account's open games with what each waits for; from now on `your_move`
        pushes come (`next_push`) whenever an action becomes owed."""
        return cast(list[MyGame], (await self.request({"type": "my_games"}))["games"])

    # --- games ---

    async def list_games(self) -> list[LiveGame]:
        return cast(list[LiveGame], (await self.request({"type": "list_games"}))["games"])

    async def sync(self, game_id: str) -> Snapshot:
        """A fresh snapshot of a game played or watched; its `Game` is reset to it."""
        return cast(Snapshot, await self.request({"type": "sync", "game_id": game_id}))

    async def watch(self, game_id: str) -> Game:
        """Watches a live game (watched again after a reconnect) and returns it."""
        await self.request({"type": "watch", "game_id": game_id})
        self._watched.add(game_id)
        return self._games[game_id]

    async def unwatch(self, game_id: str) -> None:
        self._watched.discard(game_id)
        await self.request({"type": "unwatch", "game_id": game_id})

    def game(self, game_id: str) -> Game | None:
        """The game with this id, if this client has heard of it."""
        return self._games.get(game_id)

    @property
    def games(self) -> list[Game]:
        """Every game this client has heard of, played or watched, over or not, in the order
        it heard of them."""
        return list(self._games.values())

    async def next_game(self) -> Game:
        """The next game this client is seated in that it had not heard of: one that starts
        (`game_start`), or one the account sits in when it signs in."""
        return await self._until_dead(self._new_games.get())

    async def next_push(self) -> Message:
        """The next message that is not a reply and not about one game's state: lobby news
        (`queue_status`, `challenge_received`, ...), `game_start`, `your_move`, `notice`,
        and `error` answering no request."""
        return await self._until_dead(self._pushes.get())

    async def pushes(self) -> AsyncIterator[Message]:
        while True:
            yield await self.next_push()

    # --- nonces, for `Game` ---

    def _nonce_save(self, game_id: str, sealed: SealedPick) -> None:
        self.nonces.save(self.account_name, game_id, sealed)

    def _nonce_load(self, game_id: str) -> SealedPick | None:
        return self.nonces.load(self.account_name, game_id)

    def _nonce_remove(self, game_id: str) -> None:
        self.nonces.remove(self.account_name, game_id)

    # --- the socket ---

    async def _connect_once(self) -> Welcome:
        ws = await ws_connect(self.url, max_size=MAX_SERVER_MESSAGE_BYTES, compression=None, open_timeout=10)
        self._ws = ws
        self._spawn(self._read(ws))
        hello = {"type": "hello", "protocol_version": PROTOCOL_VERSION, "client": self.client_name}
        if self.batch:
            hello["batch"] = True
        async with asyncio.timeout(self.request_timeout):
            welcome = cast(Welcome, await self._send(ws, hello))
        self._pacer.rate = max(float(welcome["limits"]["max_messages_per_s"]), 1.0)
        return welcome

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                if isinstance(frame, str):
                    continue
                try:
                    msg = msgpack.unpackb(frame, raw=False)
                except (ValueError, msgpack.ExtraData) as err:
                    log.warning("ignoring an undecodable frame: %s", err)
                    continue
                if isinstance(msg, list):
                    self.batches_received += 1
                else:
                    msg = [msg]
                for one in msg:
                    if isinstance(one, dict) and isinstance(one.get("type"), str):
                        self._dispatch(one)
        except websockets.ConnectionClosed:
            pass
        finally:
            self._lost(ws)

    def _dispatch(self, msg: Message) -> None:
        kind = msg["type"]
        if kind == "snapshot":
            self._snapshot(msg)
        request_id = msg.get("id")
        if request_id is not None:
            waiter = self._pending.get(request_id)
            if waiter is not None and not waiter.done():
                waiter.set_result(msg)
                return
        if kind == "snapshot":
            return
        if kind == "game_start":
            info = msg["game"]
            game = self._games.get(info["game_id"])
            if game is None:
                game = Game(self, info["game_id"], msg["seat"], info)
                self._games[game.game_id] = game
                self._new_games.put_nowait(game)
            game._receive(msg)
        elif kind in GAME_EVENTS or kind == "spectators":
            game = self._games.get(msg.get("game_id", ""))
            if game is not None:
                game._receive(msg)
            return
        if self._pushes.full():
            self._pushes.get_nowait()
        self._pushes.put_nowait(msg)

    def _snapshot(self, msg: Message) -> None:
        info = msg["snapshot"]["game"]
        game = self._games.get(info["game_id"])
        if game is None:
            game = Game(self, info["game_id"], msg.get("seat"), info)
            self._games[game.game_id] = game
            if game.seat is not None:
                self._new_games.put_nowait(game)
        game._receive(msg)

    def _missing_games(self, auth: Authenticated) -> list[str]:
        """The games this client plays, not over, that the account no longer sits in: they
        ended while it was away (their `sync` answers `game_over`), or, on a cluster, a
        server is taking them over."""
        seated = set(auth.get("games", []))
        return [
            game.game_id
            for game in self._games.values()
            if game.seat is not None and not game.over and game.game_id not in seated
        ]

    async def record(self, game_id: str) -> dict[str, Any] | None:
        """The stored record of a finished game (`GET /api/games/{id}`, PROTOCOL.md section
        12), from the HTTP server behind this client's WebSocket URL; None while there is
        none (it is stored moments after the game's end)."""

        def get() -> dict[str, Any] | None:
            try:
                with urllib.request.urlopen(http_url(self.url, f"/api/games/{game_id}"), timeout=10) as answer:
                    return cast(dict[str, Any], json.load(answer))
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    return None
                raise

        return await asyncio.to_thread(get)

    def _lost(self, ws: ClientConnection) -> None:
        if ws is not self._ws:
            return
        self._ready.clear()
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(ConnectionLost("the connection dropped"))
        code = ws.close_code
        if self._fatal is not None or self._reconnecting:
            return
        if code == 4000:
            self._die(ClientClosed("superseded: the account signed in on another connection"))
        elif not self.reconnect or code in FINAL_CLOSE_CODES:
            self._die(ClientClosed(f"the connection closed ({code})"))
        else:
            self._reconnecting = True
            self._spawn(self._reconnect())

    async def _reconnect(self) -> None:
        delay = self.backoff[0]
        try:
            while self._fatal is None:
                await asyncio.sleep(random.uniform(delay / 2, delay))
                delay = min(delay * 2, self.backoff[1])
                try:
                    await self._connect_once()
                    assert self._ws is not None
                    if self.session is not None:
                        token = self.session["token"]
                        self.session = cast(Authenticated, await self._send(self._ws, {"type": "resume", "token": token}))
                        for game_id in unsent_games(self.session) + self._missing_games(self.session):
                            try:
                                await self._send(self._ws, {"type": "sync", "game_id": game_id})
                            except ServerError as err:
                                log.info("sync of %s after resuming failed: %s", game_id, err)
                                game = self._games.get(game_id)
                                if err.code == "game_over" and game is not None and game.seat is not None:
                                    self._spawn(game._ended_away())
                    for game_id in list(self._watched):
                        try:
                            await self._send(self._ws, {"type": "watch", "game_id": game_id})
                        except ServerError:
                            self._watched.discard(game_id)
                    self.reconnects += 1
                    self._ready.set()
                    self._reconnecting = False
                    if self._ws.close_code is not None:
                        # It dropped again before its reader could ask for a reconnect.
                        self._lost(self._ws)
                    return
                except ServerError as err:
                    self._die(ClientClosed(f"could not sign in again: {err}"))
                except (OSError, TimeoutError, ConnectionLost, websockets.WebSocketException) as err:
                    log.info("reconnecting to %s failed: %s", self.url, err)
                    if self._ws is not None:
                        await self._ws.close()
        finally:
            if self._fatal is not None:
                self._reconnecting = False

    def _die(self, err: ElementalsError) -> None:
        if self._fatal is None:
            self._fatal = err
        self._dead.set()
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(err)

    async def _until_dead(self, work: Awaitable[T]) -> T:
        """Awaits `work`, or raises why the client can do nothing more."""
        job = asyncio.ensure_future(work)
        dead = asyncio.ensure_future(self._dead.wait())
        try:
            await asyncio.wait({job, dead}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dead.cancel()
            if not job.done():
                job.cancel()
        if job.done() and not job.cancelled():
            return job.result()
        assert self._fatal is not None
        raise self._fatal

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def drop_connection(self) -> None:
        """Drops the socket without a closing handshake, as a failing network would (for
        tests of reconnecting)."""
        if self._ws is not None:
            self._ws.transport.abort()
