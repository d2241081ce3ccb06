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
import { Game, type GameHost, type GameRecord } from './game.js';
import { Flag, Mailbox } from './mailbox.js';
import {
  GAME_EVENTS, type Authenticated, type Challenge, type Counts, type ErrorReply, type GameMessage,
  type GameStart, type LiveGame, type MyGame, type Preset, type Push, type Queued, type Replies,
  type Requests, type RequestType, type Seek, type ServerMessage, type Snapshot, type Strength,
  type TimeControl, type Variant, type Welcome,
} from './messages.js';
import { MemoryNonceStore, type NonceStore, type SealedPick } from './nonces.js';
import { openSocket, type SocketLike, type WebSocketClass } from './socket.js';

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
export function httpUrl(wsUrl: string, path: string): string {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : url.protocol === 'ws:' ? 'http:' : url.protocol;
  const base = url.pathname.replace(/\/$/, '').replace(/\/ws$/, '');
  return `${url.origin}${base}${path}`;
}

/** The games an account sits in whose snapshot does not follow its `authenticated`
 * unasked: all of `games` but `game_id`. */
export function unsentGames(auth: Authenticated): string[] {
  return (auth.games ?? []).filter((gameId) => gameId !== auth.game_id);
}

/** A token bucket that spaces the client's messages to `rate` a second, in bursts of at
 * most `rate`: half the burst a server allows (twice its rate), so that the frames a
 * network bunches together on the way still pass. */
export class Pacer {
  private tokens: number;
  private at = Date.now();
  // Each message waits for the one before it: they leave in the order they were made.
  private tail: Promise<void> = Promise.resolve();

  constructor(private rate: number) {
    this.rate = Math.max(rate, 1);
    this.tokens = this.rate;
  }

  setRate(rate: number): void {
    this.rate = Math.max(rate, 1);
  }

  take(): Promise<void> {
    const turn = this.tail.then(() => this.wait());
    this.tail = turn;
    return turn;
  }

  private async wait(): Promise<void> {
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
  heartbeat?: { quietMs: number; silentMs: number };
}

interface Pending { resolve: (msg: ServerMessage) => void; reject: (err: Error) => void }

export class Client implements GameHost {
  welcome: Welcome | null = null;
  session: Authenticated | null = null;
  /** How many times the client has reconnected and signed in again. */
  reconnects = 0;
  /** Frames that held a batch (an array of messages) rather than one message. */
  batchesReceived = 0;
  readonly nonces: NonceStore;
  private readonly options: Required<Pick<ClientOptions, 'clientName' | 'requestTimeoutMs' | 'reconnect' | 'backoffMs'>>
    & Omit<ClientOptions, 'nonces'>;
  private socket: SocketLike | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly gamesById = new Map<string, Game>();
  private readonly watched = new Set<string>();
  private readonly newGames: Mailbox<Game>;
  private readonly pushQueue: Mailbox<Push>;
  private readonly ready = new Flag();
  private fatal: Error | null = null;
  private reconnecting = false;
  private readonly pacer = new Pacer(DEFAULT_MESSAGES_PER_S);

  constructor(readonly url: string, options: ClientOptions = {}) {
    this.nonces = options.nonces ?? new MemoryNonceStore();
    const streams = options.streams ?? true;
    this.newGames = new Mailbox<Game>(NEW_GAMES_CAPACITY);
    this.pushQueue = new Mailbox<Push>(streams ? PUSHES_CAPACITY : 0);
    this.options = {
      ...options,
      clientName: options.clientName ?? `elementals-ts/${VERSION}`,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      reconnect: options.reconnect ?? true,
      backoffMs: options.backoffMs ?? [250, 15_000],
    };
  }

  /** Connects and says `hello`. */
  static async connect(url: string, options: ClientOptions = {}): Promise<Client> {
    const client = new Client(url, options);
    await client.open();
    return client;
  }

  async open(): Promise<Welcome> {
    this.welcome = await this.connectOnce();
    this.ready.raise();
    return this.welcome;
  }

  /** Closes the connection; the client makes no more requests. */
  async close(): Promise<void> {
    this.die(new ClientClosed('the client was closed'));
    this.socket?.close(1000);
  }

  /** Whether the socket is open, `hello` answered and, after a reconnect, the session
   * resumed: a request now is sent at once. */
  get isOpen(): boolean {
    return this.ready.set && this.socket !== null && !this.socket.closed;
  }

  get accountName(): string {
    if (!this.session) throw new Error('not signed in');
    return this.session.account.name;
  }

  // --- requests ---

