// Elementals: a client SDK for the Elementals game server's WebSocket protocol, for Node 20+
// and browsers. `FileNonceStore` (Node only) is in `elementals-sdk/file-store`.
export { Client, PROTOCOL_VERSION, VERSION } from './client.js';
export { commitment, newNonce, preimage, fromHex, toHex, NONCE_LEN } from './commitment.js';
export { ClientClosed, ConnectionLost, GameEndedAway, RequestTimeout, ServerError } from './errors.js';
export { Game } from './game.js';
export { LocalStorageNonceStore, MemoryNonceStore } from './nonces.js';
