//! A simulated player: signs in, queues in a pool and plays whole games with real
//! commit–reveal at a think time, again and again until the run stops; or, in the lobby
//! role, stays signed in and now and then lists the open seeks.
//!
//! One task per player owns its connection. Like the client library's `Player`, it is
//! state-driven: after every event it asks the game's state what this seat owes (a
//! commit after thinking, a reveal at once), so a resync or a resumed session simply
//! continues. Each request is timed from the instant it is written.
//!
//! - `sign_in`: signing in, first and again after a storm, with the protocol's retries.
//! - `react`: what it does with each message the server sends.
//! - `timer`: a deadline kept from one turn of the session's loop to the next.

mod failover;
mod react;
mod sign_in;
mod timer;

use std::pin::pin;
use std::sync::atomic::Ordering::Relaxed;

use elementals_client::protocol::messages::{EndReason, Phase, RequestId};
use elementals_client::protocol::{ClientMsg, ErrorCode, Seat, ServerMsg};
use elementals_client::{Applied, GameState, Random, SealedPick, Strategy};
use tokio::sync::watch;
use tokio::time::{Duration, Instant};

use crate::conn::{Conn, ConnError, Pacer};
use crate::ctx::{jittered, Shared, Storm};
use crate::stats::Gauge;

use timer::Timer;

/// How long a player waits for `rating_update` after a rated game it did not draw.
const RATING_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Queue and play games.
    Playing,
    /// Stay signed in without queueing.
    Lobby,
}

/// Why a session (one connection) ended without an error.
enum Exit {
    Stop,
    Storm,
}

/// A request waiting for its reply.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Commit(Instant),
    Reveal,
    Join,
    Sync,
    ListSeeks,
}

impl Pending {
    fn name(self) -> &'static str {
        match self {
            Pending::Commit(_) => "commit",
            Pending::Reveal => "reveal",
            Pending::Join => "join_pool",
            Pending::Sync => "sync",
            Pending::ListSeeks => "list_seeks",
        }
    }
}

/// The one game this player is seated in, and what it has sent in it.
struct Seated {
    state: GameState,
    seat: Seat,
    /// When this seat may commit in the current round (set once thinking starts).
    think_until: Option<(u32, Instant)>,
    committed: Option<u32>,
    revealed: Option<u32>,
    sealed: Option<SealedPick>,
    /// After `game_over` of a rated decisive game: wait for `rating_update` until then.
    rating_deadline: Option<Instant>,
    /// With `--kill-node`: a move or `sync` of this game was refused (its node is gone,
    /// or the game came back there with the round voided): ask for the game again then.
    resync_at: Option<Instant>,
    /// Since when the game has been asked for again without a snapshot.
    resyncing_since: Option<Instant>,
    /// A snapshot came since the last round's result.
    snapshot_since_result: bool,
    last_event: Instant,
    _in_game: Gauge,
}

/// What the player will do next, and when.
enum Action {
    Join,
    Commit,
    Reveal,
    ListSeeks,
    Sync,
}

pub struct Player {
    ctx: Shared,
    index: u64,
    role: Role,
    /// Servers on from its own (`Ctx::server_for`): one more after each lost node.
    hop: u32,
    /// With `--kill-node`: no `join_pool` before then (`failover.rs`).
    join_after: Option<Instant>,
    token: Option<String>,
    /// Waiting in the pool (`queued` received, no `game_start` yet).
    queued: bool,
    game: Option<Seated>,
    strategy: Random,
}

impl Player {
    pub fn new(ctx: Shared, index: u64, role: Role) -> Player {
        Player {
            ctx,
            index,
            role,
            hop: 0,
            join_after: None,
            token: None,
            queued: false,
            game: None,
            strategy: Random::new(),
        }
    }

    /// Play until the run stops, reconnecting when a storm says so.
    pub async fn run(mut self) {
        let stats = self.ctx.stats.clone();
        let mut resumed_from: Option<Instant> = None;
        loop {
            let conn = match self.sign_in_with_retries(resumed_from).await {
                Ok(conn) => conn,
                Err(e) => {
                    if !self.ctx.stop.is_cancelled() {
                        stats.error(e.kind("sign in"));
                    }
                    return;
                }
            };
            stats.signed_in();
            let exit = self.session(conn).await;
            stats.signed_out();
            match exit {
                Ok(Exit::Stop) => return,
                Ok(Exit::Storm) => {}
                Err(ConnError::Closed) if self.ctx.failover && !self.ctx.stop.is_cancelled() => {
                    // Its node died: to the next, to resume there.
                    tracing::debug!(player = self.index, game = ?self.game.as_ref().map(|g| g.state.game_id()), "node lost");
                    stats.failover_reconnects.fetch_add(1, Relaxed);
                    self.hop += 1;
                    resumed_from = Some(Instant::now());
                    continue;
                }
                // Resume on the same node, to hear where this player is seated.
                Err(ConnError::Reseat) if !self.ctx.stop.is_cancelled() => {
                    tracing::debug!(player = self.index, game = ?self.game.as_ref().map(|g| g.state.game_id()), "resuming to find its game");
                    resumed_from = Some(Instant::now());
                    continue;
                }
                Err(e) => {
                    if !self.ctx.stop.is_cancelled() {
                        stats.error(e.kind("playing"));
                    }
                    return;
                }
            }
            resumed_from = match self.wait_for_return().await {
                Some(at) => Some(at),
                None => return,
            };
        }
    }

