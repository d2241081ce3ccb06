// One game as a player or spectator sees it: a snapshot kept current by the game's numbered
// events, a stream of those events, and the moves of the seat this client holds.
//
// The client applies every message about the game as it arrives, so a `Game`'s state is
// always the newest the client knows; a player acts on that state (commit when the round
// wants this seat's commitment, reveal when it wants the reveal) rather than on single
// events, so a snapshot after a resumed connection simply carries on.

import { commitment, newNonce } from './commitment.js';
import { ConnectionLost, GameEndedAway, ServerError } from './errors.js';
import { Flag, Mailbox } from './mailbox.js';
import type {
  Requests, GameEvent, GameInfo, GameMessage, GameResult, GameSnapshot, Phase, RoundRecord, SeatPair,
  RatingChange, Seat, Variant,
} from './messages.js';
import type { SealedPick } from './nonces.js';

/** What a `Game` needs of its client. */
export interface GameHost {
  request<K extends 'commit' | 'reveal' | 'resign' | 'abort' | 'offer_draw' | 'decline_draw' | 'claim_win' | 'sync'>(
    type: K, fields: Requests[K]): Promise<unknown>;
  nonceSave(gameId: string, sealed: SealedPick): Promise<void>;
  nonceLoad(gameId: string): Promise<SealedPick | null>;
  nonceRemove(gameId: string): Promise<void>;
  record(gameId: string): Promise<GameRecord | null>;
}

/** What `GET /api/games/{id}` answers (PROTOCOL.md section 12), as much as the SDK reads. */
export interface GameRecord { game_id: string; rated: boolean; result: GameResult }

/** Chooses this round's pick, `1..=game.variant.number`. */
export type Strategy = (game: Game) => number | Promise<number>;

// Messages a `Game` holds for a reader that has not read them; past this the oldest go
// (the state is kept current regardless: a slow reader loses history, never correctness).
const EVENTS_CAPACITY = 1024;
// Reads of a finished game's record before giving up (it is stored moments after the end):
// with the doubling waits, about 10 s.
const RECORD_TRIES = 15;

export class Game {
  snapshot: GameSnapshot | null = null;
  ratedResult: boolean | null = null;
  ratings: SeatPair<RatingChange> | null = null;
  spectators = 0;
  /** Set when the game ended while this client was away: its events are lost, so no
   * `rating_update` is coming either. */
  endedAway = false;
  private readonly events: Mailbox<GameMessage>;
  private readonly changedFlag = new Flag();
  private syncing = false;
  // The round whose commit (or reveal) this client has sent since the last snapshot.
  private sentCommit: number | null = null;
  private sentReveal: number | null = null;

  constructor(
    private readonly host: GameHost,
    readonly gameId: string,
    public seat: Seat | null,
    public info: GameInfo | null,
    /** Keep the events nobody waits for yet (`Client`'s `streams` option). */
    streams = true,
  ) {
    this.events = new Mailbox<GameMessage>(streams ? EVENTS_CAPACITY : 0);
  }

  get variant(): Variant {
    if (!this.info) throw new Error('the game is not known yet');
    return this.info.variant;
  }
  /** Whether a snapshot has arrived: until then nothing is known of the round. */
  get ready(): boolean { return this.snapshot !== null; }
  get round(): number { return this.snapshot?.round ?? 0; }
  get phase(): Phase { return this.snapshot?.phase ?? 'commit'; }
  get positions(): number[] { return this.snapshot?.positions ?? []; }
  get history(): RoundRecord[] { return this.snapshot?.rounds ?? []; }
  get result(): GameResult | null { return this.snapshot?.result ?? null; }
  get over(): boolean { return this.phase === 'over'; }

  /** This seat's commitment is wanted and has not been sent. */
  get owesCommit(): boolean {
    const s = this.snapshot;
    return s !== null && this.seat !== null && s.phase === 'commit' && !s.committed[this.seat] && this.sentCommit !== s.round;
  }

  /** This seat's reveal is wanted and has not been sent. */
  get owesReveal(): boolean {
    const s = this.snapshot;
    return s !== null && this.seat !== null && s.phase === 'reveal' && !s.revealed[this.seat] && this.sentReveal !== s.round;
  }

