//! The two players' banks of thinking time.
//!
//! A bank is charged only while its seat is marked running; the game state decides who runs
//! (whoever's commit or reveal is outstanding). Banks are kept as exact `Duration`s against
//! explicit instants, so a bank runs out at a precise instant and tests can pin it to the
//! millisecond; milliseconds appear only on the wire.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{Clocks, SeatPair};
use elementals_protocol::rules::Seat;

#[derive(Debug, Clone)]
pub(in crate::game) struct Banks {
    left: SeatPair<Duration>,
    running: SeatPair<bool>,
    /// When `left` was last brought up to date.
    since: Instant,
}

impl Banks {
    /// Both banks full and stopped.
    pub fn new(initial: Duration, now: Instant) -> Banks {
        Banks {
            left: SeatPair::new(initial, initial),
            running: SeatPair::new(false, false),
            since: now,
        }
    }

    /// Both banks stopped, at what a log recorded (a restored game).
    pub fn restored(left: SeatPair<Duration>, now: Instant) -> Banks {
        Banks {
            left,
            running: SeatPair::new(false, false),
            since: now,
        }
    }

    /// Takes the time since the last charge off every running bank.
    pub fn charge(&mut self, now: Instant) {
        // A `now` before `since` (never from a monotonic clock) charges nothing rather than
        // refunding time.
        let elapsed = now.saturating_duration_since(self.since);
        for seat in Seat::BOTH {
            if *self.running.get(seat) {
                let left = self.left.get_mut(seat);
                *left = left.saturating_sub(elapsed);
            }
        }
        self.since = self.since.max(now);
    }

    /// Charges up to `now`, then runs exactly the seats in `running`.
    pub fn set_running(&mut self, running: SeatPair<bool>, now: Instant) {
        self.charge(now);
        self.running = running;
    }

    /// Both banks refilled to `full` from `now`, each running or not as before: a
    /// correspondence phase's start, where a bank is the time left to the phase's deadline.
    pub fn refill(&mut self, full: Duration, now: Instant) {
        self.charge(now);
        self.left = SeatPair::new(full, full);
    }

    /// `seat`'s bank set to `left` from `now` (a correspondence deadline re-anchored).
    pub fn set_left(&mut self, seat: Seat, left: Duration, now: Instant) {
        self.charge(now);
        *self.left.get_mut(seat) = left;
    }

    /// Adds the per-round increment to both banks.
    pub fn add(&mut self, increment: Duration) {
        for seat in Seat::BOTH {
            let left = self.left.get_mut(seat);
            *left = left.saturating_add(increment);
        }
    }

    /// What `seat` has left at `now` (not before the last charge).
    pub fn left_at(&self, seat: Seat, now: Instant) -> Duration {
        let left = *self.left.get(seat);
        if *self.running.get(seat) {
            left.saturating_sub(now.saturating_duration_since(self.since))
        } else {
            left
        }
    }

    /// When a running seat's bank reaches zero; `None` while it is stopped.
    pub fn expiry(&self, seat: Seat) -> Option<Instant> {
        self.running
            .get(seat)
            .then(|| self.since + *self.left.get(seat))
    }

    /// Both banks in whole milliseconds (rounded down) at `now`.
    pub fn ms_at(&self, now: Instant) -> SeatPair<u64> {
        let ms = |seat| duration_ms(self.left_at(seat, now));
        SeatPair::new(ms(Seat::One), ms(Seat::Two))
    }

    /// Both banks in microseconds, rounded up, at `now`: what the log records.
    pub fn us_at(&self, now: Instant) -> SeatPair<u64> {
        let us = |seat| {
            let ns = self.left_at(seat, now).as_nanos();
            u64::try_from(ns.div_ceil(1000)).unwrap_or(u64::MAX)
        };
        SeatPair::new(us(Seat::One), us(Seat::Two))
    }

    /// The clocks as a message carries them.
    pub fn wire(&self, now: Instant) -> Clocks {
        let ms = self.ms_at(now);
        Clocks {
            one_ms: ms.one,
            two_ms: ms.two,
            running: self.running,
        }
    }
}

/// Whole milliseconds, saturating (a bank never approaches `u64::MAX` ms anyway).
pub(in crate::game) fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn only_running_banks_are_charged() {
        let t0 = Instant::now();
        let mut banks = Banks::new(1000 * MS, t0);
        banks.set_running(SeatPair::new(true, false), t0);
        banks.charge(t0 + 300 * MS);
        assert_eq!(banks.ms_at(t0 + 300 * MS), SeatPair::new(700, 1000));
        assert_eq!(banks.left_at(Seat::One, t0 + 400 * MS), 600 * MS);
        assert_eq!(banks.expiry(Seat::One), Some(t0 + 1000 * MS));
        assert_eq!(banks.expiry(Seat::Two), None);
        banks.set_running(SeatPair::new(false, true), t0 + 500 * MS);
        assert_eq!(banks.ms_at(t0 + 900 * MS), SeatPair::new(500, 600));
        assert_eq!(banks.expiry(Seat::Two), Some(t0 + 1500 * MS));
    }

    #[test]
    fn banks_stop_at_zero_and_take_increments() {
        let t0 = Instant::now();
        let mut banks = Banks::new(100 * MS, t0);
        banks.set_running(SeatPair::new(true, true), t0);
        banks.set_running(SeatPair::new(false, false), t0 + 250 * MS);
        assert_eq!(banks.ms_at(t0 + 250 * MS), SeatPair::new(0, 0));
        banks.add(40 * MS);
        let clocks = banks.wire(t0 + 999 * MS);
        assert_eq!((clocks.one_ms, clocks.two_ms), (40, 40));
        assert_eq!(clocks.running, SeatPair::new(false, false));
    }
}
