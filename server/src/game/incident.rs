//! Telling a server-side incident from ordinary disconnects.
//!
//! One player dropping is that player's business: the grace period and their clock apply.
//! Many seated players dropping together is the server's (or its network's) fault, and no
//! one should lose a game over it. The rule: when, within [`WINDOW`], at least half of the
//! seated players, and at least [`MIN_DROPS`], have dropped, an incident is declared. Every
//! game that lost a seat in that window, or loses one while the incident lasts (until
//! `WINDOW` after the last drop), is held (see `state/hold.rs`).
//!
//! Game actors report their drops here; a declaration is broadcast to every game.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

/// How close together drops must come to count as one incident.
pub const WINDOW: Duration = Duration::from_secs(2);

/// The fewest drops that make an incident, so that a quiet server with two games does not
/// hold a game whenever one player loses their connection.
pub const MIN_DROPS: usize = 4;

/// Declarations waiting for a game to read them. They are rare (one per incident); a game
/// that falls further behind sees `Lagged` and treats it as a declaration.
const NOTICES: usize = 16;

#[derive(Debug)]
pub struct Incidents {
    drops: Mutex<Drops>,
    notices: broadcast::Sender<Instant>,
}

#[derive(Debug, Default)]
struct Drops {
    recent: VecDeque<Instant>,
    /// While an incident lasts: until when.
    until: Option<Instant>,
}

impl Default for Incidents {
    fn default() -> Self {
        Incidents {
            drops: Mutex::default(),
            notices: broadcast::channel(NOTICES).0,
        }
    }
}

impl Incidents {
    /// A seated player dropped at `now`, with `seated` players seated in all. If that is
    /// part of an incident, returns the instant from which drops count as part of it (and,
    /// when this drop declares it, tells every game).
    pub fn dropped(&self, now: Instant, seated: usize) -> Option<Instant> {
        // std Mutex: held for a few instructions, never across an `.await`.
        let mut drops = self.drops.lock().unwrap_or_else(PoisonError::into_inner);
        let since = now.checked_sub(WINDOW).unwrap_or(now);
        drops.recent.push_back(now);
        while drops.recent.front().is_some_and(|&t| t < since) {
            drops.recent.pop_front();
        }
        let ongoing = drops.until.is_some_and(|until| now <= until);
        let declared = !ongoing && drops.recent.len() >= MIN_DROPS.max(seated.div_ceil(2));
        if !ongoing && !declared {
            return None;
        }
        drops.until = Some(now + WINDOW);
        if declared {
            tracing::warn!(
                drops = drops.recent.len(),
                seated,
                "many players dropped at once: holding their games"
            );
            // No receivers (no live games) is fine.
            let _ = self.notices.send(since);
        }
        Some(since)
    }

    /// Declarations, for a game actor.
    pub fn subscribe(&self) -> broadcast::Receiver<Instant> {
        self.notices.subscribe()
    }
}
