//! The live status line: once a second, what is connected, in game, the round rate, the
//! p99 result latency so far, errors and the local server's memory. On a terminal it
//! rewrites one line; otherwise it prints a line every five seconds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::local::Memory;
use crate::stats::Stats;

/// The run's phase (`ramp`, `hold`, `storm`, `stopping`), shared with whoever reports it.
#[derive(Clone)]
pub struct PhaseCell(Arc<Mutex<&'static str>>);

impl PhaseCell {
    pub fn new(phase: &'static str) -> PhaseCell {
        PhaseCell(Arc::new(Mutex::new(phase)))
    }

    pub fn get(&self) -> &'static str {
        *self.0.lock().expect("phase lock")
    }

    pub fn set(&self, phase: &'static str) {
        *self.0.lock().expect("phase lock") = phase;
    }
}

pub struct Status {
    phase: PhaseCell,
    peak_rss: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Status {
    pub fn start(stats: Arc<Stats>, players: u64, server_pid: Option<u32>) -> Status {
        let phase = PhaseCell::new("ramp");
        let peak_rss = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(report_every_second(
            stats,
            players,
            server_pid,
            phase.clone(),
            peak_rss.clone(),
        ));
        Status {
            phase,
            peak_rss,
            task,
        }
    }

    pub fn phase(&self, phase: &'static str) {
        self.phase.set(phase);
    }

    /// The phase, for the sampler's records.
    pub fn phase_cell(&self) -> PhaseCell {
        self.phase.clone()
    }

    /// The highest server RSS sampled (a fallback when VmHWM cannot be read).
    pub fn peak_rss(&self) -> Option<u64> {
        Some(self.peak_rss.load(Relaxed)).filter(|&p| p > 0)
    }

    pub fn finish(self) {
        self.task.abort();
        if std::io::stderr().is_terminal() {
            eprintln!();
        }
    }
}

async fn report_every_second(
    stats: Arc<Stats>,
    players: u64,
    server_pid: Option<u32>,
    phase: PhaseCell,
    peak_rss: Arc<AtomicU64>,
) {
    let terminal = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_rounds = 0;
    loop {
        tick.tick().await;
        let rounds = stats.rounds.load(Relaxed);
        let rss = server_pid.and_then(Memory::of).map(|m| m.rss);
        if let Some(rss) = rss {
            peak_rss.fetch_max(rss, Relaxed);
        }
        let elapsed = start.elapsed().as_secs();
        let line = format!(
            "[{elapsed:>4}s {:<8}] players {}/{players}  spectators {}  in game {}  rounds/s {}  \
             p99 result {:.1} ms  errors {}{}",
            phase.get(),
            stats.connected.load(Relaxed),
            stats.spectators.load(Relaxed),
            stats.in_game.load(Relaxed),
            rounds - last_rounds,
            stats.result.percentiles().p99,
            stats.error_total(),
            rss.map(|r| format!("  server rss {} MiB", r >> 20))
                .unwrap_or_default(),
        );
        last_rounds = rounds;
        if terminal {
            eprint!("\r{line}\x1b[K");
            let _ = std::io::stderr().flush();
        } else if elapsed.is_multiple_of(5) {
            eprintln!("{line}");
        }
    }
}