  /** Sends a request (the id is added) once the client is connected, and signed in again
   * after any reconnect, and resolves with its reply. Rejects with `ServerError` for an
   * `error` reply, `ConnectionLost` if the connection drops first, `RequestTimeout` after
   * the request timeout. */
  async request<K extends RequestType>(type: K, fields: Requests[K]): Promise<Replies[K]> {
    const deadline = Date.now() + this.options.requestTimeoutMs;
    await this.withTimeout(this.ready.wait(), deadline, type, null);
    const id = this.newId();
    return (await this.withTimeout(this.send(this.socket!, type, fields, id), deadline, type, id)) as Replies[K];
  }

  private async withTimeout<T>(work: Promise<T>, deadline: number, type: string, id: number | null): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RequestTimeout(`no reply to ${type} in time`, id)), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private newId(): number {
    const id = this.nextId;
    this.nextId = (this.nextId % 0xffff_ffff) + 1;
    return id;
  }

  private async send(socket: SocketLike, type: string, fields: object, id = this.newId()): Promise<ServerMessage> {
    await this.pacer.take();
    if (this.fatal) throw this.fatal;
    const reply = new Promise<ServerMessage>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    try {
      socket.send(encode({ type, id, ...fields }, { ignoreUndefined: true }));
    } catch {
      this.pending.delete(id);
      throw new ConnectionLost(`the connection dropped before ${type} was sent`);
    }
    try {
      const msg = await reply;
      if (msg.type === 'error') throw new ServerError(msg.code, msg.message);
      return msg;
    } finally {
      this.pending.delete(id);
    }
  }

  /** Round-trip time of an application `ping`, in milliseconds. */
  async ping(): Promise<number> {
    const start = Date.now();
    await this.request('ping', {});
    return Date.now() - start;
  }

  // --- signing in ---

  private async authenticate<K extends 'guest' | 'register' | 'login' | 'resume'>(type: K, fields: Requests[K]): Promise<Authenticated> {
    const auth = await this.request(type, fields);
    this.session = auth;
    for (const gameId of unsentGames(auth)) {
      try {
        await this.request('sync', { game_id: gameId });
      } catch (err) {
        // The reconnect that follows a lost connection syncs every game again.
        if (err instanceof ConnectionLost) break;
        // It ended between the two answers: its record is all that is left.
        if (!(err instanceof ServerError)) throw err;
      }
    }
    return auth;
  }

  guest(): Promise<Authenticated> { return this.authenticate('guest', {}); }
  register(name: string, password: string): Promise<Authenticated> { return this.authenticate('register', { name, password }); }
  login(name: string, password: string): Promise<Authenticated> { return this.authenticate('login', { name, password }); }
  /** Signs in with the token of an earlier session. Every game the account sits in
   * (`games` of the answer) has its snapshot by the time this resolves, and `nextGame`
   * resolves with each. */
  resume(token: string): Promise<Authenticated> { return this.authenticate('resume', { token }); }

  async logout(): Promise<void> {
    await this.request('logout', {});
    this.session = null;
  }

  // --- the lobby ---

  joinPool(variant: Variant, timeControl: Preset, rated?: boolean): Promise<Queued> {
    return this.request('join_pool', { variant, time_control: timeControl, rated });
  }
  async leavePool(): Promise<void> { await this.request('leave_pool', {}); }
  async createSeek(variant: Variant, timeControl: TimeControl, rated?: boolean): Promise<Seek> {
    return (await this.request('create_seek', { variant, time_control: timeControl, rated })).seek;
  }
  async cancelSeek(seekId: number): Promise<void> { await this.request('cancel_seek', { seek_id: seekId }); }
  async listSeeks(): Promise<Seek[]> { return (await this.request('list_seeks', {})).seeks; }
  async acceptSeek(seekId: number): Promise<void> { await this.request('accept_seek', { seek_id: seekId }); }
  async challenge(opponent: string, variant: Variant, timeControl: TimeControl, rated?: boolean): Promise<Challenge> {
    return (await this.request('challenge', { opponent, variant, time_control: timeControl, rated })).challenge;
  }
  async acceptChallenge(id: number): Promise<void> { await this.request('accept_challenge', { challenge_id: id }); }
  async declineChallenge(id: number): Promise<void> { await this.request('decline_challenge', { challenge_id: id }); }
  async cancelChallenge(id: number): Promise<void> { await this.request('cancel_challenge', { challenge_id: id }); }
  /** Offers the opponent of a finished game a rematch (they get `rematch_offered`), or
   * accepts theirs: the new game comes from `nextGame`. */
  async offerRematch(gameId: string): Promise<void> { await this.request('offer_rematch', { game_id: gameId }); }
  /** Declines the opponent's offer of a rematch of a finished game; they get
   * `rematch_declined`. `ServerError` `no_rematch` without a standing offer. */
  async declineRematch(gameId: string): Promise<void> { await this.request('decline_rematch', { game_id: gameId }); }
  /** Starts a game against the server's computer player; `nextGame` returns it. */
  async playBot(strength: Strength, variant: Variant, timeControl: Preset): Promise<void> {
    await this.request('play_bot', { strength, variant, time_control: timeControl });
  }
  lobbyCounts(): Promise<Counts> { return this.request('lobby_counts', {}); }
  /** The account's open games with what each waits for; from now on `your_move` pushes
   * come (`nextPush`) whenever an action becomes owed. */
  async myGames(): Promise<MyGame[]> { return (await this.request('my_games', {})).games; }

