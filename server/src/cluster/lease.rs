//! The node's lease loop: every `Schedule::renew` it renews all its leases (a statement a
//! chunk of them), every `Schedule::claim` it claims the leases that have lapsed (their node
//! dead, or cut off from the database) and restores those games here, and the lobby's
//! lease if nobody holds it, and starts the lobby here. Claims go through the
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
//!
//! A commit whose outcome the step log does not know gives every lease up there (and
//! starts the node's next epoch, so they lapse at once): every game here stops too
//! (`LeaseStore::given_up`), to be claimed again, here or elsewhere, from its log.
//!
//! A node cut off from Redis while other nodes hear it gives every lease up at its next
//! renewal (`Renewed::given_back`): players on other nodes cannot reach its games, and their
//! clocks would run on here. Its games stop at once, the others claim them, and it renews
//! and claims again once it hears Redis. If no other node hears Redis either (Redis itself
//! is down), it keeps its games.

use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::claim::Claimer;
use crate::db::{Db, DbResult, Renewed, LEASE, LEASE_CLAIM, LEASE_RENEW};
use crate::record::GameLog;

/// What the loop needs of storage: a trait so that its timing is tested on a paused clock
/// (the database's thread would make the runtime look idle, and paused time jump ahead).
pub trait LeaseStore: Send + Sync + 'static {
    /// Renews the node's leases (cut off from Redis for `cut_off_for`, if it is); answers
    /// the games whose lease is lost, or that it gave them all up.
    fn renew(&self, cut_off_for: Option<Duration>) -> BoxFuture<'_, DbResult<Renewed>>;
    /// Claims lapsed leases; answers the claimed games' logs.
    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>>;
    /// The leases lapsed unrenewed: every lease held is lost (renewed no more, and not
    /// claimed back before its game has stopped).
    fn lapsed(&self);
    /// Claims the lobby's lease if nobody holds it; answers its token.
    fn claim_lobby(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        Box::pin(std::future::ready(Ok(None)))
    }
    /// Changes each time the store gives every lease up on its own (a commit whose
    /// outcome it does not know): every game here is to stop.
    fn given_up(&self) -> watch::Receiver<u64>;
}

impl LeaseStore for Db {
    fn renew(&self, cut_off_for: Option<Duration>) -> BoxFuture<'_, DbResult<Renewed>> {
        Box::pin(self.renew_leases(cut_off_for))
    }

    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>> {
        Box::pin(self.claim_lapsed())
    }

    fn lapsed(&self) {
        self.lose_all_leases();
    }

    fn claim_lobby(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        Box::pin(Db::claim_lobby(self))
    }

    fn given_up(&self) -> watch::Receiver<u64> {
        self.watch_leases_given_up()
            .unwrap_or_else(|| watch::channel(0).1)
    }
}

/// The node's games, as the loop sees them.
pub(super) trait Games: Send + Sync {
    /// Restores the claimed games here.
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()>;
    /// Stops these games (`None`: every game) at once: their leases are lost.
    fn stop(&self, lost: Option<&[GameId]>);
    /// Starts the lobby here, its lease claimed under token `generation`.
    fn start_lobby(&self, _generation: i64) {}
    /// How long since the node last heard the cluster's Redis, while it does not.
    fn cut_off_for(&self) -> Option<Duration> {
        None
    }
}

impl Games for Claimer {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()> {
        Box::pin(self.restore_claimed(logs))
    }

    fn stop(&self, lost: Option<&[GameId]>) {
        self.stop_lost(lost);
    }

    fn start_lobby(&self, generation: i64) {
        self.start_lobby(generation);
    }

    fn cut_off_for(&self) -> Option<Duration> {
        self.services.registry.cut_off_for()
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

impl Schedule {
    /// The schedule of leases that last `lease` (`--lease-ms`): the default's proportions.
    pub fn for_lease(lease: Duration) -> Schedule {
        Schedule {
            renew: lease / 3,
            retry: RENEW_RETRY.min(lease / 12),
            claim: lease / 6,
            lease,
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
    // The node gave its leases up, cut off from Redis while others hear it: until it
    // hears Redis again it neither renews (its next renewal starts a new epoch) nor claims.
    let mut given_back = false;
    let mut renewing: Option<(Instant, Pending<'_, Renewed>)> = None;
    let mut given_up = store.given_up();
    let mut claiming: Option<(Instant, Pending<'_, Claimed>)> = None;
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
            Ok(()) = given_up.changed() => {
                tracing::warn!("the step log gave every lease up: every game here stops, to be claimed again from its log");
                games.stop(None);
            }
            // Renewals first: a node slow to renew loses its games.
            (sent, renewed) = until_done(&mut renewing) => {
                renewing = None;
                match renewed {
                    Ok(Renewed { given_back: true, .. }) => {
                        tracing::warn!("cut off from Redis while other nodes hear it: every game here stops, for them to claim");
                        given_back = true;
                        lapsed = true;
                        store.lapsed();
                        games.stop(None);
                    }
                    Ok(Renewed { lost, .. }) => {
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
                    Ok((logs, lobby)) => {
                        // The games first: a lobby that starts here knows their seats.
                        if !logs.is_empty() {
                            games.restore(logs).await;
                        }
                        if let Some(generation) = lobby {
                            games.start_lobby(generation);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "cannot claim lapsed leases; retrying"),
                }
            }
            _ = renew.tick(), if renewing.is_none() => {
                let cut_off_for = games.cut_off_for();
                given_back &= cut_off_for.is_some();
                if !given_back {
                    renewing = Some((Instant::now(), store.renew(cut_off_for)));
                }
            }
            _ = claim.tick(), if claiming.is_none() && !given_back => {
                claiming = Some((Instant::now(), claim_all(&store)));
            }
        }
    }
}

/// A call to the store under way.
type Pending<'a, T> = BoxFuture<'a, DbResult<T>>;

/// What a claim took: lapsed games' logs, and the lobby's lease's token.
type Claimed = (Vec<GameLog>, Option<i64>);

/// Claims lapsed leases, then the lobby's if it is free.
fn claim_all(store: &impl LeaseStore) -> Pending<'_, Claimed> {
    Box::pin(async move {
        let logs = store.claim().await?;
        let lobby = store.claim_lobby().await.unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot claim the lobby's lease; retrying");
            None
        });
        Ok((logs, lobby))
    })
}

/// When the call under way was made, and its answer; never, if none is.
async fn until_done<T>(call: &mut Option<(Instant, Pending<'_, T>)>) -> (Instant, DbResult<T>) {
    match call {
        Some((sent, answer)) => (*sent, answer.await),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
