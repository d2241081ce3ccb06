// Where a committed pick and its nonce wait for the reveal. A pick committed without escrow
// must be revealed later, perhaps on another connection (a dropped one resumed) or by
// another process or page load (a correspondence game played a visit at a time). The store
// is written before the commit is sent and cleared once the reveal is answered.
// `MemoryNonceStore` outlives a client's reconnects; `LocalStorageNonceStore` a page load;
// `FileNonceStore` (from `elementals-sdk/file-store`, Node only) the process.
import { fromHex, NONCE_LEN, toHex } from './commitment.js';
/** What a store keeps as text: the layout the Rust and Python clients use. */
export function encodeSealed(sealed) {
    return JSON.stringify({ round: sealed.round, pick: sealed.pick, nonce: toHex(sealed.nonce) });
}
export function decodeSealed(text) {
    const stored = JSON.parse(text);
    const nonce = fromHex(stored.nonce);
    if (nonce.length !== NONCE_LEN)
        throw new Error(`a kept nonce of ${nonce.length} bytes`);
    return { round: stored.round, pick: stored.pick, nonce };
}
/** Kept in this process (or page) only. */
export class MemoryNonceStore {
    kept = new Map();
    static key(account, gameId) {
        return `${account.toLowerCase()}/${gameId}`;
    }
    async save(account, gameId, sealed) {
        this.kept.set(MemoryNonceStore.key(account, gameId), sealed);
    }
    async load(account, gameId) {
        return this.kept.get(MemoryNonceStore.key(account, gameId)) ?? null;
    }
    async remove(account, gameId) {
        this.kept.delete(MemoryNonceStore.key(account, gameId));
    }
}
/** In a browser's `localStorage` (or any Web Storage), under `prefix + account/game`. */
export class LocalStorageNonceStore {
    storage;
    prefix;
    constructor(storage = globalThis.localStorage, prefix = 'elementals-nonce:') {
        this.storage = storage;
        this.prefix = prefix;
        if (!storage)
            throw new Error('no localStorage here: pass a storage');
    }
    key(account, gameId) {
        return `${this.prefix}${account.toLowerCase()}/${gameId}`;
    }
    async save(account, gameId, sealed) {
        this.storage.setItem(this.key(account, gameId), encodeSealed(sealed));
    }
    async load(account, gameId) {
        const text = this.storage.getItem(this.key(account, gameId));
        return text === null ? null : decodeSealed(text);
    }
    async remove(account, gameId) {
        this.storage.removeItem(this.key(account, gameId));
    }
}
