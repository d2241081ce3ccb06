"""Elementals: a client SDK for the Elementals game server's WebSocket protocol.

    client = await Client.connect("ws://127.0.0.1:7878/ws")
    await client.guest()
    await client.join_pool({"number": 5, "range": 2, "distance": 3}, "blitz")
    game = await client.next_game()
    result = await game.play(lambda game: random.randint(1, game.variant["number"]))
"""

from .client import PROTOCOL_VERSION, Client, __version__
from .commitment import commitment, new_nonce, preimage
from .errors import ClientClosed, ConnectionLost, ElementalsError, GameEndedAway, RequestTimeout, ServerError
from .game import Game, Strategy
from .nonces import FileNonceStore, MemoryNonceStore, NonceStore, SealedPick

__all__ = [
    "PROTOCOL_VERSION",
    "Client",
    "ClientClosed",
    "ConnectionLost",
    "ElementalsError",
    "FileNonceStore",
    "Game",
    "GameEndedAway",
    "MemoryNonceStore",
    "NonceStore",
    "RequestTimeout",
    "SealedPick",
    "ServerError",
    "Strategy",
    "__version__",
    "commitment",
    "new_nonce",
    "preimage",
]
