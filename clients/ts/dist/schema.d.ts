/**
 * Every frame of the Elementals WebSocket protocol, version 1, as JSON describes its MessagePack (see PROTOCOL.md): a client sends a ClientMsg, a server a ServerMsg. A bin is a string whose schema says "x-msgpack": "bin".
 */
export type ElementalsProtocolMessages = ClientMsg | ServerMsg | ServerBatch;
/**
 * Messages a client sends to the server.
 */
export type ClientMsg = HelloMsg | PingMsg | RegisterMsg | LoginMsg | GuestMsg | ResumeMsg | LogoutMsg | JoinPoolMsg | LeavePoolMsg | CreateSeekMsg | CancelSeekMsg | ListSeeksMsg | AcceptSeekMsg | ChallengeMsg | AcceptChallengeMsg | DeclineChallengeMsg | CancelChallengeMsg | PlayBotMsg | LobbyCountsMsg | OfferRematchMsg | DeclineRematchMsg | CommitMsg | RevealMsg | ResignMsg | AbortMsg | OfferDrawMsg | DeclineDrawMsg | ClaimWinMsg | SyncMsg | MyGamesMsg | ListGamesMsg | WatchMsg | UnwatchMsg;
/**
 * A game id: a UUID in its 36-character hyphenated lowercase form.
 */
export type GameId = string;
/**
 * Bytes, as a MessagePack bin: never a str (of hex or otherwise), never an array. Commitments and nonces are exactly 32 bytes (other lengths decode, and are answered `bad_commitment` or `bad_nonce`).
 */
export type Bytes = Uint8Array;
/**
 * Messages the server sends to a client. Clients should ignore fields they do not know,
 * so that a server may add fields without a new protocol version.
 */
export type ServerMsg = WelcomeMsg | PongMsg | OkMsg | ErrorMsg | AuthenticatedMsg | QueuedMsg | SeekCreatedMsg | SeeksMsg | ChallengeSentMsg | LiveGamesMsg | OpenGamesMsg | CountsMsg | SnapshotMsg | QueueStatusMsg | ChallengeReceivedMsg | ChallengeDeclinedMsg | ChallengeCancelledMsg | SeekRemovedMsg | RematchOfferedMsg | RematchDeclinedMsg | GameStartMsg | SpectatorsMsg | YourMoveMsg | RoundStartMsg | CommittedMsg | RevealPhaseMsg | RevealedMsg | RoundResultMsg | DrawOfferedMsg | DrawDeclinedMsg | PresenceMsg | GameOverMsg | RatingUpdateMsg | NoticeMsg;
/**
 * Every error a server may answer with. Serialized as its snake_case string.
 */
export type ErrorCode = 'bad_message' | 'unknown_type' | 'unknown_field' | 'message_too_large' | 'unsupported_version' | 'hello_required' | 'not_authenticated' | 'already_authenticated' | 'invalid_name' | 'invalid_password' | 'name_taken' | 'bad_credentials' | 'invalid_token' | 'guest_not_allowed' | 'rate_limited' | 'invalid_variant' | 'invalid_time_control' | 'already_queued' | 'not_queued' | 'already_in_game' | 'too_many_games' | 'unknown_seek' | 'own_seek' | 'unknown_challenge' | 'unknown_player' | 'too_many_requests' | 'unknown_strength' | 'unknown_game' | 'not_seated' | 'wrong_round' | 'wrong_phase' | 'already_committed' | 'already_revealed' | 'bad_commitment' | 'duplicate_commitment' | 'bad_nonce' | 'invalid_pick' | 'reveal_mismatch' | 'escrow_mismatch' | 'game_over' | 'no_draw_offer' | 'no_rematch' | 'claim_not_allowed' | 'abort_not_allowed' | 'not_watching' | 'shutting_down' | 'unavailable' | 'internal';
/**
 * What a seat owes: its commitment or its reveal for the current round.
 */
export type OwedAction = 'commit' | 'reveal';
/**
 * A player's side of the board.
 */
