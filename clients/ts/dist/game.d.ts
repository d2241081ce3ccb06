import type { Requests, GameInfo, GameMessage, GameResult, GameSnapshot, Phase, RoundRecord, SeatPair, RatingChange, Seat, Variant } from './messages.js';
import type { SealedPick } from './nonces.js';
/** What a `Game` needs of its client. */
export interface GameHost {
    request<K extends 'commit' | 'reveal' | 'resign' | 'abort' | 'offer_draw' | 'decline_draw' | 'claim_win' | 'sync'>(type: K, fields: Requests[K]): Promise<unknown>;
    nonceSave(gameId: string, sealed: SealedPick): Promise<void>;
    nonceLoad(gameId: string): Promise<SealedPick | null>;
    nonceRemove(gameId: string): Promise<void>;
    record(gameId: string): Promise<GameRecord | null>;
}
/** What `GET /api/games/{id}` answers (PROTOCOL.md section 12), as much as the SDK reads. */
export interface GameRecord {
    game_id: string;
    rated: boolean;
    result: GameResult;
}
/** Chooses this round's pick, `1..=game.variant.number`. */
export type Strategy = (game: Game) => number | Promise<number>;
export declare class Game {
    private readonly host;
    readonly gameId: string;
    seat: Seat | null;
    info: GameInfo | null;
    snapshot: GameSnapshot | null;
    ratedResult: boolean | null;
    ratings: SeatPair<RatingChange> | null;
    spectators: number;
    /** Set when the game ended while this client was away: its events are lost, so no
     * `rating_update` is coming either. */
    endedAway: boolean;
    private readonly events;
    private readonly changedFlag;
    private syncing;
    private sentCommit;
    private sentReveal;
    constructor(host: GameHost, gameId: string, seat: Seat | null, info: GameInfo | null, 
    /** Keep the events nobody waits for yet (`Client`'s `streams` option). */
    streams?: boolean);
    get variant(): Variant;
    /** Whether a snapshot has arrived: until then nothing is known of the round. */
    get ready(): boolean;
    get round(): number;
    get phase(): Phase;
    get positions(): number[];
    get history(): RoundRecord[];
    get result(): GameResult | null;
    get over(): boolean;
    /** This seat's commitment is wanted and has not been sent. */
    get owesCommit(): boolean;
    /** This seat's reveal is wanted and has not been sent. */
    get owesReveal(): boolean;
    /** @internal */
    receive(msg: GameMessage): void;
    /** @internal */
    fail(err: Error): void;
    private apply;
    /** The next message about this game: a snapshot, a numbered event in order, or a
     * `spectators` count. The game's state already includes it. */
    nextEvent(): Promise<GameMessage>;
    /** Every message about the game until `game_over` (and `rating_update` if one is coming). */
    messages(): AsyncGenerator<GameMessage>;
    /** Resolves once the state has changed since the last call resolved (at once if it has
     * already). Independent of `nextEvent`: a player may use either. */
    changed(): Promise<void>;
    /** @internal The game ended while this client was away (its `sync` answered
     * `game_over`): the result comes from its record, stored moments after the end. */
    endAway(): Promise<void>;
    private ratingPending;
    private player;
    /** Commits this round to `pick` with a fresh nonce, kept in the client's nonce store
     * before the commitment is sent. With `escrow` the reveal travels with the commit and the
     * server reveals for this seat (PROTOCOL.md section 8 states the trade). */
    commit(pick: number, { escrow }?: {
        escrow?: boolean | undefined;
    }): Promise<void>;
    /** Reveals the pick committed this round, from the client's nonce store (so also one
     * committed before a reconnect, or by an earlier process with a file store). */
    reveal(): Promise<void>;
    resign(): Promise<void>;
    /** Calls the game off (no result, no rating change) while round 1 still waits for a
     * commitment; `ServerError` `abort_not_allowed` once both have committed. */
    abort(): Promise<void>;
    offerDraw(): Promise<void>;
    declineDraw(): Promise<void>;
    claimWin(): Promise<void>;
    /** Does what the state asks of this seat now, if anything: commits `strategy(this)` or
     * reveals. A refused move is reported on the console, not thrown (the opponent may have
     * resigned at that moment); nor is a connection lost on the way (the snapshot after the
     * reconnect shows whether the move arrived, and the next call sends what is still owed).
     * Resolves to whether a move was sent. */
    act(strategy: Strategy, { escrow }?: {
        escrow?: boolean | undefined;
    }): Promise<boolean>;
    /** Plays the game to its end: commits `strategy(game)` each round and reveals it.
     * Survives reconnects. Resolves to the result, once a rated game's rating change has
     * come too (or `ratingTimeoutMs` passed). */
    play(strategy: Strategy, { escrow, ratingTimeoutMs }?: {
        escrow?: boolean | undefined;
        ratingTimeoutMs?: number | undefined;
    }): Promise<GameResult>;
}
