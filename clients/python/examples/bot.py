"""A bot that plays one game of the blitz pool as a guest, picking at random."""

import asyncio
import random
import sys

from elementals import Client, FileNonceStore, Game


def pick(game: Game) -> int:
    return random.randint(1, game.variant["number"])


async def main(url: str) -> None:
    # Kept picks survive this process: a restarted bot can still reveal.
    async with await Client.connect(url, nonces=FileNonceStore(".elementals-nonces")) as client:
        me = await client.guest()
        print("signed in as", me["account"]["name"])
        await client.join_pool({"number": 5, "range": 2, "distance": 3}, "blitz")
        game = await client.next_game()
        print("playing", game.game_id, "as", game.seat)
        result = await game.play(pick)
        won = result["winner"] == game.seat
        print("won" if won else "lost or drew", "by", result["reason"], "after", len(game.history), "rounds")


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:7878/ws"))