  // --- what the client feeds in ---

  /** @internal */
  receive(msg: GameMessage): void {
    if (msg.type === 'snapshot') {
      this.snapshot = structuredClone(msg.snapshot);
      this.info = msg.snapshot.game;
      this.seat = msg.seat;
      this.spectators = msg.snapshot.spectators;
      this.sentCommit = null;
      this.sentReveal = null;
      this.syncing = false;
    } else if (msg.type === 'spectators') {
      this.spectators = msg.count;
    } else if (msg.type !== 'game_start' && !this.apply(msg)) {
      return;
    }
    this.events.put(msg);
    this.changedFlag.raise();
  }

  /** @internal */
  fail(err: Error): void {
    this.events.fail(err);
    this.changedFlag.fail(err);
  }

  private apply(event: GameEvent): boolean {
    const s = this.snapshot;
    // Before the first snapshot: the snapshot that follows `game_start` covers the event.
    if (!s || event.seq <= s.seq) return false;
    if (event.seq > s.seq + 1) {
      if (!this.syncing) {
        this.syncing = true;
        this.host.request('sync', { game_id: this.gameId }).catch(() => { this.syncing = false; });
      }
      return false;
    }
    s.seq = event.seq;
    if ('clocks' in event) s.clocks = event.clocks;
    switch (event.type) {
      case 'round_start':
        s.round = event.round;
        s.phase = 'commit';
        s.committed = { one: false, two: false };
        s.revealed = { one: false, two: false };
        break;
      case 'committed': s.committed[event.seat] = true; break;
      case 'reveal_phase': s.phase = 'reveal'; break;
      case 'revealed': s.revealed[event.seat] = true; break;
      case 'round_result':
        s.rounds.push(event.record);
        s.positions = event.record.positions;
        s.draw_offer = null;
        break;
      case 'draw_offered': s.draw_offer = event.by; break;
      case 'draw_declined': s.draw_offer = null; break;
      case 'presence': s.connected[event.seat] = event.connected; break;
      case 'game_over':
        s.phase = 'over';
        s.result = event.result;
        this.ratedResult = event.rated;
        break;
      case 'rating_update': this.ratings = event.ratings; break;
    }
    return true;
  }

  // --- reading ---

  /** The next message about this game: a snapshot, a numbered event in order, or a
   * `spectators` count. The game's state already includes it. */
  nextEvent(): Promise<GameMessage> {
    return this.events.get();
  }

  /** Every message about the game until `game_over` (and `rating_update` if one is coming). */
  async *messages(): AsyncGenerator<GameMessage> {
    for (;;) {
      yield await this.nextEvent();
      if (this.over && !this.ratingPending()) return;
    }
  }

  /** Resolves once the state has changed since the last call resolved (at once if it has
   * already). Independent of `nextEvent`: a player may use either. */
  async changed(): Promise<void> {
    await this.changedFlag.wait();
    this.changedFlag.lower();
  }

