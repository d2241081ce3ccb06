//! The sweeper: one task that wakes hibernated games whose deadline has come. No timer per
//! game: it reads the due wake-up rows by their index on `due_ms` (at most `BATCH` at a
//! time, earliest first), wakes them, and sleeps until the next row's due time, or until
//! a game goes to sleep with an earlier one (`Wakeups::due`).
//!
//! In cluster mode every node runs a sweeper over the same rows; waking takes the game's
//! lease (`hibernate.rs`), so each due game is woken by one of them. A node hears of the
//! games other nodes put to sleep only through the rows, so it reads them at least every
//! `CLUSTER_REREAD`: a node that dies with games asleep leaves their deadlines to the others.
//! A due row of a game its mirror does not know asleep (a `Slept` message lost), and every
//! rejoin of Redis, make it read the sleeping games from storage into the mirror.
//!
//! A woken game settles its own deadline as a live one does (`tick`: a loss on time, rated,
//! recorded once). A due row whose game is not asleep (it is just going to sleep, or its
//! waking failed) is tried again `RETRY` later.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::sleep_until;

use super::hibernate::wake;
use super::GameServices;

/// Games woken per read of the due rows (each log is then read by its key).
const BATCH: usize = 256;

/// How soon a due row whose game could not be woken is read again.
const RETRY: Duration = Duration::from_secs(1);

/// In cluster mode, the longest a sweeper waits between two reads of the rows.
const CLUSTER_REREAD: Duration = Duration::from_secs(10);

/// What the sweeper knows of the next due time, and how it is told of an earlier one.
#[derive(Debug)]
pub struct Wakeups {
    earliest: AtomicU64,
    notify: Notify,
}

impl Default for Wakeups {
    fn default() -> Self {
        Wakeups {
            earliest: AtomicU64::new(u64::MAX),
            notify: Notify::new(),
        }
    }
}

impl Wakeups {
    /// A game went to sleep until `due_ms` (its row is committed): the sweeper reads the
    /// rows again if that is earlier than it knew.
    pub fn due(&self, due_ms: u64) {
        if due_ms < self.earliest.fetch_min(due_ms, Ordering::SeqCst) {
            self.notify.notify_one();
        }
    }
}

/// Runs until the games' stop token is cancelled.
pub async fn sweep(services: GameServices) {
    let stop = services.stop.clone();
    let wakeups = services.wakeups.clone();
    let mut rejoins = services.registry.cluster_rejoins();
    let mut unheard = false;
    loop {
        // Cluster mode: after the node rejoined Redis, or found a due game it had not
        // heard sleeps, the sleeping games it may have missed are read from storage.
        let now = services.registry.cluster_rejoins();
        if now != rejoins || unheard {
            unheard = false;
            let mended = services
                .registry
                .mend_sleepers(services.db.sleepers())
                .await;
            match mended {
                Ok(()) => rejoins = now,
                Err(error) => tracing::warn!(%error, "cannot read the sleeping games"),
            }
        }
        // Forgotten before the read: a game put to sleep from here on says so (and the
        // `Notify` keeps that until the wait below), one put to sleep before is in the rows.
        wakeups.earliest.store(u64::MAX, Ordering::SeqCst);
        let now_ms = services.clock.now_ms();
        let (wait_until, full) = match services.db.due_wakeups(now_ms, BATCH).await {
            Ok(due) => {
                let full = due.games.len() == BATCH;
                let skipped = wake_all(&services, due.games).await;
                let next = due.next_ms.unwrap_or(u64::MAX);
                wakeups.earliest.fetch_min(next, Ordering::SeqCst);
                let mut at = (next < u64::MAX).then(|| services.clock.instant_at(next));
                unheard = skipped && !services.registry.alone();
                if skipped {
                    let retry = tokio::time::Instant::now() + RETRY;
                    at = Some(at.map_or(retry, |at| at.min(retry)));
                }
                (at, full)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the hibernated games' wake-ups");
                (Some(tokio::time::Instant::now() + RETRY), false)
            }
        };
        if full {
            continue;
        }
        // Other nodes put games to sleep without a word to this node's `Notify`.
        let wait_until = if services.registry.alone() {
            wait_until
        } else {
            let reread = tokio::time::Instant::now() + CLUSTER_REREAD;
            Some(wait_until.map_or(reread, |at| at.min(reread)))
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = wakeups.notify.notified() => {}
            () = sleep_until_some(wait_until) => {}
        }
    }
}

/// Wakes the due games that sleep, their logs read by key in one request; returns whether some due
/// game was not asleep (to be read again soon).
async fn wake_all(
    services: &GameServices,
    games: Vec<elementals_protocol::messages::GameId>,
) -> bool {
    let mut claimed = Vec::new();
    let mut skipped = false;
    for game_id in games {
        match services.registry.begin_wake(game_id) {
            Some(waking) => claimed.push((game_id, waking)),
            None => skipped |= !services.registry.is_dormant(&game_id),
        }
    }
    if claimed.is_empty() {
        return skipped;
    }
    let ids = claimed.iter().map(|(id, _)| *id).collect();
    let mut logs: std::collections::HashMap<_, _> = match services.db.game_logs(ids).await {
        Ok(logs) => logs.into_iter().map(|l| (l.game_id, l)).collect(),
        // Each wake reads its own log, and fails alone if the log cannot be read.
        Err(_) => Default::default(),
    };
    let wakes = claimed.into_iter().map(|(game_id, (inbox, done))| {
        let log = logs.remove(&game_id);
        wake(services.clone(), game_id, inbox, done, log)
    });
    futures::future::join_all(wakes).await;
    skipped
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
