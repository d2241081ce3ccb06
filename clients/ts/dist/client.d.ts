import { Game, type GameHost, type GameRecord } from './game.js';
import { type Authenticated, type Challenge, type Counts, type ErrorReply, type LiveGame, type MyGame, type Preset, type Push, type Queued, type Replies, type Requests, type RequestType, type Seek, type ServerMessage, type Snapshot, type Strength, type TimeControl, type Variant, type Welcome } from './messages.js';
import { type NonceStore, type SealedPick } from './nonces.js';
import { type WebSocketClass } from './socket.js';
export declare const VERSION = "0.1.0";
export declare const PROTOCOL_VERSION = 1;
/** `path` on the HTTP server of a WebSocket URL: `ws://host/ws` gives `http://host` + path
 * (`wss` gives `https`; a prefix before `/ws`, as behind a proxy, is kept). */
export declare function httpUrl(wsUrl: string, path: string): string;
/** The games an account sits in whose snapshot does not follow its `authenticated`
 * unasked: all of `games` but `game_id`. */
export declare function unsentGames(auth: Authenticated): string[];
/** A token bucket that spaces the client's messages to `rate` a second, in bursts of at
 * most `rate`: half the burst a server allows (twice its rate), so that the frames a
 * network bunches together on the way still pass. */
