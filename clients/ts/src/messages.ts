// The protocol's messages as TypeScript types: those of `schema.ts` (generated from the JSON
// Schema the server's Rust types derive, protocol/schema/messages.json) under the short
// names the SDK uses, the request and reply maps that type `Client.request`, and the few
// narrower types the schema states as plain strings. Frames decode to plain objects; a
// server may add fields (PROTOCOL.md section 2), so these are the keys a message has at
// least. `bin` fields are Uint8Array.

import type * as S from './schema.js';

export type {
  Account, Challenge, ClientMsg, Clocks, EndReason, ErrorCode, GameId, GameInfo, GameResult, GameSnapshot,
  Limits, LiveGame, Move, MyGame, Outcome, Owed, Phase, PlayerInfo, PoolCount, RatingChange, RoundRecord, Seat,
  Seek, ServerMsg, TimeControl, Variant,
} from './schema.js';

/** One value per seat. */
export interface SeatPair<T> { one: T; two: T }
/** The preset time controls of pools (PROTOCOL.md section 11); the schema says `string`. */
export type Preset = 'blitz' | 'rapid' | 'live' | 'corr-1d' | 'corr-3d' | 'corr-7d';
/** The computer's strengths (PROTOCOL.md section 6); the schema says `string`. */
export type Strength = 'easy' | 'medium' | 'hard';

type OfType<U, K> = U extends { type: K } ? U : never;

export type RequestType = S.ClientMsg['type'];
/** Each client message's fields besides `type` and `id` (the client adds the id). */
export type Requests = { [K in RequestType]: Omit<OfType<S.ClientMsg, K>, 'type' | 'id'> };

export type Welcome = S.WelcomeMsg;
export type Pong = S.PongMsg;
export type Ok = S.OkMsg;
export type ErrorReply = S.ErrorMsg;
export type Authenticated = S.AuthenticatedMsg;
export type Queued = S.QueuedMsg;
export type SeekCreated = S.SeekCreatedMsg;
export type Seeks = S.SeeksMsg;
export type ChallengeSent = S.ChallengeSentMsg;
export type LiveGames = S.LiveGamesMsg;
export type OpenGames = S.OpenGamesMsg;
export type Counts = S.CountsMsg;
export type Snapshot = S.SnapshotMsg;

/** The reply each request gets on success (PROTOCOL.md section 2's table). A request the
 * schema gains without a reply here fails to compile where `Client.request` indexes this. */
export interface Replies {
  hello: Welcome; ping: Pong; register: Authenticated; login: Authenticated; guest: Authenticated;
  resume: Authenticated; logout: Ok; join_pool: Queued; leave_pool: Ok; create_seek: SeekCreated;
  cancel_seek: Ok; list_seeks: Seeks; accept_seek: Ok; challenge: ChallengeSent; accept_challenge: Ok;
  decline_challenge: Ok; cancel_challenge: Ok; offer_rematch: Ok; decline_rematch: Ok; play_bot: Ok;
  lobby_counts: Counts; commit: Ok; reveal: Ok; resign: Ok; abort: Ok; offer_draw: Ok; decline_draw: Ok; claim_win: Ok;
  sync: Snapshot; my_games: OpenGames; list_games: LiveGames; watch: Snapshot | Ok; unwatch: Ok;
}

export type GameStart = S.GameStartMsg;
export type Spectators = S.SpectatorsMsg;
export type YourMove = S.YourMoveMsg;
export type Notice = S.NoticeMsg;

/** The numbered game events: each has `game_id` and `seq`. */
export type GameEvent =
  | S.RoundStartMsg | S.CommittedMsg | S.RevealPhaseMsg | S.RevealedMsg | S.RoundResultMsg
  | S.DrawOfferedMsg | S.DrawDeclinedMsg | S.PresenceMsg | S.GameOverMsg | S.RatingUpdateMsg;

export const GAME_EVENTS: ReadonlySet<string> = new Set<GameEvent['type']>([
  'round_start', 'committed', 'reveal_phase', 'revealed', 'round_result',
  'draw_offered', 'draw_declined', 'presence', 'game_over', 'rating_update',
]);

export type RematchOffered = S.RematchOfferedMsg;
export type RematchDeclined = S.RematchDeclinedMsg;

/** What `Client.nextPush` yields: lobby news, `game_start`, `your_move`, `notice`, and an
 * `error` that answers no request. */
export type Push =
  | S.QueueStatusMsg | S.ChallengeReceivedMsg | S.ChallengeDeclinedMsg | S.ChallengeCancelledMsg
  | S.SeekRemovedMsg | RematchOffered | RematchDeclined | GameStart | YourMove | Notice | ErrorReply;

/** What a `Game` yields: its snapshots, its numbered events and spectator counts. */
export type GameMessage = Snapshot | GameEvent | Spectators | GameStart;

export type ServerMessage = S.ServerMsg;
