//! Deadlines and the game's end: the next instant something happens by itself, a missed
//! deadline settled (`tick`, by the rules in `state.rs`), and `finish`, which stops the
//! clocks, builds the game's record and logs and publishes its end.

use std::sync::Arc;
use std::time::Instant;

use elementals_protocol::messages::{EndReason, GameResult, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;

use super::GameState;
use crate::record::{GameRecord, LogEntry};

impl GameState {
    /// The next instant at which something happens by itself, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.record.is_some() || self.stalled {
            return None;
        }
        if self.hold.is_some() {
            return self.hold;
        }
        if let Some(window_end) = self.first_commit_deadline() {
            return Some(window_end);
        }
        Seat::BOTH
            .into_iter()
            .filter_map(|s| self.seat_deadline(s))
            .min()
    }

    /// `next_deadline` in Unix milliseconds: when a game that holds no task must be woken.
    /// Hibernation's index of deadlines is to read it; only tests do so far.
    #[allow(dead_code)]
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.next_deadline().map(|at| self.wall_ms(at))
    }

    /// Settles the earliest deadline if it has passed by `now` (the game then ends).
    pub fn tick(&mut self, now: Instant, out: &mut Vec<ServerMsg>) {
        if self.stalled {
            return;
        }
        if let Some(until) = self.hold {
            if now < until {
                return;
            }
            // The hold ran out; a deadline that passed since then is settled below.
            self.release(until, out);
        }
        let Some(due) = self.next_deadline() else {
            return;
        };
        if now < due {
            return;
        }
        // Charge only up to the deadline: a late wake-up must not change who ran out first.
        self.banks.charge(due);
        if self.in_first_commit_window() {
            return self.finish(due, None, EndReason::Aborted, out);
        }
        let missed: Vec<Seat> = Seat::BOTH
            .into_iter()
            .filter(|&s| self.seat_deadline(s) == Some(due))
            .collect();
        let reason = |seat| {
            if self.banks.left_at(seat, due).is_zero() {
                EndReason::Time
            } else {
                EndReason::NoReveal
            }
        };
        let (winner, reason) = match missed.as_slice() {
            [seat] => (Some(seat.other()), reason(*seat)),
            _ if missed.iter().all(|&s| reason(s) == EndReason::Time) => (None, EndReason::Time),
            _ => (None, EndReason::NoReveal),
        };
        self.finish(due, winner, reason, out);
    }

    /// When `seat` loses if it does not act (ignoring the first-commit window).
    pub(super) fn seat_deadline(&self, seat: Seat) -> Option<Instant> {
        let bank = self.banks.expiry(seat)?;
        match self.reveal_by {
            Some(window) if self.phase == Phase::Reveal => Some(bank.min(window)),
            _ => Some(bank),
        }
    }

    /// Ends the game at `at`: stops the clocks, builds the record, pushes `GameOver`.
    pub(super) fn finish(
        &mut self,
        at: Instant,
        winner: Option<Seat>,
        reason: EndReason,
        out: &mut Vec<ServerMsg>,
    ) {
        self.phase = Phase::Over;
        self.reveal_by = None;
        self.banks.set_running(SeatPair::new(false, false), at);
        self.hold = None;
        let result = GameResult { winner, reason };
        let (ended_at, final_clocks_ms) = (self.wall_ms(at), self.banks.ms_at(at));
        let record = GameRecord {
            game_id: self.info.game_id,
            variant: self.info.variant,
            time_control: self.info.time_control,
            rated: self.info.rated,
            players: self.players.clone(),
            started_at: self.info.started_at,
            ended_at,
            result,
            // Moved, not copied: from here on `rounds()` reads them from the record.
            rounds: std::mem::take(&mut self.rounds),
            final_clocks_ms,
        };
        let rated = record.changes_ratings();
        self.record = Some(Arc::new(record));
        out.push(ServerMsg::GameOver {
            game_id: self.info.game_id,
            seq: self.next_seq(),
            result,
            rated,
            clocks: self.banks.wire(at),
        });
        self.log_step(
            at,
            LogEntry::End {
                result,
                ended_at,
                final_clocks_ms,
            },
        );
    }

    /// Ends the game drawn (`MaxRounds`) if it has resolved as many rounds as it may;
    /// returns whether it did. Also for a restored game, whose bound may have been lowered
    /// since its rounds were played.
    pub fn end_at_max_rounds(&mut self, now: Instant, out: &mut Vec<ServerMsg>) -> bool {
        if self.record.is_some() || (self.rounds.len() as u64) < u64::from(self.timing.max_rounds) {
            return false;
        }
        self.finish(now, None, EndReason::MaxRounds, out);
        true
    }
}
