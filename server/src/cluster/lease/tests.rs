//! The lease loop's schedule on tokio's paused clock, against a store in memory.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{run, LeaseStore, Restore, Schedule};
use crate::db::{DbError, DbResult};
use crate::record::GameLog;

/// When each call came, and what the next ones answer.
#[derive(Default)]
struct Calls {
    renewals: Vec<Instant>,
    claims: Vec<Instant>,
    /// Renewals to fail, from the next one on.
    failing_renewals: usize,
    /// The logs the next claim answers.
    to_claim: Vec<GameLog>,
    restored: Vec<GameId>,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Calls>>);

impl Fake {
    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.0.lock().unwrap()
    }
}

impl LeaseStore for Fake {
    fn renew(&self) -> BoxFuture<'_, DbResult<Vec<GameId>>> {
        let mut calls = self.calls();
        calls.renewals.push(Instant::now());
        let answer = if calls.failing_renewals > 0 {
            calls.failing_renewals -= 1;
            Err(DbError::Unavailable("the database is restarting".into()))
        } else {
            Ok(Vec::new())
        };
        Box::pin(std::future::ready(answer))
    }

    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>> {
        let mut calls = self.calls();
        calls.claims.push(Instant::now());
        Box::pin(std::future::ready(Ok(std::mem::take(&mut calls.to_claim))))
    }
}

impl Restore for Fake {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()> {
        self.calls()
            .restored
            .extend(logs.iter().map(|log| log.game_id));
        Box::pin(std::future::ready(()))
    }
}

const SCHEDULE: Schedule = Schedule {
    renew: Duration::from_secs(2),
    claim: Duration::from_secs(1),
};

/// Runs the loop on `fake` for `span` of paused time, then stops it.
async fn run_for(fake: &Fake, span: Duration) -> Instant {
    let stop = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(run(fake.clone(), SCHEDULE, fake.clone(), stop.clone()));
    tokio::time::sleep(span).await;
    stop.cancel();
    task.await.unwrap();
    start
}

fn offsets(start: Instant, at: &[Instant]) -> Vec<u64> {
    at.iter().map(|t| (*t - start).as_millis() as u64).collect()
}

#[tokio::test(start_paused = true)]
async fn renews_every_two_seconds_and_claims_every_second_starting_one_interval_in() {
    let fake = Fake::default();
    let start = run_for(&fake, Duration::from_millis(6_500)).await;
    let calls = fake.calls();
    assert_eq!(offsets(start, &calls.renewals), [2_000, 4_000, 6_000]);
    assert_eq!(
        offsets(start, &calls.claims),
        [1_000, 2_000, 3_000, 4_000, 5_000, 6_000]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_renewal_is_tried_again_at_the_next_tick_and_claims_go_on() {
    let fake = Fake::default();
    fake.calls().failing_renewals = 2;
    let start = run_for(&fake, Duration::from_millis(8_500)).await;
    let calls = fake.calls();
    // Two failures, then renewed at 6 s: within the 6 s lease of the renewal before them.
    assert_eq!(
        offsets(start, &calls.renewals),
        [2_000, 4_000, 6_000, 8_000]
    );
    assert_eq!(calls.failing_renewals, 0);
    assert_eq!(calls.claims.len(), 8);
}

#[tokio::test(start_paused = true)]
async fn claimed_games_are_restored_once() {
    let fake = Fake::default();
    let claimed: Vec<GameId> = (0..3).map(|_| GameId(uuid::Uuid::new_v4())).collect();
    fake.calls().to_claim = claimed
        .iter()
        .map(|&game_id| GameLog {
            game_id,
            steps: Vec::new(),
        })
        .collect();
    run_for(&fake, Duration::from_millis(3_500)).await;
    assert_eq!(fake.calls().restored, claimed);
}

#[tokio::test(start_paused = true)]
async fn nothing_is_renewed_or_claimed_after_stop() {
    let fake = Fake::default();
    let start = run_for(&fake, Duration::from_millis(2_500)).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let calls = fake.calls();
    assert_eq!(offsets(start, &calls.renewals), [2_000]);
    assert_eq!(offsets(start, &calls.claims), [1_000, 2_000]);
}