  // --- games ---

  async listGames(): Promise<LiveGame[]> { return (await this.request('list_games', {})).games; }
  /** A fresh snapshot of a game played or watched; its `Game` is reset to it. */
  sync(gameId: string): Promise<Snapshot> { return this.request('sync', { game_id: gameId }); }
  /** Watches a live game (watched again after a reconnect) and returns it. */
  async watch(gameId: string): Promise<Game> {
    await this.request('watch', { game_id: gameId });
    this.watched.add(gameId);
    return this.gamesById.get(gameId)!;
  }
  async unwatch(gameId: string): Promise<void> {
    this.watched.delete(gameId);
    await this.request('unwatch', { game_id: gameId });
  }
  /** The game with this id, if this client has heard of it. */
  game(gameId: string): Game | undefined { return this.gamesById.get(gameId); }
  /** Every game this client has heard of, played or watched, over or not, in the order it
   * heard of them. */
  get games(): Game[] { return [...this.gamesById.values()]; }
  /** The next game this client is seated in that it had not heard of: one that starts
   * (`game_start`), or one the account sits in when it signs in. */
  nextGame(): Promise<Game> { return this.newGames.get(); }
  /** The next message that is not a reply and not about one game's state: lobby news,
   * `game_start`, `your_move`, `notice`, and `error` answering no request. */
  nextPush(): Promise<Push> { return this.pushQueue.get(); }
  async *pushes(): AsyncGenerator<Push> {
    for (;;) yield await this.nextPush();
  }

  // --- nonces, for `Game` ---

  /** @internal */
  nonceSave(gameId: string, sealed: SealedPick): Promise<void> { return this.nonces.save(this.accountName, gameId, sealed); }
  /** @internal */
  nonceLoad(gameId: string): Promise<SealedPick | null> { return this.nonces.load(this.accountName, gameId); }
  /** @internal */
  nonceRemove(gameId: string): Promise<void> { return this.nonces.remove(this.accountName, gameId); }

  // --- the socket ---

  private async connectOnce(): Promise<Welcome> {
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
    const welcome = (await this.withTimeout(this.send(socket, 'hello', hello), deadline, 'hello', null)) as Welcome;
    this.pacer.setRate(welcome.limits.max_messages_per_s);
    return welcome;
  }

  /** Starts the heartbeat of `socket`, if the options ask for one; returns its stop. */
  private heartbeat(socket: SocketLike): () => void {
    const beat = this.options.heartbeat;
    if (!beat) return () => {};
    let pinging = false;
    const timer = setInterval(() => {
      const silent = Date.now() - socket.lastReceived;
      if (silent >= beat.silentMs) {
        socket.drop();
      } else if (silent >= beat.quietMs && !pinging && this.ready.set && socket === this.socket) {
        pinging = true;
        this.send(socket, 'ping', {}).catch(() => {}).finally(() => { pinging = false; });
      }
    }, Math.max(50, Math.min(beat.quietMs, beat.silentMs) / 4));
    // A heartbeat alone never keeps a Node process alive.
    (timer as { unref?: () => void }).unref?.();
    return () => clearInterval(timer);
  }

  private receive(data: Uint8Array): void {
    let msg: unknown;
    try {
      msg = decode(data);
    } catch (err) {
      console.warn(`elementals: ignoring an undecodable frame: ${String(err)}`);
      return;
    }
    if (Array.isArray(msg)) {
      this.batchesReceived += 1;
    } else {
      msg = [msg];
    }
    for (const one of msg as unknown[]) {
      if (typeof one === 'object' && one !== null && typeof (one as { type?: unknown }).type === 'string') {
        this.options.onMessage?.(one as ServerMessage);
        this.dispatch(one as ServerMessage);
      }
    }
  }

  private dispatch(msg: ServerMessage): void {
    if (msg.type === 'snapshot') this.snapshot(msg);
    const id = 'id' in msg ? msg.id : null;
    if (id !== null && id !== undefined) {
      const waiter = this.pending.get(id);
      if (waiter) {
        this.pending.delete(id);
        waiter.resolve(msg);
        return;
      }
    }
    if (msg.type === 'snapshot') return;
    if (msg.type === 'game_start') {
      this.seated(msg);
    } else if (GAME_EVENTS.has(msg.type) || msg.type === 'spectators') {
      this.gamesById.get((msg as { game_id: string }).game_id)?.receive(msg as GameMessage);
      return;
    }
    this.pushQueue.put(msg as Push);
  }

