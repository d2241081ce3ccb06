//! The player driver: plays games to their end for a [`Strategy`], doing commit–reveal
//! in every round, and reports each result and rating change. One connection may play
//! several games at once (correspondence games beside a live one): each event goes to
//! its game by id, and each game keeps its own state, turn and kept nonce.
//!
//! The driver is state-driven rather than event-driven: after every event it looks at
//! the [`GameState`] and does what the state asks (commit if this seat has not, reveal if
//! the round is in its reveal phase and the pick is still unrevealed). So a resync from a
//! snapshot, or a resumed session, simply continues.

use std::collections::VecDeque;
use std::time::Duration;

use elementals_protocol::commitment::{self, COMMITMENT_LEN, NONCE_LEN};
use elementals_protocol::messages::{EndReason, GameId, GameInfo, GameResult, Phase};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::{Element, Seat, ServerMsg};
use rand::Rng;
use tokio::time::Instant;

use crate::client::Client;
use crate::error::ClientError;
use crate::nonces::NonceStore;
use crate::state::{message_game, Applied, GameState};
use elementals_protocol::strategy::Strategy;

/// A game that has started for this connection, from the `game_start` push.
#[derive(Debug, Clone, PartialEq)]
pub struct GameStart {
    pub game: GameInfo,
    pub seat: Seat,
}

impl GameStart {
    pub fn from_msg(msg: &ServerMsg) -> Option<GameStart> {
        match msg {
            ServerMsg::GameStart { game, seat } => Some(GameStart {
                game: game.clone(),
                seat: *seat,
            }),
            _ => None,
        }
    }
}

/// Read events until a game starts, dropping everything else (queue status and the
/// like). Fails with [`ClientError::Closed`] if the connection ends first.
pub async fn wait_for_game_start(client: &Client) -> Result<GameStart, ClientError> {
    loop {
        let event = client.next_event().await.ok_or(ClientError::Closed)?;
        if let Some(start) = GameStart::from_msg(&event) {
            return Ok(start);
        }
    }
}

/// How a finished game went for the player.
#[derive(Debug, Clone, PartialEq)]
pub struct GameSummary {
    pub game_id: GameId,
    pub seat: Seat,
    /// The opponent's name.
    pub opponent: String,
    pub result: GameResult,
    /// Rounds resolved.
    pub rounds: u32,
    /// Whether the result changes ratings, as `game_over` said.
    pub rated: bool,
    /// This player's rating change, once the server recorded it.
    pub rating: Option<RatingChange>,
    /// This player's rating after the game, once the server recorded it.
    pub rating_after: Option<f64>,
}

impl GameSummary {
    /// `Some(true)` for a win, `Some(false)` for a loss, `None` for a draw or abort.
    pub fn won(&self) -> Option<bool> {
        self.result.winner.map(|w| w == self.seat)
    }
}

/// A pick this seat has committed to and must later reveal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedPick {
    pub round: u32,
    pub pick: Element,
    pub nonce: [u8; NONCE_LEN],
}

impl SealedPick {
    /// Draw a fresh secret nonce for `pick` (from the thread-local CSPRNG, never from a
    /// strategy's possibly seeded generator) and compute its commitment.
    pub fn new(
        game_id: GameId,
        round: u32,
        seat: Seat,
        pick: Element,
    ) -> (SealedPick, [u8; COMMITMENT_LEN]) {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill(&mut nonce);
        let commitment = commitment::make(&game_id.0, round, seat, pick, &nonce);
        (SealedPick { round, pick, nonce }, commitment)
    }
}

/// Settings for [`Player`].
#[derive(Debug, Clone)]
pub struct PlayerOptions {
    /// How long to wait after `game_over` of a rated game for `rating_update`.
    pub rating_timeout: Duration,
    /// A pause before each pick, to look like a person (or to load a server realistically).
    pub think_time: Duration,
    /// Claim the win when a disconnected opponent's grace period runs out.
    pub claim_wins: bool,
    /// Escrow each reveal with its commit (one visit a round; the server then sees each pick
    /// at commit time, PROTOCOL.md section 8) instead of revealing in the reveal phase.
    pub escrow: bool,
    /// Where each unrevealed commit's pick and nonce are kept durably (written before the
    /// commit is sent), so that a player restarted before its reveal reveals on its next
    /// visit ([`Player::play_from`] a snapshot). `None`: they live in memory only.
    pub nonces: Option<NonceStore>,
}

impl Default for PlayerOptions {
    fn default() -> Self {
        PlayerOptions {
            rating_timeout: Duration::from_secs(10),
            think_time: Duration::ZERO,
            claim_wins: true,
            escrow: false,
            nonces: None,
        }
    }
}

