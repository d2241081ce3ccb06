//! `Timer`: a deadline kept from one turn of a loop to the next, so that a loop turning
//! once per frame does not register a new timer every turn.

use std::pin::Pin;

use tokio::time::Instant;

/// A deadline kept from one turn of a loop to the next: its timer is registered once
/// and reset only when the deadline moves.
pub(super) struct Timer {
    sleep: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Instant>,
}

impl Timer {
    pub(super) fn new() -> Timer {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: None,
        }
    }

    /// Fire at `at` (never, if `None`). With `early_ok`, a deadline later than the
    /// armed one leaves the timer as it is: it fires early, and its user checks again.
    pub(super) fn aim(&mut self, at: Option<Instant>, early_ok: bool) {
        match (at, self.armed) {
            (None, _) => self.armed = None,
            (Some(at), Some(armed)) if at == armed || (early_ok && at > armed) => {}
            (Some(at), _) => {
                self.sleep.as_mut().reset(at);
                self.armed = Some(at);
            }
        }
    }

    /// Wait for the deadline (forever, if none); it is then disarmed.
    pub(super) async fn fired(&mut self) {
        if self.armed.is_none() {
            return std::future::pending().await;
        }
        self.sleep.as_mut().await;
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Duration;

    use super::*;

    /// Waits out an hour of paused time: whether `timer` fires within it.
    async fn fires_within_an_hour(timer: &mut Timer) -> bool {
        tokio::time::timeout(Duration::from_secs(3600), timer.fired())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_timer_fires_at_its_deadline_and_moves_later_only_when_it_may_not_be_early() {
        let secs = Duration::from_secs;
        let mut timer = Timer::new();
        // Never armed, or disarmed: it does not fire.
        assert!(!fires_within_an_hour(&mut timer).await);
        timer.aim(Some(Instant::now() + secs(5)), false);
        timer.aim(None, false);
        assert!(!fires_within_an_hour(&mut timer).await);

        // Armed: it fires at its deadline, and then is disarmed.
        let at = Instant::now() + secs(5);
        timer.aim(Some(at), false);
        timer.fired().await;
        assert_eq!(Instant::now(), at);
        assert!(!fires_within_an_hour(&mut timer).await);

        // Aimed later again without `early_ok`: it moves.
        let (first, later) = (Instant::now() + secs(1), Instant::now() + secs(7));
        timer.aim(Some(first), false);
        timer.aim(Some(later), false);
        timer.fired().await;
        assert_eq!(Instant::now(), later);

        // With `early_ok`, a later deadline leaves it where it is, to fire early...
        let (first, later) = (Instant::now() + secs(10), Instant::now() + secs(30));
        timer.aim(Some(first), true);
        timer.aim(Some(later), true);
        timer.fired().await;
        assert_eq!(Instant::now(), first);

        // ...but an earlier one moves it all the same.
        let (late, early) = (Instant::now() + secs(30), Instant::now() + secs(2));
        timer.aim(Some(late), true);
        timer.aim(Some(early), true);
        timer.fired().await;
        assert_eq!(Instant::now(), early);
    }
}
