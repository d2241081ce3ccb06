"""The conformance hook: every frame sent and every frame received on every WebSocket the
tests' clients open is checked against the protocol's schema
(`protocol/schema/messages.json`), and a frame that does not conform fails the test that
was running, with the frame and what the schema found in its message.

A pytest plugin (conftest.py loads it): an autouse fixture makes websockets' `connect` open
every socket (the SDK's and any other) as a `CheckedConnection`, which checks in `send` and
`recv`; `pytest_runtest_call` fails the test once it returns if any frame did
not conform (or adds them to its failure as a note).

The check mirrors the Rust one (`elementals-protocol`'s `conformance` feature,
protocol/src/conformance.rs). How a frame's MessagePack becomes the JSON the schema checks:

- The frame is one MessagePack value and nothing after it (msgpack's `unpackb`, which
  refuses trailing bytes); a text frame does not conform (the protocol's frames are binary).
- nil is JSON null: an optional field sent as nil is null, an omitted one is missing, and
  the schema tells them apart (a client's optional fields without `null` in their type
  must be omitted, not sent as nil).
- An int is a JSON integer, whatever its encoding, exactly (Python's ints hold every u64
  and i64). A float is a JSON number; NaN and the infinities do not conform (JSON has no
  such numbers). As in JSON Schema, a float with an integral value is an integer.
- A str is a JSON string; one that is not UTF-8 does not conform.
- A bin is its bytes in base64, as a string that only a schema marked
  `"x-msgpack": "bin"` accepts, and such a schema accepts nothing but a bin; a bin the
  schema has no place for does not conform.
- A map is a JSON object: every key must be a str, and none twice.
- An ext value (a timestamp included) does not conform.
- Every object schema that names its properties admits no others (the published server
  messages stay open so that clients ignore new fields; the check is stricter, so a field
  the server sends and the schema misses fails too).
- A client frame must be a `ClientMsg`; a server frame a `ServerMsg`, or on a socket whose
  `hello` asked for `batch: true`, a `ServerBatch` (an array of two or more) as well.
- Formats are checked where the validator knows them (`uuid`); the integer formats
  schemars writes (`uint32`, …) are not formats JSON Schema defines, and their bounds are
  the schema's `minimum` and `maximum`.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from jsonschema import Draft202012Validator, ValidationError, validators
import websockets.asyncio.client
from websockets.asyncio.client import ClientConnection
from websockets.typing import Data

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "protocol" / "schema" / "messages.json"


class Bin(str):
    """A MessagePack bin, rendered as its base64 text."""


class _Pairs(list[tuple[Any, Any]]):
    """A MessagePack map as read: its entries in order, keys of any type, repeats kept."""


class Nonconforming(Exception):
    def __init__(self, direction: str, frame: Any, errors: list[str]) -> None:
        self.direction = direction
        self.frame = frame
        self.errors = errors
        lines = [f"a {direction} frame does not conform to the schema"]
        if frame is not None:
            lines.append(f"  frame: {json.dumps(frame)}")
        lines += [f"  - {error}" for error in errors]
        super().__init__("\n".join(lines))


def _read(data: bytes) -> Any:
    """One MessagePack value and nothing after it, maps kept as their entries."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=_Pairs, use_list=True)
    except msgpack.ExtraData as extra:
        raise ValueError(f"{len(extra.extra)} bytes after the message") from None
    except (ValueError, msgpack.UnpackException, UnicodeDecodeError) as err:
        raise ValueError(f"not MessagePack: {err}") from None


def _to_json(value: Any, bins: list[Bin]) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"the float {value}, which JSON cannot hold")
        return value
    if isinstance(value, bytes):
        rendered = Bin(base64.b64encode(value).decode("ascii"))
        bins.append(rendered)
        return rendered
    if isinstance(value, _Pairs):
        obj: dict[str, Any] = {}
        for key, item in value:
            if not isinstance(key, str):
                raise ValueError("a map key that is not a str")
            if key in obj:
                raise ValueError(f"the key `{key}` twice in one map")
            obj[key] = _to_json(item, bins)
        return obj
    if isinstance(value, list):
        return [_to_json(item, bins) for item in value]
    raise ValueError(f"an ext value ({type(value).__name__})")


def _close_objects(value: Any) -> None:
    """Every object schema that names its properties admits no others."""
    if isinstance(value, dict):
        if "properties" in value and "additionalProperties" not in value:
            value["additionalProperties"] = False
        for item in value.values():
            _close_objects(item)
    elif isinstance(value, list):
        for item in value:
            _close_objects(item)


