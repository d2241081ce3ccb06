//! Samples of the local server over a run, for soak tests: every `--sample-every`, its
//! resident memory (VmRSS) and open file descriptors (the entries of `/proc/PID/fd`),
//! with the run's progress at that moment. Each sample is appended to the CSV file (if
//! any) as it is taken, so a run cut short keeps what it measured; all of them, and a
//! summary of the hold after its warm-up, go into the report. A run is bounded by its
//! duration and the interval is at least a second, so the list is too.
//!
//! - `sample`: one [`Sample`], its CSV line, and counting a process's descriptors.
//! - `summary`: the verdict on a hold: each value's [`Trend`] and the [`Summary`].

mod sample;
mod summary;

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

use sample::{open_fds, Sample, CSV_HEADER};
use summary::Summary;
pub use summary::{warmup_s, Trend};

/// The shortest interval allowed: reading `/proc/PID/fd` of a server holding 19,000
/// sockets takes milliseconds, and a soak wants minutes of samples, not thousands.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// The interval when only `--samples-csv` is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

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