export declare class Pacer {
    private rate;
    private tokens;
    private at;
    private tail;
    constructor(rate: number);
    setRate(rate: number): void;
    take(): Promise<void>;
    private wait;
}
export interface ClientOptions {
    /** Where committed picks wait for their reveal; memory by default. */
    nonces?: NonceStore;
    /** What the client calls itself in `hello`. */
    clientName?: string;
    requestTimeoutMs?: number;
    /** Reconnect (and `resume`) when the socket drops; true by default. */
    reconnect?: boolean;
    /** The first and the longest wait between reconnect attempts, doubling between them. */
    backoffMs?: [number, number];
    /** A WebSocket constructor; by default the global one, else the `ws` package (Node 20). */
    WebSocket?: WebSocketClass;
    /** WebSocket subprotocols to offer (a server accepts `elementals.v1`). */
    protocols?: string[];
    /** Fields added to `hello`, such as capabilities. */
    hello?: Record<string, unknown>;
    /** Ask for batches (`hello` with `batch: true`); true by default. */
    batch?: boolean;
    /** Called with every decoded server message, replies included, before the client acts
     * on it. */
    onMessage?: (msg: ServerMessage) => void;
    /** Called with a socket's close code when it closes, before any reconnect. */
    onClose?: (code: number) => void;
    /** Keep what nobody waits for yet in the streams `nextPush` and each game's `nextEvent`
     * read (bounded; the oldest go first); true by default. A client that only uses
     * `onMessage` passes false: then only a reader already waiting gets a message
     * (`nextGame` keeps its games either way). */
    streams?: boolean;
    /** Sends `ping` after `quietMs` without a message from the server, and drops the socket
     * (then reconnects, if it does) after `silentMs`: a stalled network can hold a socket
     * open and say nothing. Off by default. */
    heartbeat?: {
        quietMs: number;
        silentMs: number;
    };
}
export declare class Client implements GameHost {
    readonly url: string;
    welcome: Welcome | null;
    session: Authenticated | null;
    /** How many times the client has reconnected and signed in again. */
    reconnects: number;
    /** Frames that held a batch (an array of messages) rather than one message. */
    batchesReceived: number;
    readonly nonces: NonceStore;
    private readonly options;
    private socket;
    private nextId;
    private readonly pending;
    private readonly gamesById;
    private readonly watched;
    private readonly newGames;
    private readonly pushQueue;
    private readonly ready;
    private fatal;
    private reconnecting;
    private readonly pacer;
    constructor(url: string, options?: ClientOptions);
    /** Connects and says `hello`. */
    static connect(url: string, options?: ClientOptions): Promise<Client>;
    open(): Promise<Welcome>;
    /** Closes the connection; the client makes no more requests. */
    close(): Promise<void>;
    /** Whether the socket is open, `hello` answered and, after a reconnect, the session
     * resumed: a request now is sent at once. */
    get isOpen(): boolean;
    get accountName(): string;
    /** Sends a request (the id is added) once the client is connected, and signed in again
     * after any reconnect, and resolves with its reply. Rejects with `ServerError` for an
     * `error` reply, `ConnectionLost` if the connection drops first, `RequestTimeout` after
     * the request timeout. */
    request<K extends RequestType>(type: K, fields: Requests[K]): Promise<Replies[K]>;
    private withTimeout;
    private newId;
    private send;
    /** Round-trip time of an application `ping`, in milliseconds. */
    ping(): Promise<number>;
    private authenticate;
    guest(): Promise<Authenticated>;
    register(name: string, password: string): Promise<Authenticated>;
    login(name: string, password: string): Promise<Authenticated>;
    /** Signs in with the token of an earlier session. Every game the account sits in
     * (`games` of the answer) has its snapshot by the time this resolves, and `nextGame`
     * resolves with each. */
    resume(token: string): Promise<Authenticated>;
    logout(): Promise<void>;
    joinPool(variant: Variant, timeControl: Preset, rated?: boolean): Promise<Queued>;
    leavePool(): Promise<void>;
    createSeek(variant: Variant, timeControl: TimeControl, rated?: boolean): Promise<Seek>;
    cancelSeek(seekId: number): Promise<void>;
    listSeeks(): Promise<Seek[]>;
    acceptSeek(seekId: number): Promise<void>;
    challenge(opponent: string, variant: Variant, timeControl: TimeControl, rated?: boolean): Promise<Challenge>;
    acceptChallenge(id: number): Promise<void>;
    declineChallenge(id: number): Promise<void>;
    cancelChallenge(id: number): Promise<void>;
    /** Offers the opponent of a finished game a rematch (they get `rematch_offered`), or
     * accepts theirs: the new game comes from `nextGame`. */
    offerRematch(gameId: string): Promise<void>;
    /** Declines the opponent's offer of a rematch of a finished game; they get
     * `rematch_declined`. `ServerError` `no_rematch` without a standing offer. */
    declineRematch(gameId: string): Promise<void>;
    /** Starts a game against the server's computer player; `nextGame` returns it. */
    playBot(strength: Strength, variant: Variant, timeControl: Preset): Promise<void>;
    lobbyCounts(): Promise<Counts>;
    /** The account's open games with what each waits for; from now on `your_move` pushes
     * come (`nextPush`) whenever an action becomes owed. */
    myGames(): Promise<MyGame[]>;
    listGames(): Promise<LiveGame[]>;
    /** A fresh snapshot of a game played or watched; its `Game` is reset to it. */
    sync(gameId: string): Promise<Snapshot>;
    /** Watches a live game (watched again after a reconnect) and returns it. */
    watch(gameId: string): Promise<Game>;
    unwatch(gameId: string): Promise<void>;
    /** The game with this id, if this client has heard of it. */
    game(gameId: string): Game | undefined;
    /** Every game this client has heard of, played or watched, over or not, in the order it
     * heard of them. */
    get games(): Game[];
    /** The next game this client is seated in that it had not heard of: one that starts
     * (`game_start`), or one the account sits in when it signs in. */
    nextGame(): Promise<Game>;
    /** The next message that is not a reply and not about one game's state: lobby news,
     * `game_start`, `your_move`, `notice`, and `error` answering no request. */
    nextPush(): Promise<Push>;
    pushes(): AsyncGenerator<Push>;
    /** @internal */
    nonceSave(gameId: string, sealed: SealedPick): Promise<void>;
    /** @internal */
    nonceLoad(gameId: string): Promise<SealedPick | null>;
    /** @internal */
    nonceRemove(gameId: string): Promise<void>;
    private connectOnce;
    /** Starts the heartbeat of `socket`, if the options ask for one; returns its stop. */
    private heartbeat;
    private receive;
    private dispatch;
    private seated;
    private snapshot;
    /** The games this client plays, not over, that the account no longer sits in: they ended
     * while it was away (their `sync` answers `game_over`), or, on a cluster, a server is
     * taking them over. */
    private missingGames;
    /** The stored record of a finished game (`GET /api/games/{id}`, PROTOCOL.md section 12),
     * from the HTTP server behind this client's WebSocket URL; null while there is none (it
     * is stored moments after the game's end). */
    record(gameId: string): Promise<GameRecord | null>;
    private lost;
    private reconnect;
    private die;
    /** Drops the socket without a closing handshake where the platform allows (Node), as a
     * failing network would: for tests of reconnecting. */
    dropConnection(): void;
}
export type { ErrorReply };
