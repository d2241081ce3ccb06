/** A pick committed to and not yet revealed. */
export interface SealedPick {
    round: number;
    pick: number;
    nonce: Uint8Array;
}
/** One account's unrevealed commits, one a game. */
export interface NonceStore {
    save(account: string, gameId: string, sealed: SealedPick): Promise<void>;
    load(account: string, gameId: string): Promise<SealedPick | null>;
    remove(account: string, gameId: string): Promise<void>;
}
/** What a store keeps as text: the layout the Rust and Python clients use. */
export declare function encodeSealed(sealed: SealedPick): string;
export declare function decodeSealed(text: string): SealedPick;
/** Kept in this process (or page) only. */
export declare class MemoryNonceStore implements NonceStore {
    private readonly kept;
    private static key;
    save(account: string, gameId: string, sealed: SealedPick): Promise<void>;
    load(account: string, gameId: string): Promise<SealedPick | null>;
    remove(account: string, gameId: string): Promise<void>;
}
/** The subset of the Web Storage API the store uses. */
export interface KeyValueStorage {
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
    removeItem(key: string): void;
}
/** In a browser's `localStorage` (or any Web Storage), under `prefix + account/game`. */
export declare class LocalStorageNonceStore implements NonceStore {
    private readonly storage;
    private readonly prefix;
    constructor(storage?: KeyValueStorage, prefix?: string);
    private key;
    save(account: string, gameId: string, sealed: SealedPick): Promise<void>;
    load(account: string, gameId: string): Promise<SealedPick | null>;
    remove(account: string, gameId: string): Promise<void>;
}
