// The SDK's errors.
/** The server answered a request with `error` (PROTOCOL.md section 10). `code` is one of the
 * schema's codes, or one a newer server added. */
export class ServerError extends Error {
    code;
    serverMessage;
    constructor(code, serverMessage) {
        super(`${code}: ${serverMessage}`);
        this.code = code;
        this.serverMessage = serverMessage;
        this.name = 'ServerError';
    }
}
/** The connection ended before the request's reply came. A client that reconnects may
 * have done what was asked; the game's state (a snapshot after `resume`) tells. */
export class ConnectionLost extends Error {
    constructor(message = 'the connection dropped') {
        super(message);
        this.name = 'ConnectionLost';
    }
}
/** The client was closed, or will not reconnect (superseded, or its token refused). */
export class ClientClosed extends Error {
    constructor(message) {
        super(message);
        this.name = 'ClientClosed';
    }
}
/** No reply within the request timeout. `id` is the request's id (null if it timed out
 * before it was sent), so that a caller can recognise its late reply in `onMessage`. */
export class RequestTimeout extends Error {
    id;
    constructor(message, id = null) {
        super(message);
        this.id = id;
        this.name = 'RequestTimeout';
    }
}
/** The game ended while the client was away and its record (`GET /api/games/{id}`) could
 * not be read, so its result is unknown here. */
export class GameEndedAway extends Error {
    constructor(message) {
        super(message);
        this.name = 'GameEndedAway';
    }
}