class _Check:
    """The validators of the schema, and the bins of the frame being checked."""

    def __init__(self) -> None:
        document = json.loads(SCHEMA_PATH.read_text())
        _close_objects(document["$defs"])
        self.defs: dict[str, Any] = document["$defs"]
        kind = validators.extend(Draft202012Validator, {"x-msgpack": self._bin_only})
        self.claimed: set[int] = set()

        def validator(name: str) -> Any:
            rooted = {key: document[key] for key in ("$schema", "$id", "$defs")}
            rooted["$ref"] = f"#/$defs/{name}"
            return kind(rooted, format_checker=Draft202012Validator.FORMAT_CHECKER)

        self.unions = {name: validator(name) for name in ("ClientMsg", "ServerMsg", "ServerBatch")}
        # Each message's own schema, by union and `type`, for a failure's details.
        self.messages: dict[str, dict[str, Any]] = {}
        for union in ("ClientMsg", "ServerMsg"):
            by_type = {}
            for ref in self.defs[union]["oneOf"]:
                name = ref["$ref"].removeprefix("#/$defs/")
                by_type[self.defs[name]["properties"]["type"]["const"]] = validator(name)
            self.messages[union] = by_type

    def _bin_only(self, _validator: Any, value: Any, instance: Any, _schema: Any) -> Iterator[ValidationError]:
        if value != "bin":
            yield ValidationError(f"x-msgpack names no type this check knows: {value}")
        elif isinstance(instance, Bin):
            self.claimed.add(id(instance))
        else:
            yield ValidationError("bytes must be a MessagePack bin, not a str or anything else")

    def frame(self, direction: str, data: Data, batching: bool) -> None:
        """Raises `Nonconforming` unless `data` is a frame `direction` may send."""
        if isinstance(data, str):
            raise Nonconforming(direction, None, ["a text frame: the protocol's frames are binary"])
        try:
            bins: list[Bin] = []
            frame = _to_json(_read(bytes(data)), bins)
        except ValueError as err:
            raise Nonconforming(direction, None, [str(err)]) from None
        union = "ClientMsg" if direction == "client" else "ServerMsg"
        if direction == "server" and batching and isinstance(frame, list):
            union = "ServerBatch"
        self.claimed = set()
        errors = [_described(e) for e in self.unions[union].iter_errors(frame)]
        if errors:
            member = "ServerMsg" if union == "ServerBatch" else union
            items: Iterable[tuple[str, Any]] = (
                ((f"/{i}", item) for i, item in enumerate(frame)) if isinstance(frame, list) else [("", frame)]
            )
            for at, item in items:
                kind = item.get("type") if isinstance(item, dict) else None
                message = self.messages[member].get(kind) if isinstance(kind, str) else None
                if message is not None:
                    errors += [f"as `{kind}`: {_described(e, at)}" for e in message.iter_errors(item)]
        elif any(id(b) not in self.claimed for b in bins):
            errors.append("a bin where the schema has no bytes")
        if errors:
            raise Nonconforming(direction, frame, errors)


def _described(error: ValidationError, prefix: str = "") -> str:
    path = prefix + "".join(f"/{part}" for part in error.absolute_path)
    return f"at `{path}`: {error.message}"


_check: _Check | None = None


def check(direction: str, data: Data, batching: bool = False) -> None:
    """Raises `Nonconforming` unless `data` is a frame `direction` ("client" or "server")
    may send; `batching`: the client asked for batches in its `hello`."""
    global _check
    if _check is None:
        _check = _Check()
    _check.frame(direction, data, batching)


# What did not conform since the last `take`.
_found: list[Nonconforming] = []


def take() -> list[Nonconforming]:
    """What did not conform since the last call, which the hook then forgets."""
    found = list(_found)
    _found.clear()
    return found


def _asks_for_batches(data: Data) -> bool:
    try:
        msg = msgpack.unpackb(data, raw=False)
    except Exception:
        return False
    return isinstance(msg, dict) and msg.get("type") == "hello" and msg.get("batch") is True


class CheckedConnection(ClientConnection):
    """A client socket whose every frame, sent or received, is checked."""

    batching = False

    def _check(self, direction: str, data: Data) -> None:
        try:
            check(direction, data, self.batching)
        except Nonconforming as nonconforming:
            _found.append(nonconforming)

    async def send(self, message: Any, *, text: bool | None = None) -> None:
        if isinstance(message, str):
            self._check("client", message)
        elif isinstance(message, (bytes, bytearray, memoryview)):
            self._check("client", bytes(message))
            if _asks_for_batches(bytes(message)):
                self.batching = True
        else:
            # A fragmented message: the SDK sends none, and the check reads whole frames.
            _found.append(Nonconforming("client", None, ["a fragmented message"]))
        await super().send(message, text=text)

    async def recv(self, decode: bool | None = None) -> Any:
        data = await super().recv(decode)
        self._check("server", data)
        return data


@pytest.fixture(autouse=True)
def checked_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every socket websockets' `connect` opens (the SDK's and any other) is a
    `CheckedConnection`: it is the class `connect` makes unless told another."""
    monkeypatch.setattr(websockets.asyncio.client, "ClientConnection", CheckedConnection)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fails the test during which a frame did not conform."""
    try:
        result = yield
    except BaseException as failed:
        for nonconforming in take():
            failed.add_note(str(nonconforming))
        raise
    found = take()
    if found:
        pytest.fail("\n".join(str(n) for n in found), pytrace=False)
    return result