export type Seat = 'one' | 'two';
/**
 * Where a round stands.
 */
export type Phase = 'commit' | 'reveal' | 'over';
/**
 * Why a game ended.
 */
export type EndReason = 'resignation' | 'edge' | 'time' | 'no_reveal' | 'abandoned' | 'draw_agreed' | 'aborted' | 'server_aborted' | 'max_rounds';
/**
 * A frame of several server messages, sent only to a client whose `hello` said `batch: true`: their MessagePack array, two or more, in the order they would otherwise come one a frame, each element exactly the map it would otherwise be (PROTOCOL.md, "Batches"). The server batches what one event causes for one connection: a request's reply with the game events it caused, or a game's events to a spectator that waited for them.
 *
 * @minItems 2
 */
export type ServerBatch = [ServerMsg, ServerMsg, ...ServerMsg[]];
/**
 * Must be the first message. Answered by `welcome` or `error` (then close).
 */
export interface HelloMsg {
    /**
     * Ask for batches: several messages the server sends together come as one frame
     * holding their MessagePack array (PROTOCOL.md, "Batches"). Written only when set,
     * so a `hello` without it is the same bytes as before the field.
     */
    batch?: boolean;
    client?: string | null;
    id: number;
    protocol_version: number;
    type: 'hello';
}
/**
 * Answered by `pong` with the same id.
 */
export interface PingMsg {
    id: number;
    type: 'ping';
}
export interface RegisterMsg {
    id: number;
    name: string;
    password: string;
    type: 'register';
}
export interface LoginMsg {
    id: number;
    name: string;
    password: string;
    type: 'login';
}
/**
 * Play unrated games under a generated guest name.
 */
export interface GuestMsg {
    id: number;
    type: 'guest';
}
/**
 * Resume a session (after a dropped connection or a server restart).
 */
export interface ResumeMsg {
    id: number;
    token: string;
    type: 'resume';
}
/**
 * Revoke this session's token.
 */
export interface LogoutMsg {
    id: number;
    type: 'logout';
}
/**
 * Wait in the quick-pairing pool for (variant, preset time control).
 */
export interface JoinPoolMsg {
    id: number;
    rated?: boolean;
    time_control: string;
    type: 'join_pool';
    variant: Variant;
}
/**
 * The three numbers a game is played under.
 */
export interface Variant {
    /**
     * How many squares an element travels from the centre to win.
     */
    distance: number;
    /**
     * How many elements exist, numbered `1..=number`.
     */
    number: number;
    /**
     * How far down (cyclically) an element beats.
     */
    range: number;
}
export interface LeavePoolMsg {
    id: number;
    type: 'leave_pool';
}
export interface CreateSeekMsg {
    id: number;
    rated?: boolean;
    time_control: TimeControl;
    type: 'create_seek';
    variant: Variant;
}
/**
 * How a game's clocks run. All durations in milliseconds.
 *
 * A live control (`per_phase_ms` absent): each player has a bank of `initial_ms`; the bank
 * runs only while that player's commit or reveal is outstanding; `increment_ms` is added
 * after each resolved round. Once both players have committed, each has at most
 * `reveal_ms` (and no more than the bank) to reveal.
 *
 * A correspondence control (`per_phase_ms` present, the three live fields 0): no bank;
 * each phase (a round's commit, then its reveal) must be done within `per_phase_ms` of the
 * phase's start, and whoever still owes it then loses on time.
 */
