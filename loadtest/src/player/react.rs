//! What a player does with what the server sends: answers matched to its requests, games
//! seated and left, a game's events applied to its state, results timed, ends judged.

use super::*;

impl Player {
    pub(super) async fn handle(
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
                match self.ctx.failover {
                    true => self.after_refusal(what, *code),
                    false => Ok(()),
                }
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
            Applied::Applied => {
                game.last_event = Instant::now();
                match msg {
                    ServerMsg::Snapshot { .. } => {
                        game.resync_at = None;
                        game.resyncing_since = None;
                        game.snapshot_since_result = true;
                        // A round voided by a restart or a takeover is played again under
                        // the same number: what the game holds of this seat decides.
                        if !game.state.committed(game.seat) {
                            (game.committed, game.think_until) = (None, None);
                        }
                        if !game.state.revealed(game.seat) {
                            game.revealed = None;
                        }
                    }
                    ServerMsg::RoundResult { .. } => game.snapshot_since_result = false,
                    _ => {}
                }
            }
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
                self.ctx.round_acked(*game_id, record.round);
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

    pub(super) fn seat_in(&mut self, state: GameState, seat: Seat) {
        self.queued = false;
        self.game = Some(Seated {
            state,
            seat,
            think_until: None,
            committed: None,
            revealed: None,
            sealed: None,
            rating_deadline: None,
            resync_at: None,
            resyncing_since: None,
            snapshot_since_result: false,
            last_event: Instant::now(),
            _in_game: Gauge::up(self.ctx.stats.clone(), |s| &s.in_game),
        });
    }

    pub(super) fn leave_game(&mut self) {
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
