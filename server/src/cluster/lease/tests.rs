//! The lease loop's schedule on tokio's paused clock, against a store in memory: when it
//! renews and claims, and when it stops games whose leases are lost or lapsed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{run, Games, LeaseStore, Schedule};
use crate::db::{DbError, DbResult, Renewed};
use crate::record::GameLog;

/// When each call came, and what the next ones answer.
#[derive(Default)]
struct Calls {
    renewals: Vec<Instant>,
    claims: Vec<Instant>,
    /// Renewals to fail, from the next one on.
    failing_renewals: usize,
    /// Renewals that never answer (a database that hangs), from the next one on.
    hanging_renewals: usize,
    /// The games the next renewal finds lost.
    to_lose: Vec<GameId>,
    /// How long the node has been cut off from Redis, if it is (`Games::cut_off_for`).
    cut_off: Option<Duration>,
    /// Whether other nodes hear Redis: a renewal sent cut off then gives every lease up.
    others_hear_redis: bool,
    /// What each renewal was told of the cut.
    renewed_cut_off: Vec<Option<Duration>>,
    /// Bumped when the store gives every lease up on its own.
    given_up: Option<tokio::sync::watch::Sender<u64>>,
    /// When the leases were declared lapsed.
    lapses: Vec<Instant>,
    /// When games were stopped, and which (`None`: all).
    stopped: Vec<(Instant, Option<Vec<GameId>>)>,
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
    fn renew(&self, cut_off_for: Option<Duration>) -> BoxFuture<'_, DbResult<Renewed>> {
        let mut calls = self.calls();
        calls.renewals.push(Instant::now());
        calls.renewed_cut_off.push(cut_off_for);
        if calls.hanging_renewals > 0 {
            calls.hanging_renewals -= 1;
            return Box::pin(std::future::pending());
        }
        let answer = if calls.failing_renewals > 0 {
            calls.failing_renewals -= 1;
            Err(DbError::Unavailable("the database is restarting".into()))
        } else if cut_off_for.is_some() && calls.others_hear_redis {
            Ok(Renewed {
                lost: Vec::new(),
                given_back: true,
            })
        } else {
            Ok(Renewed {
                lost: std::mem::take(&mut calls.to_lose),
                given_back: false,
            })
        };
        Box::pin(std::future::ready(answer))
    }

    fn claim(&self) -> BoxFuture<'_, DbResult<Vec<GameLog>>> {
        let mut calls = self.calls();
        calls.claims.push(Instant::now());
        Box::pin(std::future::ready(Ok(std::mem::take(&mut calls.to_claim))))
    }

    fn lapsed(&self) {
        self.calls().lapses.push(Instant::now());
    }

    fn given_up(&self) -> tokio::sync::watch::Receiver<u64> {
        self.calls()
            .given_up
            .get_or_insert_with(|| tokio::sync::watch::Sender::new(0))
            .subscribe()
    }
}

impl Games for Fake {
    fn restore(&self, logs: Vec<GameLog>) -> BoxFuture<'_, ()> {
        self.calls()
            .restored
            .extend(logs.iter().map(|log| log.game_id));
        Box::pin(std::future::ready(()))
    }

    fn stop(&self, lost: Option<&[GameId]>) {
        self.calls()
            .stopped
            .push((Instant::now(), lost.map(<[GameId]>::to_vec)));
    }

    fn cut_off_for(&self) -> Option<Duration> {
        self.calls().cut_off
    }
}

