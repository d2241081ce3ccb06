//! Samples of the local server over a run, for soak tests: every `--sample-every`, its
//! resident memory (VmRSS) and open file descriptors (the entries of `/proc/PID/fd`),
//! with the run's progress at that moment. Each sample is appended to the CSV file (if
//! any) as it is taken, so a run cut short keeps what it measured; all of them, and a
//! summary of the hold after its warm-up, go into the report. A run is bounded by its
//! duration and the interval is at least a second, so the list is too.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::local::Memory;
use crate::stats::Stats;
use crate::status::PhaseCell;

/// The shortest interval allowed: reading `/proc/PID/fd` of a server holding 19,000
/// sockets takes milliseconds, and a soak wants minutes of samples, not thousands.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// The interval when only `--samples-csv` is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// The columns of the CSV file, in order.
pub const CSV_HEADER: &str = "elapsed_s,phase,hold_s,server_rss_bytes,server_fds,players,\
spectators,in_game,games_completed,rounds_per_s,errors,loadtest_rss_bytes,loadtest_fds,\
load_average_1m";

/// One sample: the server's memory and descriptors, and where the run stood.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sample {
    /// Since the run began (the start of the ramp).
    pub elapsed_s: f64,
    /// `ramp`, `hold`, `storm`, `stopping` or `stopped` (after every client has closed).
    pub phase: &'static str,
    /// Since the hold began; `None` before it.
    pub hold_s: Option<f64>,
    pub server_rss_bytes: Option<u64>,
    pub server_fds: Option<u64>,
    /// Players signed in now.
    pub players: i64,
    pub spectators: i64,
    /// Players seated in live games now.
    pub in_game: i64,
    /// Games completed since the run began.
    pub games_completed: u64,
    /// Rounds completed per second since the previous sample; a sample taken within a
    /// second of it (the one at the end of the hold) repeats its rate rather than
    /// dividing a handful of rounds by a fraction of a second.
    pub rounds_per_s: f64,
    /// Errors counted since the run began.
    pub errors: u64,
    /// The load generator itself, to tell its growth from the server's.
    pub loadtest_rss_bytes: Option<u64>,
    pub loadtest_fds: Option<u64>,
    pub load_average_1m: Option<f64>,
}

impl Sample {
    /// The sample as a CSV line (no newline), in the order of [`CSV_HEADER`].
    pub fn csv_line(&self) -> String {
        fn opt<T: ToString>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        format!(
            "{:.1},{},{},{},{},{},{},{},{},{:.1},{},{},{},{}",
            self.elapsed_s,
            self.phase,
            self.hold_s.map(|s| format!("{s:.1}")).unwrap_or_default(),
            opt(self.server_rss_bytes),
            opt(self.server_fds),
            self.players,
            self.spectators,
            self.in_game,
            self.games_completed,
            self.rounds_per_s,
            self.errors,
            opt(self.loadtest_rss_bytes),
            opt(self.loadtest_fds),
            opt(self.load_average_1m),
        )
    }
}

/// Open file descriptors of a process: the entries of `/proc/PID/fd`.
pub fn open_fds(pid: u32) -> Option<u64> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    // Listing our own descriptors lists the one `read_dir` holds open for the listing:
    // leave it out, so that a count does not depend on which process reads it.
    let count = entries.filter(|e| e.is_ok()).count() as u64;
    Some(if pid == std::process::id() {
        count.saturating_sub(1)
    } else {
        count
    })
}

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

/// What the report carries: every sample and the summary.
#[derive(Debug, Clone, Serialize)]
pub struct Samples {
    pub every_s: f64,
    /// Seconds of the hold the summary skips.
    pub warmup_s: f64,
    pub csv: Option<PathBuf>,
    pub summary: Option<Summary>,
    pub samples: Vec<Sample>,
}

/// Takes samples every interval in a task of its own, and on demand.
pub struct Sampler {
    inner: Arc<Inner>,
    every: Duration,
    task: JoinHandle<()>,
}

