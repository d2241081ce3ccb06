//! What a run over a cluster or several generator processes adds to the report: the
//! cores each process kept busy during the hold, and the failover's figures.

use serde::Serialize;

use crate::cpu::ProcessCores;
use crate::failover::FailoverReport;
use crate::stats::Percentiles;

use super::Report;

#[derive(Debug, Clone, Serialize)]
pub struct ClusterReport {
    /// Servers the players were spread over.
    pub nodes: usize,
    /// Generator processes whose figures were merged.
    pub processes: usize,
    pub spread: String,
    /// Each server's open WebSocket connections (`/metrics`) a quarter into the hold;
    /// `None` for one that did not answer.
    pub connections_at_hold_end: Vec<Option<u64>>,
    /// Cores each process (or group) kept busy from the last generator's hold start to the
    /// first one's end.
    pub cores: Vec<ProcessCores>,
    pub failover: Option<FailoverReport>,
}

impl Report {
    pub fn with_cluster(mut self, cluster: ClusterReport) -> Report {
        self.cluster = Some(cluster);
        self
    }

    /// The cluster's rows of the table.
    pub(super) fn cluster_rows(&self, row: &mut dyn FnMut(&str, String)) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        row(
            "servers / generator processes",
            format!(
                "{} / {} (spread {})",
                cluster.nodes, cluster.processes, cluster.spread
            ),
        );
        let open: Vec<String> = cluster
            .connections_at_hold_end
            .iter()
            .map(|n| n.map_or("-".into(), |n| n.to_string()))
            .collect();
        row("  connections per server", open.join(" / "));
        for c in &cluster.cores {
            row(
                &format!("  cores: {}", c.name),
                format!("{:.2} ({} processes)", c.cores, c.processes),
            );
        }
        let Some(f) = &cluster.failover else {
            return;
        };
        let ms = |p: &Percentiles| {
            format!(
                "p50 {:.0}  p99 {:.0}  max {:.0} ms  (n={})",
                p.p50, p.p99, p.max, p.count
            )
        };
        row(
            "failover: node killed",
            format!(
                "{} (held {} games: {} claimed, {} played on)",
                f.node, f.games, f.claimed, f.played_on
            ),
        );
        row("  kill to claimed", ms(&f.claim_ms));
        row(
            "  acknowledged rounds lost",
            format!(
                "{} of {} ({} games of {} checked)",
                f.rounds_lost, f.rounds_acknowledged, f.games_with_rounds_lost, f.games_checked
            ),
        );
        row(
            "  players reconnected / retried",
            format!("{} / {}", f.reconnects, f.game_not_back_retries),
        );
        row("  drop to resumed", ms(&f.resume_ms));
    }
}