/// Plays games for a strategy: one at a time ([`Player::play_game`], [`Player::play_from`])
/// or several at once on one connection ([`Player::add`], then [`Player::next`] in a
/// loop), each with its own state, commit–reveal turn and kept nonce.
pub struct Player<S> {
    strategy: S,
    options: PlayerOptions,
    /// The games being played, in the order they were seated (a correspondence player
    /// keeps up to 50 beside a live one: a list is searched quickly enough).
    games: Vec<Seated>,
    /// Games over, their summaries not yet handed out by `next`.
    finished: VecDeque<GameSummary>,
}

/// One game being played.
struct Seated {
    state: GameState,
    seat: Seat,
    turn: Turn,
    /// When to claim the win from the disconnected opponent (live games).
    claim_at: Option<Instant>,
    /// Over and rated with a winner: until when its `rating_update` is waited for.
    rating_by: Option<Instant>,
    /// The wait for its `rating_update` ran out.
    rating_given_up: bool,
}

/// What [`Player::next`] saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Played {
    /// A game started for this connection (`game_start`) and is now played too.
    Started(GameStart),
    /// A game ended (with its rating change, if rated and decisive and recorded in time).
    Finished(GameSummary),
    /// Anything else, for the caller: pushes (`queue_status`, `rematch_offered`,
    /// `your_move`, ...) and events of games this player does not play.
    Other(ServerMsg),
}

/// Play one game with default options.
pub async fn play_game<S: Strategy>(
    client: &Client,
    start: GameStart,
    strategy: S,
) -> Result<GameSummary, ClientError> {
    Player::new(strategy).play_game(client, start).await
}

impl<S: Strategy> Player<S> {
    pub fn new(strategy: S) -> Player<S> {
        Player::with_options(strategy, PlayerOptions::default())
    }

    pub fn with_options(strategy: S, options: PlayerOptions) -> Player<S> {
        Player {
            strategy,
            options,
            games: Vec::new(),
            finished: VecDeque::new(),
        }
    }

    pub fn strategy_mut(&mut self) -> &mut S {
        &mut self.strategy
    }

    /// The games being played, not yet handed out as finished.
    pub fn playing(&self) -> Vec<GameId> {
        self.games.iter().map(|g| g.state.game_id()).collect()
    }

    /// The states of the games being played, in the order they were seated.
    pub fn states(&self) -> impl Iterator<Item = &GameState> {
        self.games.iter().map(|g| &g.state)
    }

    /// Play the game that `start` announced until it ends.
    pub async fn play_game(
        &mut self,
        client: &Client,
        start: GameStart,
    ) -> Result<GameSummary, ClientError> {
        self.play_from(client, GameState::new(start.game, Some(start.seat)))
            .await
    }

    /// Play on from any state of a game this connection is seated in (for example a
    /// snapshot after a resumed session) until it ends. Any other game this player has
    /// (or that starts meanwhile) is played along; its summary waits for [`Player::next`].
    pub async fn play_from(
        &mut self,
        client: &Client,
        state: GameState,
    ) -> Result<GameSummary, ClientError> {
        let game_id = state.game_id();
        self.add(client, state).await?;
        loop {
            if let Some(at) = self.finished.iter().position(|s| s.game_id == game_id) {
                return Ok(self.finished.remove(at).expect("found"));
            }
            if let Played::Finished(summary) = self.next(client).await? {
                // Another game's: kept for `next`.
                self.finished.push_back(summary);
            }
        }
    }

    /// Plays `state`'s game from now on, beside the others: from `game_start`
    /// (`GameState::new`), or from a snapshot (a resumed session's, or `sync`'s), whose
    /// seat may owe a reveal of a pick kept in the nonce store. A game already played is
    /// left as it is.
    pub async fn add(&mut self, client: &Client, state: GameState) -> Result<(), ClientError> {
        let seat = state
            .seat()
            .ok_or(ClientError::InvalidUse("a spectator cannot play"))?;
        if self.find(state.game_id()).is_some() {
            return Ok(());
        }
        self.games.push(Seated {
            state,
            seat,
            turn: Turn::default(),
            claim_at: None,
            rating_by: None,
            rating_given_up: false,
        });
        let at = self.games.len() - 1;
        self.step(client, at).await
    }