    /// One connection's life: act and react until the run stops or a storm drops it.
    ///
    /// The loop runs once per frame received, so what it waits on is kept from one turn
    /// to the next rather than made anew each time: the stop and storm waits stay
    /// registered, the two timers are reset only when their deadlines move, and an
    /// action already due is performed without a timer: made anew every frame, they
    /// would be a large share of the load generator's CPU at saturation.
    async fn session(&mut self, mut conn: Conn) -> Result<Exit, ConnError> {
        let mut pacer = Pacer::new(conn.rate);
        let mut pending: Vec<(RequestId, Pending)> = Vec::new();
        let mut storm = self.ctx.storm.clone();
        // Only a change after this session began concerns it (a session begun by the
        // return itself must not take that return for a new storm).
        storm.borrow_and_update();
        let mut storm_change = pin!(next_storm(storm));
        let stop = self.ctx.stop.clone();
        let mut stopped = pin!(stop.cancelled());
        let mut lobby_next = Instant::now() + self.lobby_poll().unwrap_or_default();
        let mut act = Timer::new();
        let mut stall = Timer::new();
        loop {
            let next = self.next_action(&pending, lobby_next);
            let at = next.as_ref().map(|(_, at)| pacer.earliest(*at));
            // An action already due goes out now, as the biased `select!` below would
            // send it unless the run were stopping (a storm is seen on the next turn).
            let due = at.is_some_and(|at| at <= Instant::now()) && !stop.is_cancelled();
            if !due {
                act.aim(at, false);
            }
            // The stall deadline moves later with every event: the timer is not reset
            // for that, but checks the deadline again when it fires.
            stall.aim(self.stall_deadline(), true);
            let mut perform = due;
            if !due {
                tokio::select! {
                    biased;
                    () = &mut stopped => {
                        conn.close().await;
                        return Ok(Exit::Stop);
                    }
                    (storm, now) = &mut storm_change => {
                        // A `Return` seen here means the `Drop` before it came while
                        // this player was busy and was missed: it drops now all the same.
                        if now != Storm::Calm {
                            // Dropped, not closed: as a network failure or a restart looks.
                            drop(conn);
                            return Ok(Exit::Storm);
                        }
                        storm_change.set(next_storm(storm));
                    }
                    () = act.fired() => perform = true,
                    () = stall.fired() => {
                        if self.stall_deadline().is_some_and(|at| at <= Instant::now()) {
                            let waiting_rating = self.game.as_ref().is_some_and(|g| g.rating_deadline.is_some());
                            if self.ctx.failover && !waiting_rating {
                                // PROTOCOL.md: a game gone quiet may have lost its node.
                                self.ctx.stats.quiet_resumes.fetch_add(1, Relaxed);
                                return Err(ConnError::Reseat);
                            }
                            self.ctx.stats.error(if waiting_rating {
                                "playing: no rating_update within 15 s"
                            } else {
                                "playing: no game event for 60 s"
                            });
                            self.leave_game();
                        }
                    }
                    msg = conn.recv() => {
                        let msg = msg?;
                        self.handle(&mut conn, msg, &mut pending).await?;
                    }
                }
            }
            if perform {
                let (action, _) = next.expect("an action is due");
                pacer.sent();
                let sent = self.perform(&mut conn, action).await?;
                if matches!(sent.1, Pending::ListSeeks) {
                    lobby_next = Instant::now() + self.lobby_poll().unwrap_or_default();
                }
                pending.push(sent);
            }
        }
    }

    fn lobby_poll(&self) -> Option<Duration> {
        self.ctx.style.lobby_poll.map(jittered)
    }

