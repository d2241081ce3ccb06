//! Hibernation: a game whose players are both away and whose next deadline is far off is
//! put to sleep (its actor ends; `game/hibernate.rs`), and taken up again where it stood
//! when an action or its deadline wakes it.
//!
//! Unlike a restart, a wake-up keeps the round under way (commits made days ago stay
//! valid) and the clocks ran on meanwhile: the `Hibernated` step holds what runs on time
//! besides the banks, and `woken` sets it all back relative to the instant the game went
//! to sleep, so a deadline that passed meanwhile is settled at its own instant. Except
//! one that passed while the server was down, or falls within a grace period of its
//! restart: as in a game awake at a restart (`hold.rs`), nobody could act meanwhile, so it
//! moves to a grace period after the restart.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{Phase, SeatPair};
use elementals_protocol::rules::Seat;

use super::{duration_ms, Banks, GameState};
use crate::record::{AccountId, LogEntry, LogStep};

impl GameState {
    /// The players' accounts, seat one first.
    pub fn seats(&self) -> SeatPair<AccountId> {
        SeatPair::new(self.players.one.account_id, self.players.two.account_id)
    }

    /// Whether the game may hibernate at `now`: under way, neither held nor stalled, both
    /// players away, and nothing due sooner than `min_distance` from now.
    pub fn may_hibernate(&self, now: Instant, min_distance: Duration) -> bool {
        if self.record.is_some() || self.hold.is_some() || self.stalled {
            return false;
        }
        if self.connected.one || self.connected.two {
            return false;
        }
        self.next_deadline()
            .is_none_or(|due| due.saturating_duration_since(now) >= min_distance)
    }

    /// Logs the `Hibernated` step at `now`; returns when the game next has something due,
    /// in Unix milliseconds (`u64::MAX` for nothing).
    pub fn hibernate(&mut self, now: Instant) -> u64 {
        let left = |at: Instant| duration_ms(at.saturating_duration_since(now));
        let reveal_left_ms = match self.phase {
            Phase::Reveal => self.reveal_by.map(left),
            _ => None,
        };
        let first_commit_left_ms = self
            .in_first_commit_window()
            .then(|| left(self.started + self.timing.first_commit_window));
        let away_ms = self
            .away_since
            .map(|since| duration_ms(now.saturating_duration_since(since)));
        let entry = LogEntry::Hibernated {
            reveal_left_ms,
            first_commit_left_ms,
            away_ms,
            phase_ms: duration_ms(now.saturating_duration_since(self.phase_since)),
            draw_offer: self.draw_offer,
        };
        self.log_step(now, entry);
        self.next_deadline()
            .map_or(u64::MAX, |due| self.wall_ms(due))
    }

    /// Takes up a game replayed (at `base`) from a log whose last step, `slept`, is its
    /// hibernation: `base` is that step's instant by the server's clock. Everything that
    /// runs on time runs from there, so the caller's next `tick` settles what passed since,
    /// but nothing falls due before a grace period after `restarted`: the instant the
    /// server started after being down, if the game slept across it.
    pub fn woken(&mut self, slept: &LogStep, base: Instant, restarted: Option<Instant>) {
        let LogEntry::Hibernated {
            reveal_left_ms,
            first_commit_left_ms,
            away_ms,
            phase_ms,
            draw_offer,
        } = slept.entry
        else {
            return;
        };
        let back = |ms: u64| base.checked_sub(Duration::from_millis(ms)).unwrap_or(base);
        self.wall = (base, slept.at);
        self.hold = None;
        self.connected = SeatPair::new(false, false);
        self.away_since = away_ms.map(back);
        self.phase_since = back(phase_ms);
        self.draw_offer = draw_offer;
        if let Some(left) = first_commit_left_ms {
            let closes = base + Duration::from_millis(left);
            let window = self.timing.first_commit_window;
            self.started = closes.checked_sub(window).unwrap_or(base);
        }
        // A reveal window runs only in a live game's reveal phase.
        self.reveal_by = match self.phase {
            Phase::Reveal => reveal_left_ms.map(|left| base + Duration::from_millis(left)),
            _ => None,
        };
        self.banks = Banks::restored(slept.banks_us.map(Duration::from_micros), base);
        self.banks.set_running(self.outstanding(), base);
        if let Some(restarted) = restarted {
            self.due_no_sooner_than(restarted.max(base) + self.timing.grace, base);
        }
    }

    /// Moves every deadline of a game just woken at `base` that falls before `floor` to
    /// `floor`: the banks that run, the reveal window, round 1's first-commit window.
    fn due_no_sooner_than(&mut self, floor: Instant, base: Instant) {
        for seat in Seat::BOTH {
            if self.banks.expiry(seat).is_some_and(|due| due < floor) {
                self.banks.set_left(seat, floor - base, base);
            }
        }
        self.reveal_by = self.reveal_by.map(|by| by.max(floor));
        if self.first_commit_deadline().is_some_and(|due| due < floor) {
            let window = self.timing.first_commit_window;
            self.started = floor.checked_sub(window).unwrap_or(self.started);
        }
    }
}
