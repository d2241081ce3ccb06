import type { Seat } from './messages.js';
export declare const NONCE_LEN = 32;
/** The 16 bytes of a UUID, in the order of its hyphenated text. */
export declare function uuidBytes(gameId: string): Uint8Array;
export declare function toHex(bytes: Uint8Array): string;
export declare function fromHex(hex: string): Uint8Array;
/** The 76 bytes a commitment hashes: tag, game id, round, own seat, pick, nonce. */
export declare function preimage(gameId: string, round: number, seat: Seat, pick: number, nonce: Uint8Array): Uint8Array<ArrayBuffer>;
/** SHA-256 of the preimage: the 32 bytes sent in `commit`. */
export declare function commitment(gameId: string, round: number, seat: Seat, pick: number, nonce: Uint8Array): Promise<Uint8Array>;
/** 32 bytes from the platform's CSPRNG: a predictable nonce gives the pick away. */
export declare function newNonce(): Uint8Array;