    fn stall_deadline(&self) -> Option<Instant> {
        let game = self.game.as_ref()?;
        let think = self.ctx.style.think * 2;
        // After a snapshot the game may be held until its other player is back too: a
        // resume then would only make this one leave again.
        let quiet = match self.ctx.failover && !game.snapshot_since_result {
            true => failover::QUIET.max(think + failover::QUIET / 2),
            false => Duration::from_secs(60).max(think),
        };
        Some(game.rating_deadline.unwrap_or(game.last_event + quiet))
    }

    fn next_action(
        &mut self,
        pending: &[(RequestId, Pending)],
        lobby_next: Instant,
    ) -> Option<(Action, Instant)> {
        let now = Instant::now();
        let Some(game) = self.game.as_mut() else {
            return match self.role {
                Role::Playing if pending.is_empty() && !self.queued => {
                    Some((Action::Join, self.join_after.map_or(now, |at| at.max(now))))
                }
                Role::Playing => None,
                Role::Lobby if pending.is_empty() && self.ctx.style.lobby_poll.is_some() => {
                    Some((Action::ListSeeks, lobby_next))
                }
                Role::Lobby => None,
            };
        };
        if let Some(at) = game.resync_at {
            let syncing = pending.iter().any(|(_, p)| matches!(p, Pending::Sync));
            return (!syncing).then_some((Action::Sync, at));
        }
        let state = &game.state;
        let round = state.round();
        match state.phase() {
            Phase::Commit
                if state.seq() > 0
                    && !state.committed(game.seat)
                    && game.committed != Some(round) =>
            {
                let until = match game.think_until {
                    Some((r, until)) if r == round => until,
                    _ => {
                        let until = now + self.ctx.think();
                        game.think_until = Some((round, until));
                        until
                    }
                };
                Some((Action::Commit, until))
            }
            Phase::Reveal
                if !state.revealed(game.seat)
                    && game.revealed != Some(round)
                    && game.sealed.is_some_and(|s| s.round == round) =>
            {
                Some((Action::Reveal, now))
            }
            _ => None,
        }
    }

    async fn perform(
        &mut self,
        conn: &mut Conn,
        action: Action,
    ) -> Result<(RequestId, Pending), ConnError> {
        match action {
            Action::Join => {
                let style = &self.ctx.style;
                let (variant, time_control) = (style.variant, style.preset.clone());
                let id = conn
                    .send(|id| ClientMsg::JoinPool {
                        id,
                        variant,
                        time_control,
                        rated: true,
                    })
                    .await?;
                Ok((id, Pending::Join))
            }
            Action::ListSeeks => {
                let id = conn.send(|id| ClientMsg::ListSeeks { id }).await?;
                Ok((id, Pending::ListSeeks))
            }
            Action::Sync => {
                let game = self.game.as_mut().expect("seated");
                game.resync_at = None;
                game.resyncing_since.get_or_insert_with(Instant::now);
                let game_id = game.state.game_id();
                let id = conn.send(|id| ClientMsg::Sync { id, game_id }).await?;
                Ok((id, Pending::Sync))
            }
            Action::Commit => {
                let game = self.game.as_mut().expect("seated");
                let view = game.state.view().expect("a player's view");
                let pick = self.strategy.pick(&view);
                let (game_id, round) = (game.state.game_id(), game.state.round());
                let (sealed, commitment) = SealedPick::new(game_id, round, game.seat, pick);
                game.committed = Some(round);
                game.sealed = Some(sealed);
                let sent = Instant::now();
                let id = conn
                    .send(|id| ClientMsg::Commit {
                        id,
                        game_id,
                        round,
                        commitment: commitment.to_vec(),
                        pick: None,
                        nonce: None,
                    })
                    .await?;
                Ok((id, Pending::Commit(sent)))
            }
            Action::Reveal => {
                let game = self.game.as_mut().expect("seated");
                let sealed = game.sealed.expect("a sealed pick");
                let game_id = game.state.game_id();
                game.revealed = Some(sealed.round);
                let after_other = game.state.revealed(game.seat.other());
                self.ctx.reveals.sent(game_id, sealed.round, after_other);
                let id = conn
                    .send(|id| ClientMsg::Reveal {
                        id,
                        game_id,
                        round: sealed.round,
                        pick: sealed.pick,
                        nonce: sealed.nonce.to_vec(),
                    })
                    .await?;
                Ok((id, Pending::Reveal))
            }
        }
    }
}

/// The storm signal's next change, with the receiver to wait for the one after. A
/// signal whose sender is gone never changes again.
async fn next_storm(mut storm: watch::Receiver<Storm>) -> (watch::Receiver<Storm>, Storm) {
    if storm.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
    let now = *storm.borrow_and_update();
    (storm, now)
}
