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
//! - `timer`: a deadline kept from one turn of the session's loop to the next.

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
    last_event: Instant,
    _in_game: Gauge,
}

/// What the player will do next, and when.
enum Action {
    Join,
    Commit,
    Reveal,
    ListSeeks,
}

pub struct Player {
    ctx: Shared,
    index: u64,
    role: Role,
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
        let stalled = game.last_event + Duration::from_secs(60).max(think);
        Some(game.rating_deadline.unwrap_or(stalled))
    }

    fn next_action(
        &mut self,
        pending: &[(RequestId, Pending)],
        lobby_next: Instant,
    ) -> Option<(Action, Instant)> {
        let now = Instant::now();
        let Some(game) = self.game.as_mut() else {
            return match self.role {
                Role::Playing if pending.is_empty() && !self.queued => Some((Action::Join, now)),
                Role::Playing => None,
                Role::Lobby if pending.is_empty() && self.ctx.style.lobby_poll.is_some() => {
                    Some((Action::ListSeeks, lobby_next))
                }
                Role::Lobby => None,
            };
        };
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
                    })
                    .await?;
                Ok((id, Pending::Commit(sent)))
            }
            Action::Reveal => {
                let game = self.game.as_mut().expect("seated");
                let sealed = game.sealed.expect("a sealed pick");
                let game_id = game.state.game_id();
                game.revealed = Some(sealed.round);
                self.ctx.reveals.sent(game_id, sealed.round);
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

    async fn handle(
        &mut self,
        conn: &mut Conn,
        msg: ServerMsg,
        pending: &mut Vec<(RequestId, Pending)>,
    ) -> Result<(), ConnError> {
        let stats = &self.ctx.stats;
        let id = msg.reply_id();
        let waiting = id.and_then(|id| {
            let at = pending.iter().position(|(p, _)| *p == id)?;
            Some(pending.swap_remove(at).1)
        });
        match (&msg, waiting) {
            (ServerMsg::Error { code, .. }, Some(what))
                if crossed_the_end(*code, what, self.game.as_ref().map(|g| &g.state)) =>
            {
                stats.moves_after_game_over.fetch_add(1, Relaxed);
                Ok(())
            }
            (ServerMsg::Error { code, .. }, Some(what)) => {
                stats.error(format!("{}: server error {code}", what.name()));
                Ok(())
            }
            (ServerMsg::Error { code, .. }, None) => {
                stats.error(format!("server error {code} (no request)"));
                Ok(())
            }
            (ServerMsg::Queued { .. }, _) => {
                self.queued = true;
                Ok(())
            }
            (ServerMsg::Ok { .. }, Some(Pending::Commit(sent))) => {
                stats.commit_ack.record(sent.elapsed());
                Ok(())
            }
            (ServerMsg::Notice { code, .. }, _) => {
                stats.error(format!("notice {code}"));
                Ok(())
            }
            (ServerMsg::GameStart { game, seat }, _) => {
                if self.game.is_some() {
                    stats.error("game_start while seated");
                }
                let state = GameState::new(game.clone(), Some(*seat));
                self.seat_in(state, *seat);
                Ok(())
            }
            // Seated while the connection was down (paired as it dropped, so the
            // `game_start` went to the old socket): the resumed session's snapshot says so.
            (
                ServerMsg::Snapshot {
                    id: None,
                    snapshot,
                    seat: Some(seat),
                },
                _,
            ) if self.game.is_none() => {
                let state = GameState::from_snapshot(snapshot.clone(), Some(*seat));
                self.seat_in(state, *seat);
                Ok(())
            }
            _ => self.apply(conn, &msg, pending).await,
        }
    }

    /// Apply a game message to the seated game, timing results and ending games.
    async fn apply(
        &mut self,
        conn: &mut Conn,
        msg: &ServerMsg,
        pending: &mut Vec<(RequestId, Pending)>,
    ) -> Result<(), ConnError> {
        let Some(game) = self.game.as_mut() else {
            return Ok(());
        };
        match game.state.apply(msg) {
            Applied::Applied => game.last_event = Instant::now(),
            Applied::Gap { .. } => {
                self.ctx.stats.error("event gap (player)");
                let game_id = game.state.game_id();
                let id = conn.send(|id| ClientMsg::Sync { id, game_id }).await?;
                pending.push((id, Pending::Sync));
                return Ok(());
            }
            Applied::Stale | Applied::Ignored => return Ok(()),
        }
        let stats = &self.ctx.stats;
        match msg {
            ServerMsg::RoundResult {
                game_id, record, ..
            } => {
                // Kept for the fan-out timed from the players' result (`FanoutRound`).
                let now = Instant::now();
                if let Some(sent) = self.ctx.reveals.result_arrived(*game_id, record.round, now) {
                    stats.result.record(now.saturating_duration_since(sent));
                }
                self.ctx.fanout.player_result(*game_id, record.round, now);
                if game.seat == Seat::One {
                    stats.rounds.fetch_add(1, Relaxed);
                }
            }
            ServerMsg::GameOver { result, rated, .. } => {
                let increment = game.state.info().time_control.increment_ms;
                match result.reason {
                    EndReason::Edge => {}
                    EndReason::Time if can_run_out(self.ctx.style.think, increment) => {
                        if game.seat == Seat::One {
                            stats.games_lost_on_time.fetch_add(1, Relaxed);
                        }
                    }
                    reason => stats.error(format!("game over by {reason:?}")),
                }
                if game.seat == Seat::One {
                    stats.games.fetch_add(1, Relaxed);
                }
                if *rated && result.winner.is_some() {
                    game.rating_deadline = Some(Instant::now() + RATING_TIMEOUT);
                } else {
                    self.game = None;
                }
            }
            ServerMsg::RatingUpdate { .. } => self.game = None,
            _ => {}
        }
        Ok(())
    }

    fn seat_in(&mut self, state: GameState, seat: Seat) {
        self.queued = false;
        self.game = Some(Seated {
            state,
            seat,
            think_until: None,
            committed: None,
            revealed: None,
            sealed: None,
            rating_deadline: None,
            last_event: Instant::now(),
            _in_game: Gauge::up(self.ctx.stats.clone(), |s| &s.in_game),
        });
    }

    fn leave_game(&mut self) {
        self.game = None;
    }
}

