// A nonce store in files, for Node: `DIR/ACCOUNT/GAME.json`, written whole and synced before
// `save` resolves, readable by its owner only (it holds picks the opponent has not seen).
// The layout is the Rust client's and the Python SDK's, so any of them can reveal what
// another committed. A module of its own, so that browsers never load `node:fs`.

import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { decodeSealed, encodeSealed, type NonceStore, type SealedPick } from './nonces.js';

export class FileNonceStore implements NonceStore {
  constructor(readonly directory: string) {}

  private accountDir(account: string): string {
    const plain = account !== '' && /^[A-Za-z0-9_-]+$/.test(account);
    const name = plain ? account.toLowerCase() : `x-${Buffer.from(account, 'utf8').toString('hex')}`;
    return join(this.directory, name);
  }

  private path(account: string, gameId: string): string {
    // A game id is a UUID; anything else would not name a file of this store.
    if (!/^[0-9a-f-]+$/.test(gameId)) throw new Error(`not a game id: ${gameId}`);
    return join(this.accountDir(account), `${gameId}.json`);
  }

  async save(account: string, gameId: string, sealed: SealedPick): Promise<void> {
    const path = this.path(account, gameId);
    const dir = this.accountDir(account);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, encodeSealed(sealed));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }

  async load(account: string, gameId: string): Promise<SealedPick | null> {
    let text: string;
    try {
      text = readFileSync(this.path(account, gameId), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return decodeSealed(text);
  }

  async remove(account: string, gameId: string): Promise<void> {
    rmSync(this.path(account, gameId), { force: true });
  }

  /** The games with a commit kept for `account`. */
  games(account: string): string[] {
    try {
      return readdirSync(this.accountDir(account)).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  /** Removes what is kept for games not in `keep` (for example the ids `myGames` lists:
   * every other game has ended). Returns how many went. */
  async prune(account: string, keep: Set<string>): Promise<number> {
    const gone = this.games(account).filter((g) => !keep.has(g));
    for (const gameId of gone) await this.remove(account, gameId);
    return gone.length;
  }
}
