//! The node's lease loop: every `Schedule::renew` it renews all its leases in one
//! statement, every `Schedule::claim` it claims the leases that have lapsed (their node
//! dead, or cut off from the database) and restores those games here. Both go through the
//! step log's thread (`Db::renew_leases`, `Db::claim_lapsed`), which owns the leases.
//!
//! A renewal that fails is tried again at the next tick: a lease lasts three renewal
//! intervals, so a node misses two before its games may be claimed. A lease found lost
//! (claimed elsewhere) needs nothing here: the fence refuses the game's next step, and the
//! game stops on this node (`game/actor/moved.rs`).

use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use super::claim::Claimer;
use crate::db::{Db, DbResult, LEASE_CLAIM, LEASE_RENEW};
use crate::record::GameLog;

/// What the loop needs of storage: a trait so that its timing is tested on a paused clock
/// (the database's thread would make the runtime look idle, and paused time jump ahead).
pub trait LeaseStore: Send + Sync + 'static {
    /// Renews the node's leases; answers the games whose lease is lost.
    fn renew(&self) -> BoxFuture<'_, DbResult<Vec<GameId>>>;
    /// Claims lapsed leases; answers the claimed games' logs.
    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>>;
}

impl LeaseStore for Db {
    fn renew(&self) -> BoxFuture<'_, DbResult<Vec<GameId>>> {
        Box::pin(self.renew_leases())
    }

    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>> {
        Box::pin(self.claim_lapsed())
    }
}

/// Where the claimed games go.
pub(super) trait Restore: Send + Sync {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()>;
}

impl Restore for Claimer {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()> {
        Box::pin(self.restore_claimed(logs))
    }
}

/// How often the loop renews and claims.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub renew: Duration,
    pub claim: Duration,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            renew: LEASE_RENEW,
            claim: LEASE_CLAIM,
        }
    }
}

/// Renews and claims on `schedule` until `stop` fires.
pub(super) async fn run(
    store: impl LeaseStore,
    schedule: Schedule,
    restorer: impl Restore,
    stop: CancellationToken,
) {
    let mut renew = tokio::time::interval(schedule.renew);
    let mut claim = tokio::time::interval(schedule.claim);
    // A tick missed (a slow claim, a slow database) is not made up in a burst.
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    claim.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first ticks come at once: startup has just taken and restored its games.
    renew.tick().await;
    claim.tick().await;
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            // Renewals first: a node slow to renew loses its games.
            _ = renew.tick() => match store.renew().await {
                Ok(lost) if !lost.is_empty() => {
                    tracing::warn!(games = lost.len(), "leases lost to another node: those games stop here at their next step");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "cannot renew the games' leases; retrying"),
            },
            _ = claim.tick() => match store.claim().await {
                Ok(logs) if !logs.is_empty() => restorer.restore(logs).await,
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "cannot claim lapsed leases; retrying"),
            },
        }
    }
}

#[cfg(test)]
mod tests;