export interface TimeControl {
    increment_ms: number;
    initial_ms: number;
    /**
     * Left out for a live control, so its bytes (and every record and transcript that
     * holds one) are what they were before correspondence existed; last, so that the
     * MessagePack array form of stored records still reads.
     */
    per_phase_ms?: number | null;
    reveal_ms: number;
}
export interface CancelSeekMsg {
    id: number;
    seek_id: number;
    type: 'cancel_seek';
}
export interface ListSeeksMsg {
    id: number;
    type: 'list_seeks';
}
export interface AcceptSeekMsg {
    id: number;
    seek_id: number;
    type: 'accept_seek';
}
export interface ChallengeMsg {
    id: number;
    opponent: string;
    rated?: boolean;
    time_control: TimeControl;
    type: 'challenge';
    variant: Variant;
}
export interface AcceptChallengeMsg {
    challenge_id: number;
    id: number;
    type: 'accept_challenge';
}
export interface DeclineChallengeMsg {
    challenge_id: number;
    id: number;
    type: 'decline_challenge';
}
export interface CancelChallengeMsg {
    challenge_id: number;
    id: number;
    type: 'cancel_challenge';
}
/**
 * Offer a rematch after `game_id` ended; when both offer, a new game starts with seats swapped.
 * Start a game at once against a computer opponent the server runs; never rated.
 */
export interface PlayBotMsg {
    id: number;
    /**
     * `"easy"`, `"medium"` or `"hard"`.
     */
    strength: string;
    /**
     * A preset's name, as in `JoinPool`.
     */
    time_control: string;
    type: 'play_bot';
    variant: Variant;
}
/**
 * How many players are online and how many wait in each pool.
 */
export interface LobbyCountsMsg {
    id: number;
    type: 'lobby_counts';
}
export interface OfferRematchMsg {
    game_id: GameId;
    id: number;
    type: 'offer_rematch';
}
/**
 * Decline the opponent's offer of a rematch of `game_id`; they are told.
 */
export interface DeclineRematchMsg {
    game_id: GameId;
    id: number;
    type: 'decline_rematch';
}
/**
 * With `pick` and `nonce` (both or neither), the reveal is escrowed: the server checks
 * them against the commitment at once, keeps them secret and reveals on the player's
 * behalf when the reveal phase opens (PROTOCOL.md section 8 states the trade).
 */
export interface CommitMsg {
    commitment: Bytes;
    game_id: GameId;
    id: number;
    nonce?: Bytes;
    pick?: number | null;
    round: number;
    type: 'commit';
}
export interface RevealMsg {
    game_id: GameId;
    id: number;
    nonce: Bytes;
    pick: number;
    round: number;
    type: 'reveal';
}
export interface ResignMsg {
    game_id: GameId;
    id: number;
    type: 'resign';
}
/**
 * End the game with no result and no rating change, while round 1 still waits for a
 * commitment from either player.
 */
export interface AbortMsg {
    game_id: GameId;
    id: number;
    type: 'abort';
}
/**
 * Offer a draw, or accept the opponent's standing offer.
 */
export interface OfferDrawMsg {
    game_id: GameId;
    id: number;
    type: 'offer_draw';
}
export interface DeclineDrawMsg {
    game_id: GameId;
    id: number;
    type: 'decline_draw';
}
/**
 * Claim the win after the opponent's disconnect grace period ran out.
 */
export interface ClaimWinMsg {
    game_id: GameId;
    id: number;
    type: 'claim_win';
}
/**
 * Ask for a fresh snapshot of a game this connection plays or watches.
 */
export interface SyncMsg {
    game_id: GameId;
    id: number;
    type: 'sync';
}
/**
 * The asker's open games and what each waits for (answered `open_games`).
 */
export interface MyGamesMsg {
    id: number;
    type: 'my_games';
}
export interface ListGamesMsg {
    id: number;
    type: 'list_games';
}
export interface WatchMsg {
    game_id: GameId;
    id: number;
    type: 'watch';
}
export interface UnwatchMsg {
    game_id: GameId;
    id: number;
    type: 'unwatch';
}
export interface WelcomeMsg {
    id: number;
    limits: Limits;
    protocol_version: number;
    server: string;
    type: 'welcome';
}
/**
 * Limits a server announces in `welcome`.
 */
