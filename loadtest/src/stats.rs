//! What a run counts: gauges (connected, in game), counters (rounds, games, messages),
//! latency histograms and errors by kind. Shared by every simulated client.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are recorded in microseconds, up to a minute; longer ones are clamped.
const MAX_LATENCY_US: u64 = 60_000_000;

/// One latency distribution. std Mutex: recording holds it for a few nanoseconds and
/// never across an `.await`.
pub struct Latency(Mutex<Histogram<u64>>);

impl Default for Latency {
    fn default() -> Self {
        Latency(Mutex::new(
            Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds"),
        ))
    }
}

/// Percentiles of a [`Latency`], in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    pub fn record(&self, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_LATENCY_US);
        self.0.lock().expect("histogram lock").saturating_record(us);
    }

    pub fn percentiles(&self) -> Percentiles {
        let h = self.0.lock().expect("histogram lock");
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }

    pub fn reset(&self) {
        self.0.lock().expect("histogram lock").reset();
    }

    /// Every value recorded, as (value, count) pairs: the histogram as another process
    /// can add it to its own (`add_recorded`).
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        let h = self.0.lock().expect("histogram lock");
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// Adds what another histogram recorded (`recorded`).
    pub fn add_recorded(&self, recorded: &[(u64, u64)]) {
        let mut h = self.0.lock().expect("histogram lock");
        for &(value, count) in recorded {
            h.saturating_record_n(value.clamp(1, MAX_LATENCY_US), count);
        }
    }
}

/// Everything a run measures.
#[derive(Default)]
pub struct Stats {
    /// Connections signed in now.
    pub connected: AtomicI64,
    pub connected_peak: AtomicI64,
    /// Players seated in a live game now.
    pub in_game: AtomicI64,
    /// Spectators signed in now, and the most at once.
    pub spectators: AtomicI64,
    pub spectators_peak: AtomicI64,
    /// Spectators watching a game now.
    pub watching: AtomicI64,
    /// Counted once per game (by the player in seat one).
    pub rounds: AtomicU64,
    pub games: AtomicU64,
    /// Games ended by a bank running out where the players' thinking could drain it (their
    /// think time exceeds the increment): a legitimate end, not an error. Once per game.
    pub games_lost_on_time: AtomicU64,
    /// A `commit` or `reveal` answered `game_over` after the player had seen its game end:
    /// the move crossed the end on the wire (the opponent's clock ran out, say), not an
    /// error of the server's.
    pub moves_after_game_over: AtomicU64,
    /// Frames sent and received by every simulated connection.
    pub frames_out: AtomicU64,
    pub frames_in: AtomicU64,
    /// Fresh snapshots a spectator needed after falling behind (allowed by the protocol).
    pub spectator_resyncs: AtomicU64,
    /// Reconnects retried after being refused or failing during a storm.
    pub resume_retries: AtomicU64,
    /// With `--kill-node`: players whose connection dropped (their node died) and who
    /// reconnected to another node to resume.
    pub failover_reconnects: AtomicU64,
    /// ... and resumed too soon: not seated, their game not yet claimed; tried again.
    pub game_not_back_retries: AtomicU64,
    /// Players whose game went quiet (`player/failover.rs`) and who resumed to find it.
    pub quiet_resumes: AtomicU64,
    /// First sign-ins answered `rate_limited` (the server's password checks were busy)
    /// and tried again a few seconds later, as the protocol asks of clients.
    pub sign_in_retries: AtomicU64,
    /// `commit` sent to its `ok`.
    pub commit_ack: Latency,
    /// The round's last `reveal` sent to `round_result` at each player.
    pub result: Latency,
    /// The round's last `reveal` sent to `round_result` at each spectator.
    pub spectator_result: Latency,
    /// Per round, the last spectator's delay (the fan-out's tail).
    pub fanout_last: Latency,
    /// Per round, the last spectator's arrival after the result first reached a player.
    pub fanout_from_result: Latency,
    /// Connection dropped to the resumed session back in its game (reconnect storm).
    pub resume: Latency,
    /// The message rate limit the server announced (`welcome.limits`), once a player
    /// has signed in.
    pub announced_rate: AtomicU32,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Stats {
    pub fn error(&self, kind: impl Into<String>) {
        let kind = kind.into();
        tracing::debug!(%kind, "error");
        *self
            .errors
            .lock()
            .expect("errors lock")
            .entry(kind)
            .or_default() += 1;
    }

    /// Adds `n` errors of `kind` (another process's, `dump.rs`).
    pub fn errors_add(&self, kind: &str, n: u64) {
        *self
            .errors
            .lock()
            .expect("errors lock")
            .entry(kind.to_owned())
            .or_default() += n;
    }

    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.errors.lock().expect("errors lock").clone()
    }

    pub fn error_total(&self) -> u64 {
        self.errors.lock().expect("errors lock").values().sum()
    }

    pub fn signed_in(&self) {
        let now = self.connected.fetch_add(1, Relaxed) + 1;
        self.connected_peak.fetch_max(now, Relaxed);
    }

    pub fn signed_out(&self) {
        self.connected.fetch_sub(1, Relaxed);
    }

    pub fn spectator_in(&self) {
        let now = self.spectators.fetch_add(1, Relaxed) + 1;
        self.spectators_peak.fetch_max(now, Relaxed);
    }

    pub fn spectator_out(&self) {
        self.spectators.fetch_sub(1, Relaxed);
    }

    pub fn frames(&self) -> u64 {
        self.frames_in.load(Relaxed) + self.frames_out.load(Relaxed)
    }

    /// Forget the latencies of the ramp, so percentiles describe the steady state.
    pub fn reset_latencies(&self) {
        for l in [
            &self.commit_ack,
            &self.result,
            &self.spectator_result,
            &self.fanout_last,
            &self.fanout_from_result,
        ] {
            l.reset();
        }
    }
}

/// A gauge held up while this lives: every exit path counts itself down.
pub struct Gauge {
    stats: Arc<Stats>,
    which: fn(&Stats) -> &AtomicI64,
}

impl Gauge {
    pub fn up(stats: Arc<Stats>, which: fn(&Stats) -> &AtomicI64) -> Gauge {
        which(&stats).fetch_add(1, Relaxed);
        Gauge { stats, which }
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        (self.which)(&self.stats).fetch_sub(1, Relaxed);
    }
}
