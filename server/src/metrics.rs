//! Process-wide counters and the result-latency histogram, rendered for `GET /metrics`
//! in the Prometheus text format. Plain atomics: updating one never waits.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds, in seconds, of the result-latency histogram's buckets.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// One more in a count for as long as it lives: a gauge's connection in a handshake, a
/// password hash waiting its turn.
pub struct Counted<'a> {
    count: &'a AtomicU64,
    /// The count before this one joined it.
    pub before: u64,
}

impl<'a> Counted<'a> {
    pub fn new(count: &'a AtomicU64) -> Counted<'a> {
        let before = count.fetch_add(1, Relaxed);
        Counted { count, before }
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Relaxed);
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    pub connections: AtomicU64,
    pub connections_total: AtomicU64,
    pub players_queued: AtomicU64,
    /// Games against the computer in progress on this node (the lobby keeps the
    /// `--max-bot-games` cap over the games it starts).
    pub bot_games: AtomicU64,
    pub live_games: AtomicU64,
    /// Hibernated games woken, by a command or their deadline.
    pub games_woken: AtomicU64,
    pub games_started: AtomicU64,
    pub games_finished: AtomicU64,
    /// Cluster mode: games this node claimed after their node's lease lapsed.
    pub games_claimed: AtomicU64,
    /// Cluster mode: games stopped here because another node claimed their lease.
    pub games_moved: AtomicU64,
    pub rounds_resolved: AtomicU64,
    pub messages_in: AtomicU64,
    pub messages_out: AtomicU64,
    pub spectators: AtomicU64,
    /// TCP connections in their HTTP handshake (`accept`).
    pub handshakes: AtomicU64,
    /// Accepted TCP connections waiting for a handshake slot.
    pub handshakes_waiting: AtomicU64,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
}

impl Metrics {
    /// A game woke (its actor counts in `live_games` again).
    pub fn note_woken(&self) {
        self.games_woken.fetch_add(1, Relaxed);
    }

    /// Record the time from a round's last reveal arriving to its result being queued.
    pub fn observe_result_latency(&self, d: Duration) {
        let secs = d.as_secs_f64();
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Relaxed);
        self.latency_sum_us.fetch_add(d.as_micros() as u64, Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let gauges = [
            (
                "elementals_connections",
                "Open WebSocket connections.",
                &self.connections,
            ),
            (
                "elementals_players_queued",
                "Players waiting in pools (counted where the lobby runs; 0 on a cluster's other nodes).",
                &self.players_queued,
            ),
            (
                "elementals_bot_games",
                "Games against the computer in progress on this node.",
                &self.bot_games,
            ),
            (
                "elementals_live_games",
                "Games in progress.",
                &self.live_games,
            ),
            (
                "elementals_spectators",
                "Spectators attached to games.",
                &self.spectators,
            ),
            (
                "elementals_handshakes",
                "TCP connections in their HTTP handshake.",
                &self.handshakes,
            ),
            (
                "elementals_handshakes_waiting",
                "Accepted TCP connections waiting for a handshake slot.",
                &self.handshakes_waiting,
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}",
                v.load(Relaxed)
            );
        }
        let counters = [
            (
                "elementals_connections_total",
                "WebSocket connections accepted.",
                &self.connections_total,
            ),
            (
                "elementals_games_started_total",
                "Games started.",
                &self.games_started,
            ),
            (
                "elementals_games_finished_total",
                "Games finished.",
                &self.games_finished,
            ),
            (
                "elementals_games_claimed_total",
                "Games this node claimed after their node's lease lapsed (cluster mode).",
                &self.games_claimed,
            ),
            (
                "elementals_games_moved_total",
                "Games stopped here because another node claimed their lease (cluster mode).",
                &self.games_moved,
            ),
            (
                "elementals_games_woken_total",
                "Hibernated games woken, by a command or their deadline.",
                &self.games_woken,
            ),
            (
                "elementals_rounds_resolved_total",
                "Rounds resolved.",
                &self.rounds_resolved,
            ),
            (
                "elementals_messages_in_total",
                "Messages received from clients.",
                &self.messages_in,
            ),
            (
                "elementals_messages_out_total",
                "Messages sent to clients.",
                &self.messages_out,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Relaxed)
            );
        }
        let name = "elementals_result_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Last reveal received to round result queued.\n# TYPE {name} histogram"
        );
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Relaxed)
            );
        }
        let count = self.latency_count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.latency_sum_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::default();
        m.observe_result_latency(Duration::from_micros(300));
        m.observe_result_latency(Duration::from_millis(20));
        let text = m.render();
        assert!(text.contains("elementals_result_latency_seconds_bucket{le=\"0.0005\"} 1"));
        assert!(text.contains("elementals_result_latency_seconds_bucket{le=\"0.025\"} 2"));
        assert!(text.contains("elementals_result_latency_seconds_count 2"));
    }
}
