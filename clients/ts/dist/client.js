// A connection to an Elementals server that outlives its sockets.
//
// `Client` says `hello`, signs in, sends requests with fresh ids and resolves each with its
// typed reply, routes every message about a game to that game's `Game`, and queues the
// lobby's pushes. An account may sit in several games at once (one live game and many
// correspondence games): each is a `Game` of its own, and one connection plays them all.
// After signing in, the server sends the snapshot of one game the account sits in and the
// client asks (`sync`) for every other game `authenticated.games` lists, so each is ready
// to play. When the socket drops it reconnects with backoff, says `hello` again, `resume`s
// with the session's token, gets every game back the same way and watches again what it
// watched; play carries on from the snapshots.
//
// The client asks for batches (`hello` with `batch: true`): the server then sends what one
// event causes as one frame holding a MessagePack array of messages, which the client
// unpacks and handles one by one, in order.
//
// Requests are paced to the server's message limit (`welcome.limits`), so a burst of them
// (the syncs after signing in to fifty games, say) is never refused as `rate_limited`.
import { decode, encode } from '@msgpack/msgpack';
import { ClientClosed, ConnectionLost, RequestTimeout, ServerError } from './errors.js';
import { Game } from './game.js';
import { Flag, Mailbox } from './mailbox.js';
import { GAME_EVENTS, } from './messages.js';
import { MemoryNonceStore } from './nonces.js';
import { openSocket } from './socket.js';
export const VERSION = '0.1.0';
export const PROTOCOL_VERSION = 1;
// Pushes held for a reader that has not read them (the lobby sends about one a second
// while queued); past this the oldest go.
const PUSHES_CAPACITY = 1024;
// Games started or found at sign-in that nobody has taken with `nextGame` yet: a live game
// and 50 correspondence games fit.
const NEW_GAMES_CAPACITY = 64;
// Close codes after which reconnecting would not help (PROTOCOL.md section 10): superseded
// by a newer connection (reconnecting would supersede it in turn), or a client bug.
const FINAL_CLOSE_CODES = new Set([4000, 1002, 1003, 1009]);
// PROTOCOL.md section 11: the message rate a server allows unless its `welcome` says.
const DEFAULT_MESSAGES_PER_S = 20;
/** `path` on the HTTP server of a WebSocket URL: `ws://host/ws` gives `http://host` + path
 * (`wss` gives `https`; a prefix before `/ws`, as behind a proxy, is kept). */
export function httpUrl(wsUrl, path) {
    const url = new URL(wsUrl);
    url.protocol = url.protocol === 'wss:' ? 'https:' : url.protocol === 'ws:' ? 'http:' : url.protocol;
    const base = url.pathname.replace(/\/$/, '').replace(/\/ws$/, '');
    return `${url.origin}${base}${path}`;
}
/** The games an account sits in whose snapshot does not follow its `authenticated`
 * unasked: all of `games` but `game_id`. */
export function unsentGames(auth) {
    return (auth.games ?? []).filter((gameId) => gameId !== auth.game_id);
}
/** A token bucket that spaces the client's messages to `rate` a second, in bursts of at
 * most `rate`: half the burst a server allows (twice its rate), so that the frames a
 * network bunches together on the way still pass. */
