"""Data for the HTTP API's fuzzing (.ci/test.sh's fuzz_http_api): an account that has
played a game to its end against the server's computer player, and a correspondence game
under way. Prints the account's session token, which schemathesis sends as the bearer
token, so that the operations that need a session (`/api/me/games`) are answered 200 with
content, not only 401. Runs with the Python SDK (clients/python) installed.

Usage: seed_api.py WS_URL"""

import asyncio
import random
import sys

from elementals import Client, Game

VARIANT = {"number": 3, "range": 1, "distance": 1}


def pick(game: Game) -> int:
    return random.randint(1, game.variant["number"])


async def connect(url: str) -> Client:
    """The server was just started: its port is tried for up to a minute."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        try:
            return await Client.connect(url)
        except OSError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def main(url: str) -> None:
    async with await connect(url) as client:
        me = await client.register("api-fuzz-seed", "fuzzing the api, seeded")
        await client.play_bot("easy", VARIANT, "blitz")
        game = await client.next_game()
        await asyncio.wait_for(game.play(pick), timeout=120)
        # A correspondence game left waiting for the opponent's move.
        await client.play_bot("easy", VARIANT, "corr-1d")
        await client.next_game()
        print(me["token"])


asyncio.run(main(sys.argv[1]))