struct Inner {
    stats: Arc<Stats>,
    server_pid: u32,
    phase: PhaseCell,
    start: Instant,
    hold_start: OnceLock<Instant>,
    state: Mutex<State>,
}

struct State {
    samples: Vec<Sample>,
    last: Option<(Instant, u64)>,
    csv: Option<(PathBuf, File)>,
    csv_error: Option<String>,
}

impl Sampler {
    /// Create the CSV file (if any) and take the first sample now (before any client),
    /// then one every `every`.
    pub fn start(
        every: Duration,
        csv: Option<&Path>,
        stats: Arc<Stats>,
        server_pid: u32,
        phase: PhaseCell,
    ) -> anyhow::Result<Sampler> {
        if every < MIN_INTERVAL {
            bail!("--sample-every must be at least {MIN_INTERVAL:?}");
        }
        let csv = match csv {
            Some(path) => {
                let mut file =
                    File::create(path).with_context(|| format!("creating {}", path.display()))?;
                writeln!(file, "{CSV_HEADER}")
                    .with_context(|| format!("writing {}", path.display()))?;
                Some((path.to_owned(), file))
            }
            None => None,
        };
        let inner = Arc::new(Inner {
            stats,
            server_pid,
            phase,
            start: Instant::now(),
            hold_start: OnceLock::new(),
            state: Mutex::new(State {
                samples: Vec::new(),
                last: None,
                csv,
                csv_error: None,
            }),
        });
        inner.take(None);
        let task = tokio::spawn({
            let inner = inner.clone();
            async move {
                let mut tick = tokio::time::interval_at(Instant::now() + every, every);
                tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    inner.take(None);
                }
            }
        });
        Ok(Sampler { inner, every, task })
    }

    /// The hold began at `at`: later samples say how far into it they are.
    pub fn hold_started(&self, at: Instant) {
        let _ = self.inner.hold_start.set(at);
    }

    /// Take a sample now (e.g. at the very end of the hold).
    pub fn sample_now(&self) {
        self.inner.take(None);
    }

    /// Stop sampling, take a last sample labelled `stopped`, and return them all with
    /// their summary after `warmup_s` seconds of the hold.
    pub fn finish(self, warmup_s: f64) -> Samples {
        self.task.abort();
        self.inner.take(Some("stopped"));
        let mut state = self.inner.state.lock().expect("sampler lock");
        if let Some(error) = &state.csv_error {
            eprintln!("warning: samples CSV incomplete: {error}");
        }
        let samples = std::mem::take(&mut state.samples);
        Samples {
            every_s: self.every.as_secs_f64(),
            warmup_s,
            csv: state.csv.as_ref().map(|(path, _)| path.clone()),
            summary: Summary::of(&samples, warmup_s),
            samples,
        }
    }
}

