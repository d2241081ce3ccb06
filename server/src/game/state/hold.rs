//! Holding a game still through a server-side incident: a restart, or many connections
//! dropping at once. Neither may cost a player the game.
//!
//! While a game is held no bank runs, no reveal window and no first-commit window, and a
//! seat that was away is given a fresh grace period from the hold's start. The hold ends
//! when both players are connected, or when that grace period has passed (from then on the
//! ordinary rules apply: an absent player's bank runs and the opponent may claim the win).
//! Ending it reopens the current phase with fresh timing: `RoundStart` for the same round
//! (if nobody has committed in it yet) or `RevealPhase` with a full reveal window.
//!
//! A game is also held while its log cannot be written (`stall`): from the step the log
//! refused until the log takes it, with no limit of time, whoever is connected. Moves made
//! meanwhile are kept, waiting for the log with the first; when it takes them the hold ends
//! (`unstall`) as an incident's does, with a fresh grace period for a seat that is away.
//!
//! After a restart the game also loses the round under way, if any (`void_round`): picks
//! are simultaneous only if neither player can learn anything before committing, and a
//! client may have lost its nonce in the outage, so the round is played again from its
//! commit phase under the same number. No pick was ever published before a round's result,
//! so voiding it reveals nothing. A round in which every commitment so far came with an
//! escrowed reveal is kept instead (its escrows are in the log's commit steps): no client
//! holds anything the round still needs.
//!
//! A correspondence game is neither held nor voided: its players come and go over days,
//! keep their nonces for as long (or escrow), and a restart must not give anyone days. Its
//! deadlines are re-anchored instead: each stays where the phase's start (a wall-clock
//! stamp in the log) and the time per phase put it, except that one passed or nearer than
//! a grace period is moved to a grace period after the restart, the outage having left
//! nobody a chance to act. Nor does an incident hold it: its players' connections are not
//! what it waits for.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;

use super::{duration_ms, GameState};
use crate::record::LogEntry;

impl GameState {
    /// Whether the game is held (see the module).
    #[cfg(test)]
    pub fn is_held(&self) -> bool {
        self.hold.is_some()
    }

    /// Takes up a replayed game after a restart at `now` (`wall_ms` in Unix milliseconds):
    /// voids the round under way, forgets presence and draw offers, and holds the game.
    pub fn resume(&mut self, now: Instant, wall_ms: u64) {
        if self.record.is_some() {
            return;
        }
        let voided = self.void_round(now);
        self.draw_offer = None;
        self.connected = SeatPair::new(false, false);
        self.away_since = SeatPair::new(now, now);
        self.wall = (now, wall_ms);
        match (self.per_phase(), self.replayed_phase_at.take()) {
            (Some(per_phase), Some(phase_at)) => {
                let gone = Duration::from_millis(wall_ms.saturating_sub(phase_at));
                let left = per_phase.saturating_sub(gone).max(self.timing.grace);
                let owing = self.outstanding();
                self.banks.set_running(owing, now);
                for seat in Seat::BOTH.into_iter().filter(|&s| *owing.get(s)) {
                    self.banks.set_left(seat, left, now);
                }
            }
            _ => self.start_hold(now),
        }
        self.log_step(now, LogEntry::Restarted { voided });
    }