  /** @internal The game ended while this client was away (its `sync` answered
   * `game_over`): the result comes from its record, stored moments after the end. */
  async endAway(): Promise<void> {
    let record: GameRecord | null = null;
    let delay = 50;
    for (let i = 0; i < RECORD_TRIES && record === null; i++) {
      try {
        record = await this.host.record(this.gameId);
      } catch (err) {
        console.warn(`elementals: the record of ${this.gameId} could not be read: ${String(err)}`);
      }
      if (record === null) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 1000);
      }
    }
    this.endedAway = true;
    if (this.snapshot && record && !this.over) {
      this.snapshot.phase = 'over';
      this.snapshot.result = record.result;
      this.ratedResult = record.rated && record.result.winner !== null;
    }
    this.changedFlag.raise();
  }

  private ratingPending(): boolean {
    if (this.endedAway) return false;
    const decisive = this.result !== null && this.result.winner !== null;
    return this.ratedResult === true && decisive && this.ratings === null;
  }

  // --- moves ---

  private player(): Seat {
    if (this.seat === null) throw new Error('a spectator has no moves');
    return this.seat;
  }

  /** Commits this round to `pick` with a fresh nonce, kept in the client's nonce store
   * before the commitment is sent. With `escrow` the reveal travels with the commit and the
   * server reveals for this seat (PROTOCOL.md section 8 states the trade). */
  async commit(pick: number, { escrow = false } = {}): Promise<void> {
    const seat = this.player();
    const round = this.round;
    const nonce = newNonce();
    const digest = await commitment(this.gameId, round, seat, pick, nonce);
    const fields: Requests['commit'] = { game_id: this.gameId, round, commitment: digest };
    if (escrow) {
      fields.pick = pick;
      fields.nonce = nonce;
      this.sentReveal = round;
    } else {
      await this.host.nonceSave(this.gameId, { round, pick, nonce });
    }
    this.sentCommit = round;
    await this.host.request('commit', fields);
  }

  /** Reveals the pick committed this round, from the client's nonce store (so also one
   * committed before a reconnect, or by an earlier process with a file store). */
  async reveal(): Promise<void> {
    this.player();
    const round = this.round;
    const sealed = await this.host.nonceLoad(this.gameId);
    if (!sealed || sealed.round !== round) throw new Error(`no pick kept for round ${round} of ${this.gameId}`);
    this.sentReveal = round;
    await this.host.request('reveal', { game_id: this.gameId, round, pick: sealed.pick, nonce: sealed.nonce });
    await this.host.nonceRemove(this.gameId);
  }

  async resign(): Promise<void> { await this.host.request('resign', { game_id: this.gameId }); }
  /** Calls the game off (no result, no rating change) while round 1 still waits for a
   * commitment; `ServerError` `abort_not_allowed` once both have committed. */
  async abort(): Promise<void> { await this.host.request('abort', { game_id: this.gameId }); }
  async offerDraw(): Promise<void> { await this.host.request('offer_draw', { game_id: this.gameId }); }
  async declineDraw(): Promise<void> { await this.host.request('decline_draw', { game_id: this.gameId }); }
  async claimWin(): Promise<void> { await this.host.request('claim_win', { game_id: this.gameId }); }

  /** Does what the state asks of this seat now, if anything: commits `strategy(this)` or
   * reveals. A refused move is reported on the console, not thrown (the opponent may have
   * resigned at that moment); nor is a connection lost on the way (the snapshot after the
   * reconnect shows whether the move arrived, and the next call sends what is still owed).
   * Resolves to whether a move was sent. */
  async act(strategy: Strategy, { escrow = false } = {}): Promise<boolean> {
    try {
      if (this.owesCommit) {
        await this.commit(await strategy(this), { escrow });
        return true;
      }
      if (this.owesReveal && (await this.host.nonceLoad(this.gameId)) !== null) {
        await this.reveal();
        return true;
      }
    } catch (err) {
      if (err instanceof ServerError) console.warn(`elementals: a move in ${this.gameId} was refused: ${err.message}`);
      else if (!(err instanceof ConnectionLost)) throw err;
    }
    return false;
  }

  /** Plays the game to its end: commits `strategy(game)` each round and reveals it.
   * Survives reconnects. Resolves to the result, once a rated game's rating change has
   * come too (or `ratingTimeoutMs` passed). */
  async play(strategy: Strategy, { escrow = false, ratingTimeoutMs = 10_000 } = {}): Promise<GameResult> {
    this.player();
    while (!this.over) {
      if (this.endedAway) throw new GameEndedAway(`${this.gameId} ended while the client was away; its record could not be read`);
      await this.act(strategy, { escrow });
      if (!this.over && !this.endedAway) await this.changed();
    }
    if (this.ratingPending()) {
      const deadline = Date.now() + ratingTimeoutMs;
      while (this.ratingPending() && Date.now() < deadline) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, deadline - Date.now()); });
        await Promise.race([this.changed(), timeout]);
        clearTimeout(timer);
      }
    }
    await this.host.nonceRemove(this.gameId);
    return this.result as GameResult;
  }
}
