//! `Summary`: the verdict on a soak's hold after its warm-up, with each value's `Trend`
//! (ends, extremes, growth and slope).

use serde::Serialize;

use super::sample::Sample;

/// How a value moved over the hold after its warm-up.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Trend {
    /// At the first sample after the warm-up.
    pub first: u64,
    /// At the end of the hold.
    pub last: u64,
    pub min: u64,
    pub max: u64,
    /// (last - first) / first, in percent.
    pub growth_percent: f64,
    /// Least-squares slope over those samples, per minute of the hold.
    pub slope_per_min: f64,
}

impl Trend {
    /// The trend of `(hold seconds, value)` points, in time order; `None` if empty.
    pub fn of(points: &[(f64, u64)]) -> Option<Trend> {
        let (&(_, first), &(_, last)) = (points.first()?, points.last()?);
        let n = points.len() as f64;
        let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_v = points.iter().map(|p| p.1 as f64).sum::<f64>() / n;
        let (mut cov, mut var) = (0.0, 0.0);
        for &(t, v) in points {
            cov += (t - mean_t) * (v as f64 - mean_v);
            var += (t - mean_t) * (t - mean_t);
        }
        let slope_per_s = if var > 0.0 { cov / var } else { 0.0 };
        Some(Trend {
            first,
            last,
            min: points.iter().map(|p| p.1).min()?,
            max: points.iter().map(|p| p.1).max()?,
            growth_percent: if first > 0 {
                100.0 * (last as f64 - first as f64) / first as f64
            } else {
                0.0
            },
            slope_per_min: slope_per_s * 60.0,
        })
    }
}

/// The warm-up at the start of a hold of `hold_s` seconds that a soak's verdict skips:
/// 20 % of the hold, at least 2 minutes, but never more than half of it.
pub fn warmup_s(hold_s: f64) -> f64 {
    (0.2 * hold_s).max(120.0).min(0.5 * hold_s)
}

/// The server's memory and descriptors over the hold after its warm-up.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Samples from this many seconds into the hold on are summarised.
    pub warmup_s: f64,
    /// How many samples that is, and the hold time of the first and the last.
    pub samples: usize,
    pub from_hold_s: f64,
    pub to_hold_s: f64,
    pub server_rss_bytes: Option<Trend>,
    pub server_fds: Option<Trend>,
    /// Of those samples, how many saw no round completed since the previous one: with
    /// players playing, a stalled server (flat figures then mean nothing).
    pub samples_without_rounds: usize,
    /// Errors counted from the first of those samples to the last.
    pub errors: u64,
    /// Descriptors at the first sample, before any client (taken as soon as the server
    /// listens, before it has opened its database and game log: a few fewer than at
    /// rest), and after the last client had closed: a server that releases every
    /// connection's socket comes back to about where it started.
    pub server_fds_before_clients: Option<u64>,
    pub server_fds_after_clients: Option<u64>,
}

impl Summary {
    /// Summarise the samples taken in the `hold` phase (not during a reconnect storm)
    /// from `warmup` seconds into it on. `None` without any such sample.
    pub fn of(samples: &[Sample], warmup: f64) -> Option<Summary> {
        let steady: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.phase == "hold" && s.hold_s.is_some_and(|h| h >= warmup))
            .collect();
        let points = |value: fn(&Sample) -> Option<u64>| -> Vec<(f64, u64)> {
            steady
                .iter()
                .filter_map(|s| Some((s.hold_s?, value(s)?)))
                .collect()
        };
        Some(Summary {
            warmup_s: warmup,
            samples: steady.len(),
            from_hold_s: steady.first()?.hold_s?,
            to_hold_s: steady.last()?.hold_s?,
            server_rss_bytes: Trend::of(&points(|s| s.server_rss_bytes)),
            server_fds: Trend::of(&points(|s| s.server_fds)),
            samples_without_rounds: steady.iter().filter(|s| s.rounds_per_s == 0.0).count(),
            errors: steady.last()?.errors.saturating_sub(steady.first()?.errors),
            server_fds_before_clients: samples.first().and_then(|s| s.server_fds),
            server_fds_after_clients: samples
                .iter()
                .rev()
                .find(|s| s.phase == "stopped")
                .and_then(|s| s.server_fds),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::sample::tests::{sample, sample_with};
    use super::*;

    #[test]
    fn the_warmup_is_a_fifth_of_the_hold_at_least_two_minutes_at_most_half() {
        assert_eq!(warmup_s(1800.0), 360.0);
        assert_eq!(warmup_s(300.0), 120.0);
        assert_eq!(warmup_s(60.0), 30.0);
    }

    #[test]
    fn a_trend_has_its_ends_extremes_growth_and_slope() {
        // 1,000 growing by 100 a minute, with a dip.
        let points = [(0.0, 1000), (60.0, 1100), (120.0, 900), (180.0, 1300)];
        let t = Trend::of(&points).expect("points");
        assert_eq!((t.first, t.last, t.min, t.max), (1000, 1300, 900, 1300));
        assert!((t.growth_percent - 30.0).abs() < 1e-9);
        // Least squares: mean t 90, mean v 1075; cov = (-90)(-75) + (-30)(25) + 30(-175)
        // + 90(225) = 21,000; var = 8100 + 900 + 900 + 8100 = 18,000.
        assert!((t.slope_per_min - 60.0 * 21_000.0 / 18_000.0).abs() < 1e-9);

        let flat = Trend::of(&[(0.0, 50), (10.0, 50)]).expect("points");
        assert_eq!((flat.growth_percent, flat.slope_per_min), (0.0, 0.0));
        let one = Trend::of(&[(5.0, 7)]).expect("a point");
        assert_eq!((one.first, one.last, one.slope_per_min), (7, 7, 0.0));
        assert_eq!(Trend::of(&[]), None);
    }

    #[test]
    fn the_summary_skips_the_ramp_the_warmup_and_storms() {
        let samples = vec![
            sample("ramp", None, 10, 20),
            sample("ramp", None, 100, 4000),
            sample("hold", Some(0.0), 200, 4020),
            sample("hold", Some(100.0), 300, 4020),
            sample("hold", Some(150.0), 400, 4020),
            sample("storm", Some(200.0), 900, 9000),
            sample_with("hold", Some(250.0), 420, 4021, 0.0, 3),
            sample_with("hold", Some(300.0), 440, 4020, 100.0, 5),
            sample("stopping", Some(301.0), 440, 4020),
            sample("stopped", Some(303.0), 430, 21),
        ];
        let s = Summary::of(&samples, warmup_s(300.0)).expect("samples after the warm-up");
        assert_eq!(s.warmup_s, 120.0);
        assert_eq!((s.samples, s.from_hold_s, s.to_hold_s), (3, 150.0, 300.0));
        let rss = s.server_rss_bytes.expect("rss");
        assert_eq!(
            (rss.first, rss.last, rss.min, rss.max),
            (400, 440, 400, 440)
        );
        assert!((rss.growth_percent - 10.0).abs() < 1e-9);
        let fds = s.server_fds.expect("fds");
        assert_eq!((fds.first, fds.last, fds.max), (4020, 4020, 4021));
        assert_eq!(fds.growth_percent, 0.0);
        assert_eq!((s.samples_without_rounds, s.errors), (1, 5));
        assert_eq!(s.server_fds_before_clients, Some(20));
        assert_eq!(s.server_fds_after_clients, Some(21));

        assert_eq!(
            Summary::of(&samples[..3], warmup_s(300.0)),
            None,
            "nothing after warm-up"
        );
    }
}
