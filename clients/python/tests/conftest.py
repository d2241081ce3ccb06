"""One real `elementals-server` for the suite (and one more for a test of other limits): on
127.0.0.1 port 0 (the address it binds is read from its `serving` log line), with a fresh
SQLite database in a temporary directory.

`ELEMENTALS_SERVER_BIN` names a built binary; without it the suite runs
`cargo build -p elementals-server` at the repository's root and uses the result.

Every test runs under the conformance hook (conformance.py): each frame its clients send or
receive is checked against the protocol's schema, and one that does not conform fails it.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# The conformance hook: the fixture that checks every socket, and the hook that fails the test.
from conformance import checked_sockets, pytest_runtest_call  # noqa: F401

REPO = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 60.0
MAX_CORRESPONDENCE_GAMES = 2


def server_binary() -> Path:
    named = os.environ.get("ELEMENTALS_SERVER_BIN")
    if named:
        return Path(named)
    subprocess.run(["cargo", "build", "-p", "elementals-server"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return (REPO / target / "debug" / "elementals-server").resolve()


@contextlib.contextmanager
def serve(message_rate: int = 1000) -> Iterator[str]:
    """Runs a server and yields its `ws://127.0.0.1:PORT/ws`; `message_rate` is the messages a
    second it allows a connection."""
    with tempfile.TemporaryDirectory(prefix="elementals-py-") as tmp:
        # Cheap password hashing, no cap on accounts from one address, a high message rate:
        # every test player connects from 127.0.0.1. Two correspondence games a player, so
        # that a third is refused.
        args = [str(server_binary()), "--listen", "127.0.0.1:0", "--database", f"{tmp}/test.db",
                "--argon2-memory-kib", "1024", "--new-accounts-per-ip", "0", "--message-rate", str(message_rate),
                "--max-correspondence-games", str(MAX_CORRESPONDENCE_GAMES)]
        env = {**os.environ, "NO_COLOR": "1", "RUST_LOG": "warn,elementals_server::server=info"}
        server = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert server.stdout is not None
        found: list[str] = []
        ready = threading.Event()
        log = Path(tmp) / "server.log"

        def read_log() -> None:
            # Reads the whole log (to a file kept for a failure's message) so the pipe never fills.
            assert server.stdout is not None
            with log.open("w") as out:
                for line in server.stdout:
                    out.write(line)
                    out.flush()
                    match = re.search(r"serving addr=(\S+)", line)
                    if match and not found:
                        found.append(match.group(1))
                        ready.set()
            ready.set()

        reader = threading.Thread(target=read_log, daemon=True)
        reader.start()
        try:
            if not ready.wait(START_TIMEOUT_S) or not found:
                raise RuntimeError(f"the server did not start: {log.read_text() if log.exists() else ''}")
            yield f"ws://{found[0]}/ws"
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            reader.join(5)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """`ws://127.0.0.1:PORT/ws` of a server that runs for the whole session."""
    with serve() as url:
        yield url
