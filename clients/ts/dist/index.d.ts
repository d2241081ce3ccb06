export { Client, PROTOCOL_VERSION, VERSION, type ClientOptions } from './client.js';
export { commitment, newNonce, preimage, fromHex, toHex, NONCE_LEN } from './commitment.js';
export { ClientClosed, ConnectionLost, GameEndedAway, RequestTimeout, ServerError } from './errors.js';
export { Game, type GameRecord, type Strategy } from './game.js';
export { LocalStorageNonceStore, MemoryNonceStore, type KeyValueStorage, type NonceStore, type SealedPick } from './nonces.js';
export type { WebSocketClass, WebSocketLike } from './socket.js';
export type * from './messages.js';
export type * as Schema from './schema.js';
