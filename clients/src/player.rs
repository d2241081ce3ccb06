//! The player driver: plays one game to its end for a [`Strategy`], doing commit–reveal
//! in every round, and reports the result and the rating change.
//!
//! The driver is state-driven rather than event-driven: after every event it looks at
//! the [`GameState`] and does what the state asks (commit if this seat has not, reveal if
//! the round is in its reveal phase and the pick is still unrevealed). So a resync from a
//! snapshot, or a resumed session, simply continues.

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
use crate::state::{Applied, GameState};
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

/// Plays games for a strategy.
pub struct Player<S> {
    strategy: S,
    options: PlayerOptions,
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
        Player { strategy, options }
    }

    pub fn strategy_mut(&mut self) -> &mut S {
        &mut self.strategy
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
    /// snapshot after a resumed session).
    pub async fn play_from(
        &mut self,
        client: &Client,
        mut state: GameState,
    ) -> Result<GameSummary, ClientError> {
        let seat = state
            .seat()
            .ok_or(ClientError::InvalidUse("a spectator cannot play"))?;
        let mut turn = Turn::default();
        let mut claim_at: Option<Instant> = None;
        while !state.is_over() {
            self.act(client, &state, &mut turn).await?;
            let event = tokio::select! {
                event = client.next_event() => event.ok_or(ClientError::Closed)?,
                () = sleep_until(claim_at) => {
                    claim_at = None;
                    if let Err(err) = client.claim_win(state.game_id()).await {
                        non_fatal(err, "claim_win")?;
                    }
                    continue;
                }
            };
            apply_or_resync(client, &mut state, &event).await?;
            if let ServerMsg::Presence {
                seat: who,
                connected,
                grace_ms,
                game_id,
                ..
            } = &event
            {
                if *game_id == state.game_id() && *who != seat && self.options.claim_wins {
                    // A little past the grace period, so the server agrees it has run out.
                    let wait = Duration::from_millis(*grace_ms) + Duration::from_millis(250);
                    claim_at = (!connected).then(|| Instant::now() + wait);
                }
            }
        }
        if let Some(store) = &self.options.nonces {
            // Over: whatever was kept for it is of no use any more.
            store.remove(state.game_id())?;
        }
        wait_for_rating(client, &mut state, self.options.rating_timeout).await?;
        Ok(summary(&state, seat))
    }

    /// Do what the state asks of this seat: commit a pick, or reveal it.
    async fn act(
        &mut self,
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
                if !self.options.think_time.is_zero() {
                    tokio::time::sleep(self.options.think_time).await;
                }
                let pick = self.strategy.pick(&view);
                let (sealed, commitment) = SealedPick::new(state.game_id(), round, seat, pick);
                turn.committed = Some(round);
                turn.sealed = Some(sealed);
                let game_id = state.game_id();
                let store = self
                    .options
                    .nonces
                    .as_ref()
                    .filter(|_| !self.options.escrow);
                if let Some(store) = store {
                    // On disk before the server can hear of the commitment.
                    store.save(game_id, &sealed)?;
                }
                let sent = if self.options.escrow {
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
                let store = self.options.nonces.as_ref();
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