    /// Holds the game if one of its seats dropped at or after `since`, as part of a
    /// server-side incident; returns whether it did.
    pub fn hold_for_incident(
        &mut self,
        since: Instant,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> bool {
        self.tick(now, out);
        if self.record.is_some() || self.hold.is_some() || self.per_phase().is_some() {
            return false;
        }
        let dropped: Vec<Seat> = Seat::BOTH
            .into_iter()
            .filter(|&s| !*self.connected.get(s) && *self.away_since.get(s) >= since)
            .collect();
        if dropped.is_empty() {
            return false;
        }
        for seat in dropped {
            *self.away_since.get_mut(seat) = now;
        }
        self.start_hold(now);
        true
    }

    /// Discards the commitments and reveals of the round under way, if any, and returns its
    /// number; the round starts again from its commit phase. A round whose every commitment
    /// came with its reveal escrowed is kept: the server holds all it needs to finish it.
    pub(super) fn void_round(&mut self, now: Instant) -> Option<u32> {
        let under_way =
            self.phase == Phase::Reveal || self.commits.one.is_some() || self.commits.two.is_some();
        let all_escrowed = Seat::BOTH
            .into_iter()
            .all(|s| self.commits.get(s).is_none() || self.escrows.get(s).is_some());
        let correspondence = self.per_phase().is_some();
        if self.record.is_some() || !under_way || all_escrowed || correspondence {
            return None;
        }
        self.clear_round(now);
        Some(self.round)
    }

    /// Holds the clocks from `now` because the game's log cannot take its steps: nothing
    /// runs out until `unstall`.
    pub fn stall(&mut self, now: Instant) {
        if self.record.is_some() || self.stalled {
            return;
        }
        self.stalled = true;
        self.banks.set_running(self.outstanding(), now);
    }

    /// The log has taken every step: the clocks run again from `now`, and the current
    /// phase reopens (an incident's hold still running goes on to its end).
    pub fn unstall(&mut self, now: Instant, out: &mut Vec<ServerMsg>) {
        if !std::mem::replace(&mut self.stalled, false) || self.record.is_some() {
            return;
        }
        for seat in Seat::BOTH {
            if !*self.connected.get(seat) {
                let away = self.away_since.get_mut(seat);
                *away = (*away).max(now);
            }
        }
        let both_back = self.connected.one && self.connected.two;
        match self.hold {
            Some(until) if until > now && !both_back => {}
            _ => self.release(now, out),
        }
    }

    /// Ends the hold once both players are connected.
    pub(super) fn release_if_both_back(&mut self, now: Instant, out: &mut Vec<ServerMsg>) {
        if self.hold.is_some() && !self.stalled && self.connected.one && self.connected.two {
            self.release(now, out);
        }
    }

    fn start_hold(&mut self, now: Instant) {
        self.hold = Some(now + self.timing.grace);
        // `outstanding` is nobody while held.
        self.banks.set_running(self.outstanding(), now);
    }

    /// Ends the hold at `at`: the clocks run again and the current phase reopens.
    pub(super) fn release(&mut self, at: Instant, out: &mut Vec<ServerMsg>) {
        self.hold = None;
        if self.record.is_some() {
            return;
        }
        self.started = at;
        let game_id = self.info.game_id;
        let round = self.round;
        match self.phase {
            Phase::Commit => {
                self.banks.set_running(self.outstanding(), at);
                // A seat that committed while held keeps its commitment; a `RoundStart`
                // would tell clients otherwise, so it is sent only for an untouched round.
                if self.commits.one.is_none() && self.commits.two.is_none() {
                    out.push(ServerMsg::RoundStart {
                        game_id,
                        seq: self.next_seq(),
                        round,
                        clocks: self.banks.wire(at),
                    });
                }
            }
            Phase::Reveal => {
                self.banks.set_running(self.outstanding(), at);
                // A correspondence phase goes on with the time it had left (a stall held
                // it); a live one reopens with a full reveal window.
                let reveal = match self.per_phase() {
                    Some(_) => Seat::BOTH
                        .into_iter()
                        .filter(|&s| self.reveals.get(s).is_none())
                        .map(|s| self.banks.left_at(s, at))
                        .max()
                        .unwrap_or_default(),
                    None => {
                        let window = Duration::from_millis(self.info.time_control.reveal_ms);
                        self.reveal_by = Some(at + window);
                        window
                    }
                };
                out.push(ServerMsg::RevealPhase {
                    game_id,
                    seq: self.next_seq(),
                    round,
                    reveal_ms: duration_ms(reveal),
                    clocks: self.banks.wire(at),
                });
            }
            Phase::Over => {}
        }
    }
}