impl Inner {
    fn take(&self, phase: Option<&'static str>) {
        let now = Instant::now();
        let stats = &self.stats;
        let rounds = stats.rounds.load(Relaxed);
        let own_pid = std::process::id();
        let mut state = self.state.lock().expect("sampler lock");
        let rounds_per_s = match state.last {
            Some((at, before)) if now - at >= MIN_INTERVAL => {
                state.last = Some((now, rounds));
                (rounds - before) as f64 / (now - at).as_secs_f64()
            }
            Some(_) => state.samples.last().map_or(0.0, |s| s.rounds_per_s),
            None => {
                state.last = Some((now, rounds));
                0.0
            }
        };
        let sample = Sample {
            elapsed_s: (now - self.start).as_secs_f64(),
            phase: phase.unwrap_or_else(|| self.phase.get()),
            hold_s: self
                .hold_start
                .get()
                .map(|&h| now.saturating_duration_since(h).as_secs_f64()),
            server_rss_bytes: Memory::of(self.server_pid).map(|m| m.rss),
            server_fds: open_fds(self.server_pid),
            players: stats.connected.load(Relaxed),
            spectators: stats.spectators.load(Relaxed),
            in_game: stats.in_game.load(Relaxed),
            games_completed: stats.games.load(Relaxed),
            rounds_per_s,
            errors: stats.error_total(),
            loadtest_rss_bytes: Memory::of(own_pid).map(|m| m.rss),
            loadtest_fds: open_fds(own_pid),
            load_average_1m: crate::report::load_average(),
        };
        let line = sample.csv_line();
        state.samples.push(sample);
        let State { csv, csv_error, .. } = &mut *state;
        if let (Some((_, file)), None) = (csv.as_mut(), csv_error.as_ref()) {
            if let Err(e) = writeln!(file, "{line}") {
                *csv_error = Some(e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(phase: &'static str, hold_s: Option<f64>, rss: u64, fds: u64) -> Sample {
        sample_with(phase, hold_s, rss, fds, 100.0, 0)
    }

    fn sample_with(
        phase: &'static str,
        hold_s: Option<f64>,
        rss: u64,
        fds: u64,
        rounds_per_s: f64,
        errors: u64,
    ) -> Sample {
        Sample {
            elapsed_s: hold_s.unwrap_or(0.0) + 10.0,
            phase,
            hold_s,
            server_rss_bytes: Some(rss),
            server_fds: Some(fds),
            players: 0,
            spectators: 0,
            in_game: 0,
            games_completed: 0,
            rounds_per_s,
            errors,
            loadtest_rss_bytes: None,
            loadtest_fds: None,
            load_average_1m: None,
        }
    }

    #[test]
    fn open_fds_counts_this_process_s_descriptors() {
        let pid = std::process::id();
        let before = open_fds(pid).expect("/proc/self/fd is readable");
        assert!(before >= 3, "stdin, stdout and stderr at least: {before}");
        let files: Vec<File> = (0..5)
            .map(|_| tempfile::tempfile().expect("a temporary file"))
            .collect();
        // Other tests run in parallel threads and may open files of their own.
        let during = open_fds(pid).expect("readable");
        assert!(during >= before + 5, "{before} then {during}");
        drop(files);
        assert_eq!(open_fds(u32::MAX), None, "no such process");
    }

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

    #[test]
    fn a_csv_line_has_a_field_per_column() {
        let line = sample("hold", Some(12.345), 1024, 9).csv_line();
        assert_eq!(line, "22.3,hold,12.3,1024,9,0,0,0,0,100.0,0,,,");
        assert_eq!(
            line.split(',').count(),
            CSV_HEADER.split(',').count(),
            "{line}"
        );
    }

    #[tokio::test]
    async fn a_sampler_samples_a_process_and_writes_its_csv() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("samples.csv");
        let phase = PhaseCell::new("ramp");
        let sampler = Sampler::start(
            Duration::from_secs(1),
            Some(&path),
            Arc::new(Stats::default()),
            std::process::id(),
            phase.clone(),
        )
        .expect("a sampler");
        tokio::time::sleep(Duration::from_millis(50)).await;
        sampler.hold_started(Instant::now());
        phase.set("hold");
        sampler.sample_now();
        // A hold of 0 s has no warm-up: the hold sample is summarised.
        let samples = sampler.finish(0.0);
        let phases: Vec<&str> = samples.samples.iter().map(|s| s.phase).collect();
        assert_eq!(phases, ["ramp", "hold", "stopped"]);
        assert!(samples.samples.iter().all(|s| s.server_rss_bytes > Some(0)));
        assert!(samples.samples.iter().all(|s| s.server_fds >= Some(3)));
        assert_eq!(samples.samples[0].hold_s, None);
        assert!(samples.samples[1].hold_s.is_some());
        let summary = samples.summary.expect("a hold sample");
        assert_eq!(summary.samples, 1);
        let text = std::fs::read_to_string(&path).expect("the CSV");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], CSV_HEADER);
        assert!(lines[2].contains(",hold,"), "{text}");
    }

    #[test]
    fn sampling_faster_than_a_second_is_refused() {
        let refused = Sampler::start(
            Duration::from_millis(500),
            None,
            Arc::new(Stats::default()),
            1,
            PhaseCell::new("ramp"),
        );
        assert!(refused.is_err());
    }
}