    /// Waits for what comes next and plays on: each event is applied to its game (a gap
    /// resynchronises that game alone) and the game's move made if one is owed; a
    /// `game_start` seats the new game. Returns a game started or finished, or anything
    /// else that came. Fails only when the connection is gone (a refused move is logged
    /// and play goes on) or the nonce store cannot be written.
    pub async fn next(&mut self, client: &Client) -> Result<Played, ClientError> {
        loop {
            if let Some(summary) = self.finished.pop_front() {
                return Ok(Played::Finished(summary));
            }
            if let Some(summary) = self.take_finished()? {
                return Ok(Played::Finished(summary));
            }
            let timer = self
                .games
                .iter()
                .flat_map(|g| [g.claim_at, g.rating_by])
                .flatten()
                .min();
            let event = tokio::select! {
                event = client.next_event() => event.ok_or(ClientError::Closed)?,
                () = sleep_until(timer) => {
                    self.on_timers(client).await?;
                    continue;
                }
            };
            if let Some(start) = GameStart::from_msg(&event) {
                if self.find(start.game.game_id).is_none() {
                    let state = GameState::new(start.game.clone(), Some(start.seat));
                    self.add(client, state).await?;
                    return Ok(Played::Started(start));
                }
            }
            let at = message_game(&event).and_then(|id| self.find(id));
            if let Some(at) = at {
                self.on_event(client, at, &event).await?;
            }
            // Pushes about a game played here are the caller's too: an owed move (made
            // by now, unless the strategy thinks), a rematch offered or declined.
            let push = matches!(
                event,
                ServerMsg::YourMove { .. }
                    | ServerMsg::RematchOffered { .. }
                    | ServerMsg::RematchDeclined { .. }
            );
            if at.is_none() || push {
                return Ok(Played::Other(event));
            }
        }
    }

    fn find(&self, game_id: GameId) -> Option<usize> {
        self.games.iter().position(|g| g.state.game_id() == game_id)
    }

    /// An event of game `at`: applied, then the game's owed move made.
    async fn on_event(
        &mut self,
        client: &Client,
        at: usize,
        event: &ServerMsg,
    ) -> Result<(), ClientError> {
        let claim_wins = self.options.claim_wins;
        let game = &mut self.games[at];
        apply_or_resync(client, &mut game.state, event).await?;
        if let ServerMsg::Presence {
            seat: who,
            connected,
            grace_ms,
            ..
        } = event
        {
            if *who != game.seat && claim_wins {
                // A little past the grace period, so the server agrees it has run out.
                let wait = Duration::from_millis(*grace_ms) + Duration::from_millis(250);
                game.claim_at = (!connected).then(|| Instant::now() + wait);
            }
        }
        self.step(client, at).await
    }

    /// Game `at` does what its state asks, or, over, starts waiting for its rating.
    async fn step(&mut self, client: &Client, at: usize) -> Result<(), ClientError> {
        let game = &mut self.games[at];
        if game.state.is_over() {
            game.claim_at = None;
            let decisive = game.state.result().is_some_and(|r| r.winner.is_some());
            let wants_rating = game.state.rated_result() == Some(true)
                && decisive
                && game.state.ratings().is_none();
            if wants_rating && game.rating_by.is_none() && !game.rating_given_up {
                game.rating_by = Some(Instant::now() + self.options.rating_timeout);
            }
            return Ok(());
        }
        let (strategy, options) = (&mut self.strategy, &self.options);
        act(strategy, options, client, &game.state, &mut game.turn).await
    }

    /// Claims the wins due, and gives up waiting for ratings that did not come in time.
    async fn on_timers(&mut self, client: &Client) -> Result<(), ClientError> {
        let now = Instant::now();
        for game in &mut self.games {
            if game.claim_at.is_some_and(|at| at <= now) {
                game.claim_at = None;
                if let Err(err) = client.claim_win(game.state.game_id()).await {
                    non_fatal(err, "claim_win")?;
                }
            }
            if game.rating_by.is_some_and(|at| at <= now) {
                tracing::warn!(game = %game.state.game_id(), "no rating_update in time");
                game.rating_by = None;
                game.rating_given_up = true;
            }
        }
        Ok(())
    }

    /// Removes the first game that is over and waits for nothing more; its summary.
    fn take_finished(&mut self) -> Result<Option<GameSummary>, ClientError> {
        let done = self.games.iter().position(|g| {
            g.state.is_over() && (g.rating_by.is_none() || g.state.ratings().is_some())
        });
        let Some(at) = done else {
            return Ok(None);
        };
        let game = self.games.remove(at);
        if let Some(store) = &self.options.nonces {
            // Over: whatever was kept for it is of no use any more.
            store.remove(game.state.game_id())?;
        }
        Ok(Some(summary(&game.state, game.seat)))
    }
}