export class Pacer {
    rate;
    tokens;
    at = Date.now();
    // Each message waits for the one before it: they leave in the order they were made.
    tail = Promise.resolve();
    constructor(rate) {
        this.rate = rate;
        this.rate = Math.max(rate, 1);
        this.tokens = this.rate;
    }
    setRate(rate) {
        this.rate = Math.max(rate, 1);
    }
    take() {
        const turn = this.tail.then(() => this.wait());
        this.tail = turn;
        return turn;
    }
    async wait() {
        for (;;) {
            const now = Date.now();
            this.tokens = Math.min(this.rate, this.tokens + ((now - this.at) * this.rate) / 1000);
            this.at = now;
            if (this.tokens >= 1) {
                this.tokens -= 1;
                return;
            }
            await new Promise((resolve) => setTimeout(resolve, Math.ceil(((1 - this.tokens) * 1000) / this.rate)));
        }
    }
}
export class Client {
    url;
    welcome = null;
    session = null;
    /** How many times the client has reconnected and signed in again. */
    reconnects = 0;
    /** Frames that held a batch (an array of messages) rather than one message. */
    batchesReceived = 0;
    nonces;
    options;
    socket = null;
    nextId = 1;
    pending = new Map();
    gamesById = new Map();
    watched = new Set();
    newGames;
    pushQueue;
    ready = new Flag();
    fatal = null;
    reconnecting = false;
    pacer = new Pacer(DEFAULT_MESSAGES_PER_S);
    constructor(url, options = {}) {
        this.url = url;
        this.nonces = options.nonces ?? new MemoryNonceStore();
        const streams = options.streams ?? true;
        this.newGames = new Mailbox(NEW_GAMES_CAPACITY);
        this.pushQueue = new Mailbox(streams ? PUSHES_CAPACITY : 0);
        this.options = {
            ...options,
            clientName: options.clientName ?? `elementals-ts/${VERSION}`,
            requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
            reconnect: options.reconnect ?? true,
            backoffMs: options.backoffMs ?? [250, 15_000],
        };
    }
    /** Connects and says `hello`. */
    static async connect(url, options = {}) {
        const client = new Client(url, options);
        await client.open();
        return client;
    }
    async open() {
        this.welcome = await this.connectOnce();
        this.ready.raise();
        return this.welcome;
    }
    /** Closes the connection; the client makes no more requests. */
    async close() {
        this.die(new ClientClosed('the client was closed'));
        this.socket?.close(1000);
    }
    /** Whether the socket is open, `hello` answered and, after a reconnect, the session
     * resumed: a request now is sent at once. */
    get isOpen() {
        return this.ready.set && this.socket !== null && !this.socket.closed;
    }
    get accountName() {
        if (!this.session)
            throw new Error('not signed in');
        return this.session.account.name;
    }
    // --- requests ---
    /** Sends a request (the id is added) once the client is connected, and signed in again
     * after any reconnect, and resolves with its reply. Rejects with `ServerError` for an
     * `error` reply, `ConnectionLost` if the connection drops first, `RequestTimeout` after
     * the request timeout. */
    async request(type, fields) {
        const deadline = Date.now() + this.options.requestTimeoutMs;
        await this.withTimeout(this.ready.wait(), deadline, type, null);
        const id = this.newId();
        return (await this.withTimeout(this.send(this.socket, type, fields, id), deadline, type, id));
    }
    async withTimeout(work, deadline, type, id) {
        let timer;
        const timeout = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new RequestTimeout(`no reply to ${type} in time`, id)), Math.max(0, deadline - Date.now()));
        });
        try {
            return await Promise.race([work, timeout]);
        }
        finally {
            clearTimeout(timer);
        }
    }
    newId() {
        const id = this.nextId;
        this.nextId = (this.nextId % 0xffff_ffff) + 1;
        return id;
    }
    async send(socket, type, fields, id = this.newId()) {
        await this.pacer.take();
        if (this.fatal)
            throw this.fatal;
        const reply = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
        try {
            socket.send(encode({ type, id, ...fields }, { ignoreUndefined: true }));
        }
        catch {
            this.pending.delete(id);
            throw new ConnectionLost(`the connection dropped before ${type} was sent`);
        }
        try {
            const msg = await reply;
            if (msg.type === 'error')
                throw new ServerError(msg.code, msg.message);
            return msg;
        }
        finally {
            this.pending.delete(id);
        }
    }
    /** Round-trip time of an application `ping`, in milliseconds. */
    async ping() {
        const start = Date.now();
        await this.request('ping', {});
        return Date.now() - start;
    }
    // --- signing in ---
    async authenticate(type, fields) {
        const auth = await this.request(type, fields);
        this.session = auth;
        for (const gameId of unsentGames(auth)) {
            try {
                await this.request('sync', { game_id: gameId });
            }
            catch (err) {
                // The reconnect that follows a lost connection syncs every game again.
                if (err instanceof ConnectionLost)
                    break;
                // It ended between the two answers: its record is all that is left.
                if (!(err instanceof ServerError))
                    throw err;
            }
        }
        return auth;
    }
    guest() { return this.authenticate('guest', {}); }
    register(name, password) { return this.authenticate('register', { name, password }); }
    login(name, password) { return this.authenticate('login', { name, password }); }
    /** Signs in with the token of an earlier session. Every game the account sits in
     * (`games` of the answer) has its snapshot by the time this resolves, and `nextGame`
     * resolves with each. */
    resume(token) { return this.authenticate('resume', { token }); }
    async logout() {
        await this.request('logout', {});
        this.session = null;
    }
    // --- the lobby ---
    joinPool(variant, timeControl, rated) {
        return this.request('join_pool', { variant, time_control: timeControl, rated });
    }
    async leavePool() { await this.request('leave_pool', {}); }
    async createSeek(variant, timeControl, rated) {
        return (await this.request('create_seek', { variant, time_control: timeControl, rated })).seek;
    }
    async cancelSeek(seekId) { await this.request('cancel_seek', { seek_id: seekId }); }
    async listSeeks() { return (await this.request('list_seeks', {})).seeks; }
    async acceptSeek(seekId) { await this.request('accept_seek', { seek_id: seekId }); }
    async challenge(opponent, variant, timeControl, rated) {
        return (await this.request('challenge', { opponent, variant, time_control: timeControl, rated })).challenge;
    }
    async acceptChallenge(id) { await this.request('accept_challenge', { challenge_id: id }); }
    async declineChallenge(id) { await this.request('decline_challenge', { challenge_id: id }); }
    async cancelChallenge(id) { await this.request('cancel_challenge', { challenge_id: id }); }
    /** Offers the opponent of a finished game a rematch (they get `rematch_offered`), or
     * accepts theirs: the new game comes from `nextGame`. */
    async offerRematch(gameId) { await this.request('offer_rematch', { game_id: gameId }); }
    /** Declines the opponent's offer of a rematch of a finished game; they get
     * `rematch_declined`. `ServerError` `no_rematch` without a standing offer. */
    async declineRematch(gameId) { await this.request('decline_rematch', { game_id: gameId }); }
    /** Starts a game against the server's computer player; `nextGame` returns it. */
    async playBot(strength, variant, timeControl) {
        await this.request('play_bot', { strength, variant, time_control: timeControl });
    }
    lobbyCounts() { return this.request('lobby_counts', {}); }
    /** The account's open games with what each waits for; from now on `your_move` pushes
     * come (`nextPush`) whenever an action becomes owed. */
    async myGames() { return (await this.request('my_games', {})).games; }
    // --- games ---
    async listGames() { return (await this.request('list_games', {})).games; }
    /** A fresh snapshot of a game played or watched; its `Game` is reset to it. */
    sync(gameId) { return this.request('sync', { game_id: gameId }); }
    /** Watches a live game (watched again after a reconnect) and returns it. */
    async watch(gameId) {
        await this.request('watch', { game_id: gameId });
        this.watched.add(gameId);
        return this.gamesById.get(gameId);
    }
    async unwatch(gameId) {
        this.watched.delete(gameId);
        await this.request('unwatch', { game_id: gameId });
    }
    /** The game with this id, if this client has heard of it. */
    game(gameId) { return this.gamesById.get(gameId); }
    /** Every game this client has heard of, played or watched, over or not, in the order it
     * heard of them. */
    get games() { return [...this.gamesById.values()]; }
    /** The next game this client is seated in that it had not heard of: one that starts
     * (`game_start`), or one the account sits in when it signs in. */
    nextGame() { return this.newGames.get(); }
    /** The next message that is not a reply and not about one game's state: lobby news,
     * `game_start`, `your_move`, `notice`, and `error` answering no request. */
    nextPush() { return this.pushQueue.get(); }
    async *pushes() {
        for (;;)
            yield await this.nextPush();
    }
    // --- nonces, for `Game` ---
    /** @internal */
    nonceSave(gameId, sealed) { return this.nonces.save(this.accountName, gameId, sealed); }
    /** @internal */
    nonceLoad(gameId) { return this.nonces.load(this.accountName, gameId); }
    /** @internal */
    nonceRemove(gameId) { return this.nonces.remove(this.accountName, gameId); }
    // --- the socket ---
    async connectOnce() {
        const socket = await openSocket(this.url, this.options.WebSocket, this.options.protocols);
        this.socket = socket;
        const stopHeartbeat = this.heartbeat(socket);
        socket.onmessage = (data) => this.receive(data);
        socket.onclose = (code) => {
            stopHeartbeat();
            this.options.onClose?.(code);
            this.lost(socket, code);
        };
        const deadline = Date.now() + this.options.requestTimeoutMs;
        const hello = {
            ...this.options.hello,
            protocol_version: PROTOCOL_VERSION,
            client: this.options.clientName,
            ...(this.options.batch === false ? {} : { batch: true }),
        };
        const welcome = (await this.withTimeout(this.send(socket, 'hello', hello), deadline, 'hello', null));
        this.pacer.setRate(welcome.limits.max_messages_per_s);
        return welcome;
    }
    /** Starts the heartbeat of `socket`, if the options ask for one; returns its stop. */
    heartbeat(socket) {
        const beat = this.options.heartbeat;
        if (!beat)
            return () => { };
        let pinging = false;
        const timer = setInterval(() => {
            const silent = Date.now() - socket.lastReceived;
            if (silent >= beat.silentMs) {
                socket.drop();
            }
            else if (silent >= beat.quietMs && !pinging && this.ready.set && socket === this.socket) {
                pinging = true;
                this.send(socket, 'ping', {}).catch(() => { }).finally(() => { pinging = false; });
            }
        }, Math.max(50, Math.min(beat.quietMs, beat.silentMs) / 4));
        // A heartbeat alone never keeps a Node process alive.
        timer.unref?.();
        return () => clearInterval(timer);
    }
    receive(data) {
        let msg;
        try {
            msg = decode(data);
        }
        catch (err) {
            console.warn(`elementals: ignoring an undecodable frame: ${String(err)}`);
            return;
        }
        if (Array.isArray(msg)) {
            this.batchesReceived += 1;
        }
        else {
            msg = [msg];
        }
        for (const one of msg) {
            if (typeof one === 'object' && one !== null && typeof one.type === 'string') {
                this.options.onMessage?.(one);
                this.dispatch(one);
            }
        }
    }
    dispatch(msg) {
        if (msg.type === 'snapshot')
            this.snapshot(msg);
        const id = 'id' in msg ? msg.id : null;
        if (id !== null && id !== undefined) {
            const waiter = this.pending.get(id);
            if (waiter) {
                this.pending.delete(id);
                waiter.resolve(msg);
                return;
            }
        }
        if (msg.type === 'snapshot')
            return;
        if (msg.type === 'game_start') {
            this.seated(msg);
        }
        else if (GAME_EVENTS.has(msg.type) || msg.type === 'spectators') {
            this.gamesById.get(msg.game_id)?.receive(msg);
            return;
        }
        this.pushQueue.put(msg);
    }
    seated(msg) {
        let game = this.gamesById.get(msg.game.game_id);
        if (!game) {
            game = new Game(this, msg.game.game_id, msg.seat, msg.game, this.options.streams ?? true);
            this.gamesById.set(game.gameId, game);
            this.newGames.put(game);
        }
        game.receive(msg);
    }
    snapshot(msg) {
        const info = msg.snapshot.game;
        let game = this.gamesById.get(info.game_id);
        if (!game) {
            game = new Game(this, info.game_id, msg.seat, info, this.options.streams ?? true);
            this.gamesById.set(game.gameId, game);
            if (msg.seat !== null)
                this.newGames.put(game);
        }
        game.receive(msg);
    }
    /** The games this client plays, not over, that the account no longer sits in: they ended
     * while it was away (their `sync` answers `game_over`), or, on a cluster, a server is
     * taking them over. */
    missingGames(auth) {
        const seated = new Set(auth.games ?? []);
        return [...this.gamesById.values()]
            .filter((game) => game.seat !== null && !game.over && !seated.has(game.gameId))
            .map((game) => game.gameId);
    }
    /** The stored record of a finished game (`GET /api/games/{id}`, PROTOCOL.md section 12),
     * from the HTTP server behind this client's WebSocket URL; null while there is none (it
     * is stored moments after the game's end). */
    async record(gameId) {
        const answer = await fetch(httpUrl(this.url, `/api/games/${gameId}`));
        if (answer.status === 404)
            return null;
        if (!answer.ok)
            throw new Error(`GET /api/games/${gameId} answered ${answer.status}`);
        return (await answer.json());
    }
    lost(socket, code) {
        if (socket !== this.socket)
            return;
        this.ready.lower();
        for (const waiter of this.pending.values())
            waiter.reject(new ConnectionLost());
        this.pending.clear();
        if (this.fatal || this.reconnecting)
            return;
        if (code === 4000) {
            this.die(new ClientClosed('superseded: the account signed in on another connection'));
        }
        else if (!this.options.reconnect || FINAL_CLOSE_CODES.has(code)) {
            this.die(new ClientClosed(`the connection closed (${code})`));
        }
        else {
            this.reconnecting = true;
            void this.reconnect();
        }
    }
    async reconnect() {
        let delay = this.options.backoffMs[0];
        while (!this.fatal) {
            await new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * (delay / 2)));
            delay = Math.min(delay * 2, this.options.backoffMs[1]);
            if (this.fatal)
                break;
            try {
                this.welcome = await this.connectOnce();
                const socket = this.socket;
                const deadline = Date.now() + this.options.requestTimeoutMs;
                if (this.session) {
                    const resume = this.send(socket, 'resume', { token: this.session.token });
                    this.session = (await this.withTimeout(resume, deadline, 'resume', null));
                    for (const gameId of [...unsentGames(this.session), ...this.missingGames(this.session)]) {
                        try {
                            await this.withTimeout(this.send(socket, 'sync', { game_id: gameId }), deadline, 'sync', null);
                        }
                        catch (err) {
                            if (!(err instanceof ServerError))
                                throw err;
                            const game = this.gamesById.get(gameId);
                            if (err.code === 'game_over' && game && game.seat !== null)
                                void game.endAway();
                        }
                    }
                }
                for (const gameId of [...this.watched]) {
                    try {
                        await this.withTimeout(this.send(socket, 'watch', { game_id: gameId }), deadline, 'watch', null);
                    }
                    catch (err) {
                        if (!(err instanceof ServerError))
                            throw err;
                        this.watched.delete(gameId);
                    }
                }
                this.reconnects += 1;
                this.ready.raise();
                this.reconnecting = false;
                // It may have dropped again before its close could ask for a reconnect.
                if (socket.closed)
                    this.lost(socket, socket.closeCode);
                return;
            }
            catch (err) {
                if (err instanceof ServerError) {
                    this.die(new ClientClosed(`could not sign in again: ${err.message}`));
                }
                this.socket?.close(1000);
            }
        }
        this.reconnecting = false;
    }
    die(err) {
        if (!this.fatal)
            this.fatal = err;
        for (const waiter of this.pending.values())
            waiter.reject(err);
        this.pending.clear();
        this.ready.fail(err);
        this.newGames.fail(err);
        this.pushQueue.fail(err);
        for (const game of this.gamesById.values())
            game.fail(err);
    }
    /** Drops the socket without a closing handshake where the platform allows (Node), as a
     * failing network would: for tests of reconnecting. */
    dropConnection() {
        this.socket?.drop();
    }
}
