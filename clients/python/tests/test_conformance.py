"""The conformance hook (conformance.py) can fail: a test that sends one frame the schema
refuses (a `commit` without its fields) fails, its message naming the frame and what the
schema found, while the server answers the frame with an error and goes on."""

from __future__ import annotations

import pytest

from conformance import Nonconforming, check

pytest_plugins = ["pytester"]


def test_a_test_that_sends_a_frame_that_does_not_conform_fails(server_url: str, pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from conformance import checked_sockets, pytest_runtest_call  # noqa: F401\n")
    pytester.makepyfile(
        test_malformed=f"""
import asyncio

import pytest

from elementals import Client, ServerError


def test_a_commit_without_its_fields() -> None:
    async def scenario() -> None:
        async with await Client.connect({server_url!r}) as client:
            with pytest.raises(ServerError) as refused:
                await client.request({{"type": "commit"}})
            assert refused.value.code == "bad_message"
            # The server answers and goes on: the connection still works.
            await client.ping()

    asyncio.run(scenario())
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "a client frame does not conform to the schema" in out, out
    assert 'frame: {"type": "commit", "id": 2}' in out, out
    assert "as `commit`: at ``: 'game_id' is a required property" in out, out
    # Only that frame: hello, welcome, the error and the ping's round trip conform. pytest may
    # print a failure's message twice (the report and the short summary), so the frames named
    # are counted once each.
    named = {line.strip() for line in out.splitlines() if line.strip().startswith("frame: ")}
    assert named == {'frame: {"type": "commit", "id": 2}'}, out


def test_what_the_mapping_refuses() -> None:
    def refused(direction: str, data: bytes | str, batching: bool = False) -> str:
        with pytest.raises(Nonconforming) as nonconforming:
            check(direction, data, batching)
        return str(nonconforming.value)

    check("client", bytes.fromhex("82a474797065a470696e67a26964") + b"\x01")  # {type: ping, id: 1}
    assert "text frame" in refused("client", "ping")
    assert "bytes after the message" in refused("client", bytes.fromhex("82a474797065a470696e67a26964") + b"\x01\x00")
    assert "not a str" in refused("client", bytes.fromhex("82a474797065a470696e6701") + b"\x01")
    assert "twice" in refused("client", bytes.fromhex("83a474797065a470696e67a2696401a2696402"))
    # A pong is a server message; batches only where `hello` asked for them.
    pong = bytes.fromhex("82a474797065a4706f6e67a2696401")
    check("server", pong)
    assert "does not conform" in refused("client", pong)
    assert "does not conform" in refused("server", b"\x92" + pong + pong)
    check("server", b"\x92" + pong + pong, batching=True)
    assert "does not conform" in refused("server", b"\x91" + pong, batching=True)
    # A token is a str: a bin there does not conform.
    assert "bin" in refused("client", bytes.fromhex("83a474797065a6726573756d65a26964") + b"\x01" + bytes.fromhex("a5746f6b656ec403616263"))
