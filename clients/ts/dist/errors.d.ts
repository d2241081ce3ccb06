import type { ErrorCode } from './schema.js';
/** The server answered a request with `error` (PROTOCOL.md section 10). `code` is one of the
 * schema's codes, or one a newer server added. */
export declare class ServerError extends Error {
    readonly code: ErrorCode | (string & {});
    readonly serverMessage: string;
    constructor(code: ErrorCode | (string & {}), serverMessage: string);
}
/** The connection ended before the request's reply came. A client that reconnects may
 * have done what was asked; the game's state (a snapshot after `resume`) tells. */
export declare class ConnectionLost extends Error {
    constructor(message?: string);
}
/** The client was closed, or will not reconnect (superseded, or its token refused). */
export declare class ClientClosed extends Error {
    constructor(message: string);
}
/** No reply within the request timeout. `id` is the request's id (null if it timed out
 * before it was sent), so that a caller can recognise its late reply in `onMessage`. */
export declare class RequestTimeout extends Error {
    readonly id: number | null;
    constructor(message: string, id?: number | null);
}
/** The game ended while the client was away and its record (`GET /api/games/{id}`) could
 * not be read, so its result is unknown here. */
export declare class GameEndedAway extends Error {
    constructor(message: string);
}