const SCHEDULE: Schedule = Schedule {
    renew: Duration::from_secs(2),
    retry: Duration::from_millis(500),
    claim: Duration::from_secs(1),
    lease: Duration::from_secs(6),
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

/// When games were stopped, in milliseconds from `start`, and which (`None`: all).
fn stopped_at(start: Instant, calls: &Calls) -> Vec<(u64, Option<Vec<GameId>>)> {
    calls
        .stopped
        .iter()
        .map(|(at, games)| ((*at - start).as_millis() as u64, games.clone()))
        .collect()
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
async fn a_failed_renewal_is_tried_again_soon_and_claims_go_on() {
    let fake = Fake::default();
    fake.calls().failing_renewals = 2;
    let start = run_for(&fake, Duration::from_millis(8_500)).await;
    let calls = fake.calls();
    // Two failures half a second apart, then renewed at 3 s, well within the lease of
    // the start; then every 2 s from there.
    assert_eq!(
        offsets(start, &calls.renewals),
        [2_000, 2_500, 3_000, 5_000, 7_000]
    );
    assert_eq!(calls.failing_renewals, 0);
    assert_eq!(calls.claims.len(), 8);
    assert!(calls.lapses.is_empty() && calls.stopped.is_empty());
}

#[tokio::test(start_paused = true)]
async fn games_whose_lease_a_renewal_finds_lost_stop_at_that_renewal() {
    let fake = Fake::default();
    let lost = vec![GameId(uuid::Uuid::new_v4())];
    fake.calls().to_lose = lost.clone();
    let start = run_for(&fake, Duration::from_millis(4_500)).await;
    let calls = fake.calls();
    let stopped = stopped_at(start, &calls);
    assert_eq!(stopped, [(2_000, Some(lost))]);
    assert!(calls.lapses.is_empty());
}

#[tokio::test(start_paused = true)]
async fn every_game_stops_when_the_leases_lapse_unrenewed_and_once_per_lapse() {
    let fake = Fake::default();
    // Renewed at 2 s, then failing from 4 s to 10 s (13 tries), then renewed again at
    // 10.5 s, then failing for good from 12.5 s.
    let stop = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(run(fake.clone(), SCHEDULE, fake.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    fake.calls().failing_renewals = 13;
    tokio::time::sleep(Duration::from_millis(8_000)).await;
    fake.calls().failing_renewals = usize::MAX;
    tokio::time::sleep(Duration::from_millis(10_000)).await;
    stop.cancel();
    task.await.unwrap();
    let calls = fake.calls();
    let renewals = offsets(start, &calls.renewals);
    assert_eq!(renewals[..3], [2_000, 4_000, 4_500]);
    assert!(renewals.contains(&10_500), "renewed again: {renewals:?}");
    // The renewal sent at 2 s lapses at 8 s; the one sent at 10.5 s at 16.5 s.
    assert_eq!(offsets(start, &calls.lapses), [8_000, 16_500]);
    let stopped = stopped_at(start, &calls);
    assert_eq!(stopped, [(8_000, None), (16_500, None)]);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_hangs_does_not_delay_the_lapse() {
    let fake = Fake::default();
    fake.calls().hanging_renewals = 1;
    let start = run_for(&fake, Duration::from_millis(8_500)).await;
    let calls = fake.calls();
    // Never answered: nothing is renewed after it, and the start's leases lapse at 6 s.
    assert_eq!(offsets(start, &calls.renewals), [2_000]);
    assert_eq!(offsets(start, &calls.lapses), [6_000]);
    assert_eq!(calls.stopped.len(), 1);
    // Claims go on meanwhile.
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

#[tokio::test(start_paused = true)]
async fn a_node_cut_off_from_redis_while_others_hear_it_gives_its_games_up_until_it_hears_again() {
    let fake = Fake::default();
    let stop = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(run(fake.clone(), SCHEDULE, fake.clone(), stop.clone()));
    // Cut off from 2.5 s; the other nodes hear Redis.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    {
        let mut calls = fake.calls();
        calls.cut_off = Some(Duration::from_secs(3));
        calls.others_hear_redis = true;
    }
    // The renewal at 4 s gives every lease up: every game stops then, once; nothing is
    // renewed or claimed from then on while the node stays cut off, and nothing lapses
    // again.
    tokio::time::sleep(Duration::from_millis(6_000)).await;
    {
        let calls = fake.calls();
        assert_eq!(offsets(start, &calls.renewals), [2_000, 4_000]);
        assert_eq!(calls.renewed_cut_off, [None, Some(Duration::from_secs(3))]);
        assert_eq!(offsets(start, &calls.lapses), [4_000]);
        let stopped = stopped_at(start, &calls);
        assert_eq!(stopped, [(4_000, None)]);
        assert_eq!(offsets(start, &calls.claims), [1_000, 2_000, 3_000]);
    }
    // Hearing Redis again (at 8.5 s), it renews and claims as before.
    fake.calls().cut_off = None;
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    stop.cancel();
    task.await.unwrap();
    let calls = fake.calls();
    assert_eq!(
        offsets(start, &calls.renewals),
        [2_000, 4_000, 10_000, 12_000]
    );
    assert!(offsets(start, &calls.claims).contains(&11_000));
    assert_eq!(calls.stopped.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_node_cut_off_from_redis_that_no_other_node_hears_keeps_its_games() {
    let fake = Fake::default();
    fake.calls().cut_off = Some(Duration::from_secs(3));
    let start = run_for(&fake, Duration::from_millis(8_500)).await;
    let calls = fake.calls();
    assert_eq!(
        offsets(start, &calls.renewals),
        [2_000, 4_000, 6_000, 8_000]
    );
    assert!(calls.lapses.is_empty() && calls.stopped.is_empty());
}

#[tokio::test(start_paused = true)]
async fn every_game_stops_when_the_store_gives_every_lease_up_and_renewals_go_on() {
    let fake = Fake::default();
    let stop = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(run(fake.clone(), SCHEDULE, fake.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    fake.calls()
        .given_up
        .as_ref()
        .expect("the loop watches")
        .send_modify(|times| *times += 1);
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    stop.cancel();
    task.await.unwrap();
    let calls = fake.calls();
    let stopped = stopped_at(start, &calls);
    assert_eq!(stopped, [(2_500, None)]);
    assert_eq!(offsets(start, &calls.renewals), [2_000, 4_000, 6_000]);
    assert!(calls.lapses.is_empty());
}