export interface Limits {
    /**
     * How long round 1's commit phase waits for both commitments before the game is
     * aborted unrated (`first_commit_ms`); the clocks do not run in that phase.
     */
    first_commit_ms: number;
    heartbeat_ms: number;
    idle_timeout_ms: number;
    max_message_bytes: number;
    max_messages_per_s: number;
    /**
     * Resolved rounds after which a game ends drawn (`max_rounds`), at most `MAX_ROUNDS`.
     */
    max_rounds: number;
}
export interface PongMsg {
    id: number;
    type: 'pong';
}
export interface OkMsg {
    id: number;
    type: 'ok';
}
/**
 * `id` is nil when the error answers no request (for example an undecodable frame).
 */
export interface ErrorMsg {
    code: ErrorCode;
    id: number | null;
    message: string;
    type: 'error';
}
export interface AuthenticatedMsg {
    account: Account;
    /**
     * The game whose `snapshot` follows at once: the account's live game, else its
     * correspondence game seated longest; `None` when it holds no seat (a client
     * coming back knows at once whether its game is still on). Absent from older
     * servers' frames, which reads as `None`.
     */
    game_id: GameId | null;
    /**
     * Every game the account holds a seat in (its live game first, if any); the
     * client gets each one's snapshot by `sync`. Absent when it holds none (and from
     * older servers' frames), which reads as empty.
     */
    games?: GameId[];
    id: number;
    /**
     * Opaque session token (64 hex characters); keep it to `resume`.
     */
    token: string;
    /**
     * Unix time in milliseconds.
     */
    token_expires_at: number;
    type: 'authenticated';
}
/**
 * A signed-in account as others see it.
 */
export interface Account {
    draws: number;
    guest: boolean;
    losses: number;
    name: string;
    rating: number;
    wins: number;
}
export interface QueuedMsg {
    id: number;
    rated: boolean;
    time_control: TimeControl;
    type: 'queued';
    variant: Variant;
}
export interface SeekCreatedMsg {
    id: number;
    seek: Seek;
    type: 'seek_created';
}
/**
 * An open seek anyone may accept.
 */
export interface Seek {
    by: PlayerInfo;
    rated: boolean;
    seek_id: number;
    time_control: TimeControl;
    variant: Variant;
}
/**
 * A player in a game, with the rating as it was when the game started.
 */
export interface PlayerInfo {
    /**
     * A computer opponent the server runs. Sent only when true.
     */
    bot?: boolean;
    guest: boolean;
    name: string;
    rating: number;
}
export interface SeeksMsg {
    id: number;
    seeks: Seek[];
    type: 'seeks';
}
export interface ChallengeSentMsg {
    challenge: Challenge;
    id: number;
    type: 'challenge_sent';
}
/**
 * A direct challenge from one player to another.
 */
export interface Challenge {
    challenge_id: number;
    from: PlayerInfo;
    rated: boolean;
    time_control: TimeControl;
    to: string;
    variant: Variant;
}
export interface LiveGamesMsg {
    games: LiveGame[];
    id: number;
    type: 'live_games';
}
/**
 * A game under way in a listing: live, or a sleeping correspondence game.
 */
export interface LiveGame {
    /**
     * Whether it is played at correspondence pace (its `time_control` has
     * `per_phase_ms`), awake or asleep. Absent from older servers' listings: false.
     */
    correspondence: boolean;
    game_id: GameId;
    players: SeatPairOf_PlayerInfo;
    positions: number[];
    rated: boolean;
    round: number;
    spectators: number;
    time_control: TimeControl;
    variant: Variant;
}
/**
 * One value per seat.
 */
export interface SeatPairOf_PlayerInfo {
    one: PlayerInfo;
    two: PlayerInfo;
}
/**
 * The reply to `my_games`: the asker's open games, each with what it waits for.
 */
export interface OpenGamesMsg {
    games: MyGame[];
    id: number;
    type: 'open_games';
}
/**
 * One of the asker's open (unfinished) games, as `my_games` and `GET /api/me/games` list it.
 */
