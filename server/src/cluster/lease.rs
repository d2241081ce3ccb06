//! The node's lease loop: every `Schedule::renew` it renews all its leases (a statement a
//! chunk of them), every `Schedule::claim` it claims the leases that have lapsed (their node
//! dead, or cut off from the database) and restores those games here. Claims go through the
//! step log's thread (`Db::claim_lapsed`), which takes the claimed games' logs; renewals
//! through a thread of their own (`Db::renew_leases`), so that moves never wait behind one.
//!
//! A renewal that fails is tried again after `Schedule::retry`. A lease found lost
//! (claimed elsewhere) stops its game at once (`alarms.rs`), and so does every game here
//! once the leases renewed last have lapsed on this node's clock, counted from when that
//! renewal was sent (no later than the database stamped it): from then on another node may
//! run them, and their players are better told to reconnect (and `resume` wherever the game
//! runs) than left on a game that can write nothing. Renewals and claims are awaited
//! inside the loop's `select!`, so a database that hangs delays neither the lapse nor its
//! alarm; a claim is never dropped half-way (its games would be held and never restored).

use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::time::{sleep_until, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::claim::Claimer;
use crate::db::{Db, DbResult, LEASE, LEASE_CLAIM, LEASE_RENEW};
use crate::record::GameLog;

/// What the loop needs of storage: a trait so that its timing is tested on a paused clock
/// (the database's thread would make the runtime look idle, and paused time jump ahead).
pub trait LeaseStore: Send + Sync + 'static {
    /// Renews the node's leases; answers the games whose lease is lost.
    fn renew(&self) -> BoxFuture<'_, DbResult<Vec<GameId>>>;
    /// Claims lapsed leases; answers the claimed games' logs.
    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>>;
    /// The leases lapsed unrenewed: every lease held is lost (renewed no more, and not
    /// claimed back before its game has stopped).
    fn lapsed(&self);
}

impl LeaseStore for Db {
    fn renew(&self) -> BoxFuture<'_, DbResult<Vec<GameId>>> {
        Box::pin(self.renew_leases())
    }

    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>> {
        Box::pin(self.claim_lapsed())
    }

    fn lapsed(&self) {
        self.lose_all_leases();
    }
}

/// The node's games, as the loop sees them.
pub(super) trait Games: Send + Sync {
    /// Restores the claimed games here.
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()>;
    /// Stops these games (`None`: every game) at once: their leases are lost.
    fn stop(&self, lost: Option<&[GameId]>);
}

impl Games for Claimer {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()> {
        Box::pin(self.restore_claimed(logs))
    }

    fn stop(&self, lost: Option<&[GameId]>) {
        self.stop_lost(lost);
    }
}

/// How often the loop renews and claims, and how long a lease lasts.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub renew: Duration,
    /// After a failed renewal, the pause before the next try.
    pub retry: Duration,
    pub claim: Duration,
    pub lease: Duration,
}

/// How soon a failed renewal is tried again: well within the lease, so that a database
/// back after a blip renews before the games would stop.
const RENEW_RETRY: Duration = Duration::from_millis(500);

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            renew: LEASE_RENEW,
            retry: RENEW_RETRY,
            claim: LEASE_CLAIM,
            lease: LEASE,
        }
    }
}

/// Renews and claims on `schedule` until `stop` fires.
pub(super) async fn run(
    store: impl LeaseStore,
    schedule: Schedule,
    games: impl Games,
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
    // When the leases renewed last lapse (startup has just taken its own), and whether
    // their games have been stopped for it.
    let mut lapse = Instant::now() + schedule.lease;
    let mut lapsed = false;
    let mut renewing: Option<(Instant, Pending<'_, Vec<GameId>>)> = None;
    let mut claiming: Option<(Instant, Pending<'_, Vec<GameLog>>)> = None;
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = sleep_until(lapse), if !lapsed => {
                lapsed = true;
                tracing::warn!("the games' leases lapsed unrenewed: every game here stops");
                store.lapsed();
                games.stop(None);
            }
            // Renewals first: a node slow to renew loses its games.
            (sent, renewed) = until_done(&mut renewing) => {
                renewing = None;
                match renewed {
                    Ok(lost) => {
                        lapse = sent + schedule.lease;
                        lapsed = false;
                        if !lost.is_empty() {
                            tracing::warn!(games = lost.len(), "leases lost to another node: those games stop here");
                            games.stop(Some(&lost));
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot renew the games' leases; retrying");
                        renew.reset_after(schedule.retry);
                    }
                }
            }
            (_, claimed) = until_done(&mut claiming) => {
                claiming = None;
                match claimed {
                    Ok(logs) if !logs.is_empty() => games.restore(logs).await,
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "cannot claim lapsed leases; retrying"),
                }
            }
            _ = renew.tick(), if renewing.is_none() => {
                renewing = Some((Instant::now(), store.renew()));
            }
            _ = claim.tick(), if claiming.is_none() => {
                claiming = Some((Instant::now(), store.claim()));
            }
        }
    }
}

/// A call to the store under way.
type Pending<'a, T> = BoxFuture<'a, DbResult<T>>;

/// When the call under way was made, and its answer; never, if none is.
async fn until_done<T>(call: &mut Option<(Instant, Pending<'_, T>)>) -> (Instant, DbResult<T>) {
    match call {
        Some((sent, answer)) => (*sent, answer.await),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
