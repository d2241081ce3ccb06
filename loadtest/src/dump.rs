//! A generator child's raw figures (`--processes`): its counters, its latency histograms
//! as recorded (value, count) pairs and its errors, written as JSON for the parent, which
//! adds every child's into one `Stats` and builds the run's report from that: percentiles
//! of the merged histograms, never medians of the children's.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use anyhow::Context;
use elementals_client::protocol::messages::GameId;
use serde::{Deserialize, Serialize};

use crate::ctx::Ctx;
use crate::report::Counters;
use crate::stats::{Latency, Stats};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Dump {
    pub counters: BTreeMap<String, u64>,
    pub peaks: BTreeMap<String, i64>,
    pub histograms: BTreeMap<String, Vec<(u64, u64)>>,
    pub errors: BTreeMap<String, u64>,
    pub at_start: Counters,
    pub at_end: Counters,
    pub hold_s: f64,
    pub ramp_s: f64,
    pub in_game_at_end: i64,
    pub connected_at_end: i64,
    pub loadtest_cores: Option<f64>,
    /// With `--kill-node`: per game, the last round whose result a player received.
    pub acked: Vec<(GameId, u32)>,
}

/// The counters a dump carries, by name.
fn counters(stats: &Stats) -> [(&'static str, &AtomicU64); 11] {
    [
        ("rounds", &stats.rounds),
        ("games", &stats.games),
        ("games_lost_on_time", &stats.games_lost_on_time),
        ("moves_after_game_over", &stats.moves_after_game_over),
        ("frames_out", &stats.frames_out),
        ("frames_in", &stats.frames_in),
        ("spectator_resyncs", &stats.spectator_resyncs),
        ("resume_retries", &stats.resume_retries),
        ("failover_reconnects", &stats.failover_reconnects),
        ("game_not_back_retries", &stats.game_not_back_retries),
        ("quiet_resumes", &stats.quiet_resumes),
    ]
}

/// The gauges' peaks a dump carries (summed over the children: each child's peak, so
/// the sum is at least the true peak of the whole).
fn peaks(stats: &Stats) -> [(&'static str, &AtomicI64); 2] {
    [
        ("connected_peak", &stats.connected_peak),
        ("spectators_peak", &stats.spectators_peak),
    ]
}

fn histograms(stats: &Stats) -> [(&'static str, &Latency); 4] {
    [
        ("commit_ack", &stats.commit_ack),
        ("result", &stats.result),
        ("spectator_result", &stats.spectator_result),
        ("resume", &stats.resume),
    ]
}

impl Dump {
    pub fn take(
        ctx: &Ctx,
        (at_start, at_end): (Counters, Counters),
        (hold_s, ramp_s): (f64, f64),
        (in_game_at_end, connected_at_end): (i64, i64),
        loadtest_cores: Option<f64>,
    ) -> Dump {
        let stats = &ctx.stats;
        let mut counters: BTreeMap<String, u64> = counters(stats)
            .iter()
            .map(|(k, v)| (k.to_string(), v.load(Relaxed)))
            .collect();
        counters.insert(
            "sign_in_retries".into(),
            stats.sign_in_retries.load(Relaxed),
        );
        counters.insert(
            "announced_rate".into(),
            u64::from(stats.announced_rate.load(Relaxed)),
        );
        Dump {
            counters,
            peaks: peaks(stats)
                .iter()
                .map(|(k, v)| (k.to_string(), v.load(Relaxed)))
                .collect(),
            histograms: histograms(stats)
                .iter()
                .map(|(k, h)| (k.to_string(), h.recorded()))
                .collect(),
            errors: stats.errors(),
            at_start,
            at_end,
            hold_s,
            ramp_s,
            in_game_at_end,
            connected_at_end,
            loadtest_cores,
            acked: ctx.acked.iter().map(|e| (*e.key(), *e.value())).collect(),
        }
    }

    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string(self)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }

    pub fn read(path: &Path) -> anyhow::Result<Dump> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(serde_json::from_str(&text)?)
    }

    /// Adds this child's figures to `stats`: counters and peaks summed, histograms
    /// merged value by value, errors summed by kind.
    pub fn add_to(&self, stats: &Stats) {
        for (name, counter) in counters(stats) {
            counter.fetch_add(self.counters.get(name).copied().unwrap_or(0), Relaxed);
        }
        let get = |name: &str| self.counters.get(name).copied().unwrap_or(0);
        stats
            .sign_in_retries
            .fetch_add(get("sign_in_retries"), Relaxed);
        stats
            .announced_rate
            .fetch_max(get("announced_rate") as u32, Relaxed);
        for (name, peak) in peaks(stats) {
            peak.fetch_add(self.peaks.get(name).copied().unwrap_or(0), Relaxed);
        }
        for (name, latency) in histograms(stats) {
            if let Some(recorded) = self.histograms.get(name) {
                latency.add_recorded(recorded);
            }
        }
        for (kind, n) in &self.errors {
            stats.errors_add(kind, *n);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn merged_histograms_give_the_percentiles_of_all_the_samples_together() {
        // One child saw 99 fast results, another one slow one and 98 slower ones: the
        // merged p50 is of all 198, not the median of the two children's medians.
        let (a, b, all) = (Latency::default(), Latency::default(), Latency::default());
        for ms in 1..=99 {
            a.record(Duration::from_millis(ms));
            all.record(Duration::from_millis(ms));
        }
        for ms in 200..=298 {
            b.record(Duration::from_millis(ms));
            all.record(Duration::from_millis(ms));
        }
        let merged = Latency::default();
        merged.add_recorded(&a.recorded());
        merged.add_recorded(&b.recorded());
        let (m, t) = (merged.percentiles(), all.percentiles());
        assert_eq!(m.count, 198);
        assert_eq!((m.p50, m.p90, m.p99, m.max), (t.p50, t.p90, t.p99, t.max));
    }
}