  private seated(msg: GameStart): void {
    let game = this.gamesById.get(msg.game.game_id);
    if (!game) {
      game = new Game(this, msg.game.game_id, msg.seat, msg.game, this.options.streams ?? true);
      this.gamesById.set(game.gameId, game);
      this.newGames.put(game);
    }
    game.receive(msg);
  }

  private snapshot(msg: Snapshot): void {
    const info = msg.snapshot.game;
    let game = this.gamesById.get(info.game_id);
    if (!game) {
      game = new Game(this, info.game_id, msg.seat, info, this.options.streams ?? true);
      this.gamesById.set(game.gameId, game);
      if (msg.seat !== null) this.newGames.put(game);
    }
    game.receive(msg);
  }

  /** The games this client plays, not over, that the account no longer sits in: they ended
   * while it was away (their `sync` answers `game_over`), or, on a cluster, a server is
   * taking them over. */
  private missingGames(auth: Authenticated): string[] {
    const seated = new Set(auth.games ?? []);
    return [...this.gamesById.values()]
      .filter((game) => game.seat !== null && !game.over && !seated.has(game.gameId))
      .map((game) => game.gameId);
  }

  /** The stored record of a finished game (`GET /api/games/{id}`, PROTOCOL.md section 12),
   * from the HTTP server behind this client's WebSocket URL; null while there is none (it
   * is stored moments after the game's end). */
  async record(gameId: string): Promise<GameRecord | null> {
    const answer = await fetch(httpUrl(this.url, `/api/games/${gameId}`));
    if (answer.status === 404) return null;
    if (!answer.ok) throw new Error(`GET /api/games/${gameId} answered ${answer.status}`);
    return (await answer.json()) as GameRecord;
  }

  private lost(socket: SocketLike, code: number): void {
    if (socket !== this.socket) return;
    this.ready.lower();
    for (const waiter of this.pending.values()) waiter.reject(new ConnectionLost());
    this.pending.clear();
    if (this.fatal || this.reconnecting) return;
    if (code === 4000) {
      this.die(new ClientClosed('superseded: the account signed in on another connection'));
    } else if (!this.options.reconnect || FINAL_CLOSE_CODES.has(code)) {
      this.die(new ClientClosed(`the connection closed (${code})`));
    } else {
      this.reconnecting = true;
      void this.reconnect();
    }
  }

  private async reconnect(): Promise<void> {
    let delay = this.options.backoffMs[0];
    while (!this.fatal) {
      await new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * (delay / 2)));
      delay = Math.min(delay * 2, this.options.backoffMs[1]);
      if (this.fatal) break;
      try {
        this.welcome = await this.connectOnce();
        const socket = this.socket!;
        const deadline = Date.now() + this.options.requestTimeoutMs;
        if (this.session) {
          const resume = this.send(socket, 'resume', { token: this.session.token });
          this.session = (await this.withTimeout(resume, deadline, 'resume', null)) as Authenticated;
          for (const gameId of [...unsentGames(this.session), ...this.missingGames(this.session)]) {
            try {
              await this.withTimeout(this.send(socket, 'sync', { game_id: gameId }), deadline, 'sync', null);
            } catch (err) {
              if (!(err instanceof ServerError)) throw err;
              const game = this.gamesById.get(gameId);
              if (err.code === 'game_over' && game && game.seat !== null) void game.endAway();
            }
          }
        }
        for (const gameId of [...this.watched]) {
          try {
            await this.withTimeout(this.send(socket, 'watch', { game_id: gameId }), deadline, 'watch', null);
          } catch (err) {
            if (!(err instanceof ServerError)) throw err;
            this.watched.delete(gameId);
          }
        }
        this.reconnects += 1;
        this.ready.raise();
        this.reconnecting = false;
        // It may have dropped again before its close could ask for a reconnect.
        if (socket.closed) this.lost(socket, socket.closeCode);
        return;
      } catch (err) {
        if (err instanceof ServerError) {
          this.die(new ClientClosed(`could not sign in again: ${err.message}`));
        }
        this.socket?.close(1000);
      }
    }
    this.reconnecting = false;
  }

  private die(err: Error): void {
    if (!this.fatal) this.fatal = err;
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
    this.ready.fail(err);
    this.newGames.fail(err);
    this.pushQueue.fail(err);
    for (const game of this.gamesById.values()) game.fail(err);
  }

  /** Drops the socket without a closing handshake where the platform allows (Node), as a
   * failing network would: for tests of reconnecting. */
  dropConnection(): void {
    this.socket?.drop();
  }
}

export type { ErrorReply };