export interface MyGame {
    game_id: GameId;
    opponent: PlayerInfo;
    /**
     * The seats whose action the game waits for (none, one or both), seat one first.
     */
    owed: Owed[];
    phase: Phase;
    rated: boolean;
    round: number;
    /**
     * A player's side of the board.
     */
    seat: 'one' | 'two';
    time_control: TimeControl;
    variant: Variant;
}
/**
 * An action a game waits for from one seat, and by when.
 */
export interface Owed {
    action: OwedAction;
    /**
     * Unix milliseconds at which the seat loses (or, in round 1, the game is aborted) if it
     * has not acted: its bank's end, or the reveal window's if earlier. `None` while the
     * game's clocks are held (a restart, an incident, a log that cannot be written).
     */
    deadline: number | null;
    seat: Seat;
}
export interface CountsMsg {
    id: number;
    /**
     * Signed-in players (the asker included).
     */
    online: number;
    /**
     * The pools someone waits in (the asker not counted), most waiting first.
     */
    pools: PoolCount[];
    type: 'counts';
}
/**
 * How many wait in one quick-pairing pool.
 */
export interface PoolCount {
    rated: boolean;
    /**
     * The preset's name (`"blitz"`, …).
     */
    time_control: string;
    variant: Variant;
    waiting: number;
}
/**
 * A full picture of a game: the reply to `watch` and `sync`, and pushed to a player
 * whose session resumes into a game. `seat` is the receiver's seat, if any.
 */
export interface SnapshotMsg {
    id: number | null;
    seat: Seat | null;
    snapshot: GameSnapshot;
    type: 'snapshot';
}
/**
 * Everything needed to draw a game from scratch.
 */
export interface GameSnapshot {
    clocks: Clocks;
    committed: SeatPairOfBoolean;
    connected: SeatPairOfBoolean;
    draw_offer: Seat | null;
    game: GameInfo;
    phase: Phase;
    positions: number[];
    result: GameResult | null;
    revealed: SeatPairOfBoolean;
    round: number;
    rounds: RoundRecord[];
    /**
     * The `seq` of the last event this snapshot includes; events after it follow.
     */
    seq: number;
    spectators: number;
}
/**
 * Both banks in milliseconds, and whose is running, as of the message.
 */
export interface Clocks {
    one_ms: number;
    running: SeatPairOfBoolean;
    two_ms: number;
}
/**
 * One value per seat.
 */
export interface SeatPairOfBoolean {
    one: boolean;
    two: boolean;
}
/**
 * What a game is, fixed at its start.
 */
export interface GameInfo {
    game_id: GameId;
    players: SeatPairOf_PlayerInfo;
    rated: boolean;
    /**
     * Unix time in milliseconds.
     */
    started_at: number;
    time_control: TimeControl;
    variant: Variant;
}
export interface GameResult {
    reason: EndReason;
    /**
     * `None` for a draw or an abort.
     */
    winner: Seat | null;
}
/**
 * One resolved round.
 */
export interface RoundRecord {
    outcome: Outcome;
    picks: SeatPairOfUint16;
    /**
     * Every element's position after the round (index = element - 1).
     */
    positions: number[];
    round: number;
}
/**
 * The result of one round.
 */
export interface Outcome {
    moved: Move | null;
    /**
     * Who won the round; `None` is a tie, and then `moved` is `None` too.
     */
    winner: Seat | null;
}
/**
 * One element moving one square after winning a round.
 */
export interface Move {
    /**
     * A player's side of the board.
     */
    by: 'one' | 'two';
    element: number;
    from: number;
    to: number;
}
/**
 * One value per seat.
 */
export interface SeatPairOfUint16 {
    one: number;
    two: number;
}
/**
 * While waiting in a pool, about once a second.
 */