/// Whether an error answering a move means only that the move crossed its game's end on
/// the wire (the opponent's clock ran out as it was sent, say). The end is queued to the
/// connection before the answer, so the player has seen it by then: a `game_over` error
/// for a game still live in the player's view is the server's error.
fn crossed_the_end(code: ErrorCode, what: Pending, game: Option<&GameState>) -> bool {
    code == ErrorCode::GameOver
        && matches!(what, Pending::Commit(_) | Pending::Reveal)
        && game.is_none_or(GameState::is_over)
}

/// Whether players thinking `think` on average (0.5–1.5 times it, see `Ctx::think`) can
/// run their banks out with this increment: each round costs a bank its thinking and gives
/// back the increment, so only thinking longer than the increment drains it. Otherwise a
/// game lost on time means the server charged the clocks for time the player did not take.
fn can_run_out(think: Duration, increment_ms: u64) -> bool {
    think.mul_f64(1.5) > Duration::from_millis(increment_ms)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_thinking_longer_than_the_increment_can_run_a_bank_out() {
        // The soak's 4 s against blitz's 2 s increment: long games may end on time.
        assert!(can_run_out(Duration::from_secs(4), 2_000));
        // The CI smoke run's 100 ms: a time loss there is an error.
        assert!(!can_run_out(Duration::from_millis(100), 2_000));
        // The longest think is 1.5 times the mean: 1.4 s × 1.5 = 2.1 s outruns a 2 s
        // increment, 1.3 s × 1.5 = 1.95 s does not.
        assert!(can_run_out(Duration::from_millis(1_400), 2_000));
        assert!(!can_run_out(Duration::from_millis(1_300), 2_000));
    }

    #[test]
    fn only_a_game_over_error_for_a_game_seen_ending_is_a_move_crossing_the_end() {
        use elementals_client::protocol::messages::{
            Clocks, GameId, GameInfo, GameResult, PlayerInfo, SeatPair,
        };
        use elementals_client::protocol::{TimeControl, Variant};
        let player = |name: &str| PlayerInfo {
            name: name.into(),
            rating: 1.0,
            guest: false,
            bot: false,
        };
        let game_id = GameId::new_random_from([7; 16]);
        let mut live = GameState::new(
            GameInfo {
                game_id,
                variant: Variant::CLASSIC,
                time_control: TimeControl::BLITZ,
                rated: true,
                players: SeatPair::new(player("ann"), player("bob")),
                started_at: 0,
            },
            Some(Seat::One),
        );
        let commit = Pending::Commit(Instant::now());
        // The game is live in the player's view: the server is wrong to say it is over.
        assert!(!crossed_the_end(ErrorCode::GameOver, commit, Some(&live)));
        // Other errors, and errors to other requests, stay errors.
        assert!(!crossed_the_end(ErrorCode::RateLimited, commit, None));
        assert!(!crossed_the_end(ErrorCode::GameOver, Pending::Join, None));
        // Seen ending (kept while a rating is awaited), or already left: a crossing.
        let over = ServerMsg::GameOver {
            game_id,
            seq: 1,
            result: GameResult {
                winner: Some(Seat::Two),
                reason: EndReason::Time,
            },
            rated: true,
            clocks: Clocks {
                one_ms: 0,
                two_ms: 900,
                running: SeatPair::new(false, false),
            },
        };
        assert_eq!(live.apply(&over), Applied::Applied);
        assert!(crossed_the_end(ErrorCode::GameOver, commit, Some(&live)));
        assert!(crossed_the_end(ErrorCode::GameOver, Pending::Reveal, None));
    }
}
