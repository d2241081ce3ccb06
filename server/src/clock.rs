//! Wall-clock time. Game timing uses `tokio::time::Instant` (pausable in tests); the
//! deadlines of hibernated games are wall-clock milliseconds, because they must survive a
//! restart, and they are read and written through one [`Clock`] per server, so that tests
//! on tokio's paused clock move wall time by moving the paused clock. A cluster node's
//! clock reads the database's (`Clock::reading`, at its start), as its leases do, so that
//! every node agrees when a sleeping game's deadline comes whatever its machine's clock says.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// Milliseconds since the Unix epoch, from the system's clock.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The server's wall clock: the system's time read once, at `start`, then moved by tokio's
/// monotonic clock. Over weeks of uptime it may drift from the system's clock by what NTP
/// corrects; a deadline is then late or early by that much, never lost.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Instant,
    base_ms: u64,
}

impl Clock {
    /// A clock reading the system's time now. Tests that restart a server on paused time
    /// hand the same clock to each start (`Config::clock`), so wall time keeps moving.
    pub fn start() -> Clock {
        Clock {
            base: Instant::now(),
            base_ms: unix_ms(),
        }
    }

    /// A clock that reads `now_ms` (Unix milliseconds) now: a cluster node's, from the
    /// database's clock, which every node shares.
    pub fn reading(now_ms: u64) -> Clock {
        Clock {
            base: Instant::now(),
            base_ms: now_ms,
        }
    }

    /// This clock moved `by` ahead (a test hook: a process whose deadlines come early).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn ahead(self, by: Duration) -> Clock {
        Clock {
            base_ms: self.base_ms.saturating_add(ms(by)),
            ..self
        }
    }

    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.ms_at(Instant::now())
    }

    /// `at` in Unix milliseconds (an instant before the base counts back from it).
    pub fn ms_at(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.base) {
            Some(after) => self.base_ms.saturating_add(ms(after)),
            None => self.base_ms.saturating_sub(ms(self.base - at)),
        }
    }

    /// The instant of `unix_ms` by this clock. One further back than the monotonic clock
    /// reaches (never on Linux, whose instants may be negative) is its earliest instant.
    pub fn instant_at(&self, unix_ms: u64) -> Instant {
        let now = Instant::now();
        let now_ms = self.ms_at(now);
        if unix_ms >= now_ms {
            return now + Duration::from_millis(unix_ms - now_ms);
        }
        let back = Duration::from_millis(now_ms - unix_ms);
        now.checked_sub(back).unwrap_or(now)
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_clock_moves_with_paused_time_and_maps_back_to_instants() {
        let clock = Clock::start();
        let t0 = clock.now_ms();
        tokio::time::advance(Duration::from_secs(7 * 86_400)).await;
        assert_eq!(clock.now_ms(), t0 + 7 * 86_400_000);
        let later = clock.instant_at(t0 + 8 * 86_400_000);
        assert_eq!(later - Instant::now(), Duration::from_secs(86_400));
        let earlier = clock.instant_at(t0 + 86_400_000);
        assert_eq!(Instant::now() - earlier, Duration::from_secs(6 * 86_400));
        assert_eq!(clock.ms_at(earlier), t0 + 86_400_000);
    }
}
