// Where a committed pick and its nonce wait for the reveal. A pick committed without escrow
// must be revealed later, perhaps on another connection (a dropped one resumed) or by
// another process or page load (a correspondence game played a visit at a time). The store
// is written before the commit is sent and cleared once the reveal is answered.
// `MemoryNonceStore` outlives a client's reconnects; `LocalStorageNonceStore` a page load;
// `FileNonceStore` (from `elementals-sdk/file-store`, Node only) the process.

import { fromHex, NONCE_LEN, toHex } from './commitment.js';

/** A pick committed to and not yet revealed. */
export interface SealedPick { round: number; pick: number; nonce: Uint8Array }

/** One account's unrevealed commits, one a game. */
export interface NonceStore {
  save(account: string, gameId: string, sealed: SealedPick): Promise<void>;
  load(account: string, gameId: string): Promise<SealedPick | null>;
  remove(account: string, gameId: string): Promise<void>;
}

/** What a store keeps as text: the layout the Rust and Python clients use. */
export function encodeSealed(sealed: SealedPick): string {
  return JSON.stringify({ round: sealed.round, pick: sealed.pick, nonce: toHex(sealed.nonce) });
}

export function decodeSealed(text: string): SealedPick {
  const stored = JSON.parse(text) as { round: number; pick: number; nonce: string };
  const nonce = fromHex(stored.nonce);
  if (nonce.length !== NONCE_LEN) throw new Error(`a kept nonce of ${nonce.length} bytes`);
  return { round: stored.round, pick: stored.pick, nonce };
}

/** Kept in this process (or page) only. */
export class MemoryNonceStore implements NonceStore {
  private readonly kept = new Map<string, SealedPick>();

  private static key(account: string, gameId: string): string {
    return `${account.toLowerCase()}/${gameId}`;
  }

  async save(account: string, gameId: string, sealed: SealedPick): Promise<void> {
    this.kept.set(MemoryNonceStore.key(account, gameId), sealed);
  }

  async load(account: string, gameId: string): Promise<SealedPick | null> {
    return this.kept.get(MemoryNonceStore.key(account, gameId)) ?? null;
  }

  async remove(account: string, gameId: string): Promise<void> {
    this.kept.delete(MemoryNonceStore.key(account, gameId));
  }
}

/** The subset of the Web Storage API the store uses. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** In a browser's `localStorage` (or any Web Storage), under `prefix + account/game`. */
export class LocalStorageNonceStore implements NonceStore {
  constructor(
    private readonly storage: KeyValueStorage = (globalThis as { localStorage?: KeyValueStorage }).localStorage!,
    private readonly prefix = 'elementals-nonce:',
  ) {
    if (!storage) throw new Error('no localStorage here: pass a storage');
  }

  private key(account: string, gameId: string): string {
    return `${this.prefix}${account.toLowerCase()}/${gameId}`;
  }

  async save(account: string, gameId: string, sealed: SealedPick): Promise<void> {
    this.storage.setItem(this.key(account, gameId), encodeSealed(sealed));
  }

  async load(account: string, gameId: string): Promise<SealedPick | null> {
    const text = this.storage.getItem(this.key(account, gameId));
    return text === null ? null : decodeSealed(text);
  }

  async remove(account: string, gameId: string): Promise<void> {
    this.storage.removeItem(this.key(account, gameId));
  }
}
