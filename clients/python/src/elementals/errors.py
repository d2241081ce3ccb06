"""The SDK's exceptions."""

from __future__ import annotations


class ElementalsError(Exception):
    """Base class of every error the SDK raises."""


class ServerError(ElementalsError):
    """The server answered a request with `error` (PROTOCOL.md section 10)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class ConnectionLost(ElementalsError):
    """The connection ended before the request's reply came. A client that reconnects may
    have done what was asked; the game's state (a snapshot after `resume`) tells."""


class ClientClosed(ElementalsError):
    """The client was closed, or will not reconnect (superseded, or the token refused)."""


class RequestTimeout(ElementalsError):
    """No reply within the request timeout."""


class GameEndedAway(ElementalsError):
    """The game ended while the client was away and its record (`GET /api/games/{id}`)
    could not be read, so its result is unknown here."""