/// Do what the state asks of this seat: commit a pick, or reveal it.
async fn act<S: Strategy>(
    strategy: &mut S,
    options: &PlayerOptions,
    client: &Client,
    state: &GameState,
    turn: &mut Turn,
) -> Result<(), ClientError> {
    let (Some(seat), Some(view)) = (state.seat(), state.view()) else {
        return Ok(());
    };
    let round = state.round();
    // seq 0: no round has started yet.
    let started = state.seq() > 0;
    match state.phase() {
        Phase::Commit if started && !state.committed(seat) && turn.committed != Some(round) => {
            if !options.think_time.is_zero() {
                tokio::time::sleep(options.think_time).await;
            }
            let pick = strategy.pick(&view);
            let (sealed, commitment) = SealedPick::new(state.game_id(), round, seat, pick);
            turn.committed = Some(round);
            turn.sealed = Some(sealed);
            let game_id = state.game_id();
            let store = options.nonces.as_ref().filter(|_| !options.escrow);
            if let Some(store) = store {
                // On disk before the server can hear of the commitment.
                store.save(game_id, &sealed)?;
            }
            let sent = if options.escrow {
                // The server reveals for this seat: nothing is left to send this round.
                turn.revealed = Some(round);
                client
                    .commit_escrowed(game_id, round, commitment, sealed.pick, sealed.nonce)
                    .await
            } else {
                client.commit(game_id, round, commitment).await
            };
            if let Err(err) = sent {
                non_fatal(err, "commit")?;
            }
        }
        Phase::Reveal if !state.revealed(seat) && turn.revealed != Some(round) => {
            let game_id = state.game_id();
            let store = options.nonces.as_ref();
            let kept = match store {
                Some(store) if turn.sealed.is_none_or(|s| s.round != round) => {
                    store.load(game_id)?
                }
                _ => None,
            };
            // Committed by an earlier connection (or process): kept on disk, or lost.
            let Some(sealed) = turn.sealed.or(kept).filter(|s| s.round == round) else {
                return Ok(());
            };
            turn.revealed = Some(round);
            let reveal = client.reveal(game_id, round, sealed.pick, sealed.nonce);
            if let Err(err) = reveal.await {
                non_fatal(err, "reveal")?;
            }
            if let Some(store) = store {
                // Acknowledged (or refused for good): the next commit replaces it anyway.
                store.remove(game_id)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// What this seat has sent in the current game.
#[derive(Debug, Default)]
struct Turn {
    committed: Option<u32>,
    revealed: Option<u32>,
    sealed: Option<SealedPick>,
}

/// After a decisive rated game has ended, read events until its `rating_update` (or
/// until `timeout`; then the state simply has no ratings). Does nothing for other games.
pub async fn wait_for_rating(
    client: &Client,
    state: &mut GameState,
    timeout: Duration,
) -> Result<(), ClientError> {
    let decisive = state.result().is_some_and(|r| r.winner.is_some());
    if state.rated_result() != Some(true) || !decisive {
        return Ok(());
    }
    let deadline = Instant::now() + timeout;
    while state.ratings().is_none() {
        match tokio::time::timeout_at(deadline, client.next_event()).await {
            Ok(Some(event)) => apply_or_resync(client, state, &event).await?,
            Ok(None) => return Err(ClientError::Closed),
            Err(_) => {
                tracing::warn!(game = %state.game_id(), "no rating_update in time");
                break;
            }
        }
    }
    Ok(())
}

/// Apply an event; after a gap, fetch a snapshot and apply the event again.
pub async fn apply_or_resync(
    client: &Client,
    state: &mut GameState,
    event: &ServerMsg,
) -> Result<(), ClientError> {
    if let Applied::Gap { expected, got } = state.apply(event) {
        tracing::debug!(expected, got, "missed game events; resyncing");
        let (snapshot, seat) = client.sync(state.game_id()).await?;
        state.reset(snapshot, seat);
        state.apply(event);
    }
    Ok(())
}

/// A refusal of one move does not end the game (the opponent may have resigned at the
/// same moment); a dead connection does.
fn non_fatal(err: ClientError, what: &str) -> Result<(), ClientError> {
    match err {
        ClientError::Server { code, message } => {
            tracing::warn!(%code, %message, "{what} refused");
            Ok(())
        }
        other => Err(other),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn summary(state: &GameState, seat: Seat) -> GameSummary {
    let rating = state.ratings().map(|r| *r.get(seat));
    GameSummary {
        game_id: state.game_id(),
        seat,
        opponent: state.info().players.get(seat.other()).name.clone(),
        // A snapshot could say `over` before naming a result; nobody is blamed then.
        result: state.result().unwrap_or(GameResult {
            winner: None,
            reason: EndReason::ServerAborted,
        }),
        rounds: state.history().len() as u32,
        rated: state.rated_result().unwrap_or(false),
        rating,
        rating_after: rating.map(|r| r.after),
    }
}