export interface QueueStatusMsg {
    players_waiting: number;
    /**
     * Current allowed rating difference.
     */
    rating_window: number;
    type: 'queue_status';
    waited_ms: number;
}
export interface ChallengeReceivedMsg {
    challenge: Challenge;
    type: 'challenge_received';
}
export interface ChallengeDeclinedMsg {
    challenge_id: number;
    type: 'challenge_declined';
}
export interface ChallengeCancelledMsg {
    challenge_id: number;
    type: 'challenge_cancelled';
}
export interface SeekRemovedMsg {
    seek_id: number;
    type: 'seek_removed';
}
export interface RematchOfferedMsg {
    by: Seat;
    game_id: GameId;
    type: 'rematch_offered';
}
/**
 * The opponent declined this player's offer of a rematch.
 */
export interface RematchDeclinedMsg {
    by: Seat;
    game_id: GameId;
    type: 'rematch_declined';
}
/**
 * A game starts for this player, seated at `seat`.
 */
export interface GameStartMsg {
    game: GameInfo;
    seat: Seat;
    type: 'game_start';
}
/**
 * The number of spectators changed (batched, at most about once a second).
 */
export interface SpectatorsMsg {
    count: number;
    game_id: GameId;
    type: 'spectators';
}
/**
 * An action of this player's became owed in one of their games (`seat` must `action`
 * in `round` by `deadline`): sent once per such change to the account's connection if
 * it has asked `my_games` since signing in (PROTOCOL.md, `your_move`).
 */
export interface YourMoveMsg {
    action: OwedAction;
    /**
     * Unix milliseconds, as in `Owed`; `None` while the game's clocks are held.
     */
    deadline: number | null;
    game_id: GameId;
    round: number;
    seat: Seat;
    type: 'your_move';
}
export interface RoundStartMsg {
    clocks: Clocks;
    game_id: GameId;
    round: number;
    seq: number;
    type: 'round_start';
}
/**
 * `seat` has committed in `round` (its commitment stays hidden).
 */
export interface CommittedMsg {
    clocks: Clocks;
    game_id: GameId;
    round: number;
    seat: Seat;
    seq: number;
    type: 'committed';
}
/**
 * Both have committed: reveal by `reveal_deadline_ms` from now (or when the bank ends).
 */
export interface RevealPhaseMsg {
    clocks: Clocks;
    game_id: GameId;
    reveal_ms: number;
    round: number;
    seq: number;
    type: 'reveal_phase';
}
/**
 * `seat` has revealed a pick that matches its commitment (the pick stays hidden).
 */
export interface RevealedMsg {
    clocks: Clocks;
    game_id: GameId;
    round: number;
    seat: Seat;
    seq: number;
    type: 'revealed';
}
export interface RoundResultMsg {
    clocks: Clocks;
    game_id: GameId;
    record: RoundRecord;
    seq: number;
    type: 'round_result';
}
export interface DrawOfferedMsg {
    by: Seat;
    game_id: GameId;
    seq: number;
    type: 'draw_offered';
}
export interface DrawDeclinedMsg {
    by: Seat;
    game_id: GameId;
    seq: number;
    type: 'draw_declined';
}
/**
 * A player's connection dropped or came back. While away, the seat is kept for
 * `grace_ms`; after that the opponent may `claim_win`.
 */
export interface PresenceMsg {
    connected: boolean;
    game_id: GameId;
    grace_ms: number;
    seat: Seat;
    seq: number;
    type: 'presence';
}
export interface GameOverMsg {
    clocks: Clocks;
    game_id: GameId;
    rated: boolean;
    result: GameResult;
    seq: number;
    type: 'game_over';
}
/**
 * A rated game's rating changes, sent once they are durably recorded.
 */
export interface RatingUpdateMsg {
    game_id: GameId;
    ratings: SeatPairOf_RatingChange;
    seq: number;
    type: 'rating_update';
}
/**
 * One value per seat.
 */
export interface SeatPairOf_RatingChange {
    one: RatingChange;
    two: RatingChange;
}
/**
 * One player's rating around a game.
 */
export interface RatingChange {
    after: number;
    before: number;
}
/**
 * Something the client should know before the server closes the connection
 * (`superseded`, `shutting_down`, `idle`).
 */
export interface NoticeMsg {
    code: string;
    message: string;
    type: 'notice';
}
