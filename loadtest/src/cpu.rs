//! Cores each process of a cluster run kept busy during the hold: the nodes, the
//! generator children, Redis and PostgreSQL (the backends serving the run's database, and
//! its WAL writer), read from `/proc` at the hold's start and end. Redis and the WAL
//! writer serve every user of this machine, so their share may include others' work.

use std::collections::BTreeMap;

use serde::Serialize;
use tokio::time::Instant;

use crate::local::cpu_seconds;

/// A process watched, under the name it is reported by (several may share one name:
/// their CPU is added).
#[derive(Debug, Clone)]
pub struct Watched {
    pub name: String,
    pub pid: u32,
}

/// CPU seconds of every watched process at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    seconds: Vec<(String, u32, Option<f64>)>,
}

pub fn snapshot(watched: &[Watched]) -> Snapshot {
    Snapshot {
        at: Instant::now(),
        seconds: watched
            .iter()
            .map(|w| (w.name.clone(), w.pid, cpu_seconds(w.pid)))
            .collect(),
    }
}

/// Cores busy per name between two snapshots; a name none of whose processes lived
/// through both (a killed node) is left out.
pub fn cores(start: &Snapshot, end: &Snapshot) -> Vec<ProcessCores> {
    let span = end.at.duration_since(start.at).as_secs_f64().max(1e-9);
    let mut by_name: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for (name, pid, before) in &start.seconds {
        let after = end
            .seconds
            .iter()
            .find(|(_, p, _)| p == pid)
            .and_then(|(_, _, s)| *s);
        if let (Some(before), Some(after)) = (before, after) {
            let entry = by_name.entry(name.as_str()).or_default();
            entry.0 += (after - before) / span;
            entry.1 += 1;
        }
    }
    by_name
        .into_iter()
        .map(|(name, (cores, processes))| ProcessCores {
            name: name.to_owned(),
            processes,
            cores,
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessCores {
    pub name: String,
    /// How many processes the figure adds up.
    pub processes: usize,
    pub cores: f64,
}

/// Whether `watched` is one of `services`' processes.
pub fn is_service(watched: &Watched) -> bool {
    SERVICES.contains(&watched.name.as_str())
}

const SERVICES: [&str; 3] = [
    "redis (shared)",
    "postgres (the run's connections)",
    "postgres wal writer (shared)",
];

/// Redis, and PostgreSQL's backends connected to `database` and its WAL writer, found in
/// `/proc` by their command lines.
pub fn services(database: &str) -> Vec<Watched> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let name = if cmdline.starts_with("redis-server") {
            "redis (shared)"
        } else if cmdline.starts_with("postgres:") && cmdline.contains(database) {
            "postgres (the run's connections)"
        } else if cmdline.starts_with("postgres:") && cmdline.contains("walwriter") {
            "postgres wal writer (shared)"
        } else {
            continue;
        };
        found.push(Watched {
            name: name.to_owned(),
            pid,
        });
    }
    found
}
