// A bot that plays one game of the blitz pool as a guest, picking at random.
// Run it after `npm ci` here: node examples/bot.mjs [ws://HOST:PORT/ws]
import { Client } from 'elementals-sdk';
import { FileNonceStore } from 'elementals-sdk/file-store';

const url = process.argv[2] ?? 'ws://127.0.0.1:7878/ws';
const pick = (game) => 1 + Math.floor(Math.random() * game.variant.number);

// Kept picks survive this process: a restarted bot can still reveal.
const client = await Client.connect(url, { nonces: new FileNonceStore('.elementals-nonces') });
try {
  const me = await client.guest();
  console.log('signed in as', me.account.name);
  await client.joinPool({ number: 5, range: 2, distance: 3 }, 'blitz');
  const game = await client.nextGame();
  console.log('playing', game.gameId, 'as', game.seat);
  const result = await game.play(pick);
  const won = result.winner === game.seat;
  console.log(won ? 'won' : 'lost or drew', 'by', result.reason, 'after', game.history.length, 'rounds');
} finally {
  await client.close();
}
