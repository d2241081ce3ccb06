//! Pruning: expired sessions and guest accounts nobody can sign in as any more, deleted
//! every `--prune-interval-secs` by the database writer, in bounded batches.
//!
//! A guest has no password, so once its sessions have expired or been revoked it can never
//! sign in again. It is deleted once it is also older than `--guest-retention-days`, has no
//! game on record (its games name it: such a guest is kept), and is neither online, nor
//! seated, nor a player of a game that has just ended (whose record may still be on its way
//! to the writer). Registered accounts are never pruned.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::unix_ms;
use crate::db::{Db, DbResult, GuestCursor, PruneBatch, Pruned};
use crate::registry::Registry;

/// Sessions deleted, and guests looked at, per batch: one batch is a short transaction,
/// so the writer's other requests are not held up behind a long pass.
pub const PRUNE_BATCH: u32 = 500;

/// How long after its expiry a session still counts as alive for its guest: a guest who
/// resumed just before its session expired, while a pass was getting ready, is online by
/// the time the batch runs, and kept.
pub const SESSION_GRACE: Duration = Duration::from_secs(3600);

/// What pruning needs to know.
#[derive(Debug, Clone, Copy)]
pub struct PruneSettings {
    pub interval: Duration,
    pub guest_retention: Duration,
}

/// Prunes every `interval` (the first pass at once) until `stop` fires.
pub async fn run(
    db: Db,
    registry: Arc<Registry>,
    settings: PruneSettings,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(settings.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        match pass(&db, &registry, settings.guest_retention, unix_ms()).await {
            Ok(done) if done.sessions + done.guests > 0 => tracing::info!(
                sessions = done.sessions,
                guests = done.guests,
                "pruned expired sessions and idle guests"
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "pruning failed; next time"),
        }
    }
}

/// One pass at time `now` (Unix milliseconds): batches until no expired session is left
/// and every guest has been looked at. Returns the totals.
pub async fn pass(
    db: &Db,
    registry: &Registry,
    guest_retention: Duration,
    now: u64,
) -> DbResult<Pruned> {
    const START: GuestCursor = (i64::MIN, i64::MIN);
    const END: GuestCursor = (i64::MAX, i64::MAX);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let sessions_before = now.saturating_sub(ms(SESSION_GRACE));
    let mut total = Pruned::default();
    let mut guests_at = Some(START);
    loop {
        let pruned = db
            .prune(PruneBatch {
                sessions_before,
                guests_created_before: now.saturating_sub(ms(guest_retention)),
                sessions_after: sessions_before,
                keep: registry.active_accounts(),
                after: guests_at.unwrap_or(END),
                limit: PRUNE_BATCH,
            })
            .await?;
        total.sessions += pruned.sessions;
        total.guests += pruned.guests;
        guests_at = guests_at.and(pruned.next);
        if guests_at.is_none() && pruned.sessions < PRUNE_BATCH as usize {
            return Ok(total);
        }
        // Let the other requests through between batches.
        tokio::task::yield_now().await;
    }
}
