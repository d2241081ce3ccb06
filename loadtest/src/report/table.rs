//! `Report::table`: the report as the table printed at the end of a run, a row a figure.

use crate::sampler::Trend;
use crate::stats::Percentiles;

use super::Report;

impl Report {
    /// The table printed at the end of a run.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
        let lat = |p: &Percentiles| {
            format!(
                "p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2} ms  (n={})",
                p.p50, p.p90, p.p99, p.max, p.count
            )
        };
        let bytes =
            |b: Option<u64>| b.map_or("-".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0));
        row(
            "players (peak / target)",
            format!("{} / {}", self.players_connected_peak, self.players_target),
        );
        if self.spectators_target > 0 {
            row(
                "spectators (peak / target)",
                format!(
                    "{} / {} ({})",
                    self.spectators_connected_peak, self.spectators_target, self.spectator_client
                ),
            );
        }
        row("in game at end", self.players_in_game_at_end.to_string());
        row(
            "ramp / hold",
            format!("{:.1} s / {:.1} s", self.ramp_s, self.duration_s),
        );
        row(
            "games completed (hold)",
            format!("{} ({})", self.games_completed, self.games_in_hold),
        );
        row("games lost on time", self.games_lost_on_time.to_string());
        row(
            "moves after game over",
            self.moves_after_game_over.to_string(),
        );
        row("sign-ins retried", self.sign_in_retries.to_string());
        row(
            "rounds completed (hold)",
            format!("{} ({})", self.rounds_completed, self.rounds_in_hold),
        );
        row("rounds/s", format!("{:.1}", self.rounds_per_s));
        row("messages/s", format!("{:.0}", self.messages_per_s));
        row("commit ack latency", lat(&self.commit_ack_latency_ms));
        row("result latency", lat(&self.result_latency_ms));
        if self.spectators_target > 0 {
            row(
                "spectator result latency",
                lat(&self.spectator_result_latency_ms),
            );
            row(
                "fan-out: last spectator",
                lat(&self.fanout_last_spectator_ms),
            );
            row(
                "  from the players' result",
                lat(&self.fanout_from_result_ms),
            );
            row("spectator resyncs", self.spectator_resyncs.to_string());
        }
        row(
            "server rss baseline / hold / peak",
            format!(
                "{} / {} / {}",
                bytes(self.server_rss_baseline_bytes),
                bytes(self.server_rss_hold_bytes),
                bytes(self.server_rss_peak_bytes)
            ),
        );
        if let Some(per) = self.server_rss_per_connection_bytes {
            row(
                "server rss per connection",
                format!("{:.1} KiB", per / 1024.0),
            );
        }
        if let Some(samples) = &self.server_samples {
            let after = samples.summary.as_ref().map_or_else(
                || {
                    let warmup = samples.warmup_s;
                    format!("; none after the warm-up ({warmup:.0} s of the hold)")
                },
                |s| {
                    format!(
                        "; after the warm-up: {} from {:.0} to {:.0} s of the hold",
                        s.samples, s.from_hold_s, s.to_hold_s
                    )
                },
            );
            row(
                "server samples",
                format!(
                    "{} every {:.0} s{after}{}",
                    samples.samples.len(),
                    samples.every_s,
                    samples
                        .csv
                        .as_ref()
                        .map(|p| format!(" ({})", p.display()))
                        .unwrap_or_default()
                ),
            );
            if let Some(summary) = &samples.summary {
                // Values in `unit`s of `scale`; MiB get a decimal, counts none.
                let trend = |t: &Option<Trend>, unit: &str, scale: f64| {
                    t.map_or("-".into(), |t| {
                        let v = |n: u64| n as f64 / scale;
                        let d = usize::from(scale > 1.0);
                        format!(
                            "{:.d$} -> {:.d$}{unit} ({:+.1} %; min {:.d$}, max {:.d$}; \
                             slope {:+.2}{unit}/min)",
                            v(t.first),
                            v(t.last),
                            t.growth_percent,
                            v(t.min),
                            v(t.max),
                            t.slope_per_min / scale,
                        )
                    })
                };
                row(
                    "server rss after warm-up",
                    trend(&summary.server_rss_bytes, " MiB", 1048576.0),
                );
                row(
                    "server fds after warm-up",
                    trend(&summary.server_fds, "", 1.0),
                );
                if summary.samples_without_rounds > 0 && self.playing_fraction > 0.0 {
                    row(
                        "STALLED after warm-up",
                        format!(
                            "no round completed in {} of {} samples: the figures above \
                             describe a server doing nothing",
                            summary.samples_without_rounds, summary.samples
                        ),
                    );
                }
                let count = |n: Option<u64>| n.map_or("-".into(), |n| n.to_string());
                row(
                    "server fds before / after clients",
                    format!(
                        "{} / {}",
                        count(summary.server_fds_before_clients),
                        count(summary.server_fds_after_clients)
                    ),
                );
            }
        }
        if let (Some(echo), Some(ratio)) = (&self.echo, self.messages_vs_echo) {
            row(
                "echo ceiling",
                format!(
                    "{:.0} round trips/s = {:.0} messages/s ({} connections, p99 {:.2} ms)",
                    echo.round_trips_per_s,
                    echo.messages_per_s,
                    echo.connections,
                    echo.latency_ms.p99
                ),
            );
            row("messages/s vs echo", format!("{:.1} %", 100.0 * ratio));
        }
        if let Some(cap) = self.pace_cap_rounds_per_s {
            let share = match self.pace_cap_vs_echo {
                // Below half, this run cannot show the throughput target met, however
                // fast the server.
                Some(share) if share < 0.5 => format!(
                    " = {:.1} % of the echo ceiling (raise it: --server-arg=--message-rate=50)",
                    100.0 * share
                ),
                Some(share) => format!(" = {:.1} % of the echo ceiling", 100.0 * share),
                None => String::new(),
            };
            row(
                "players' pacing caps rounds/s at",
                format!("{cap:.0}{share}"),
            );
        }
        if let Some(ceiling) = &self.fanout_ceiling {
            row(
                "fan-out ceiling: last spectator",
                format!(
                    "{} ({} spectators, {} broadcasts, {} errors)",
                    lat(&ceiling.last_spectator_ms),
                    ceiling.spectators,
                    ceiling.rounds,
                    ceiling.errors
                ),
            );
            if let Some(ratio) = self.fanout_vs_ceiling {
                row("fan-out p50 vs ceiling", format!("{ratio:.2} x"));
            }
        }
        if let Some(storm) = &self.reconnect_storm {
            row(
                "reconnect storm",
                format!(
                    "{} of {} back in {:.2} s ({} were in games)",
                    storm.back, storm.players, storm.all_back_s, storm.in_game_at_drop
                ),
            );
            row("resume latency", lat(&storm.resume_latency_ms));
            if let Some(overflows) = storm.listen_overflows {
                row(
                    "connects the accept queue turned away",
                    overflows.to_string(),
                );
            }
        }
        let cores = |c: Option<f64>| c.map_or("-".into(), |c| format!("{c:.2}"));
        if let (Some(server), Some(loadtest)) =
            (self.server_cpu_us_per_round, self.loadtest_cpu_us_per_round)
        {
            row(
                "CPU per round: server / loadtest",
                format!("{server:.1} / {loadtest:.1} µs"),
            );
        }
        row(
            "cores busy: server / loadtest",
            format!(
                "{} / {}  (load average {})",
                cores(self.cpu.server_cores),
                cores(self.cpu.loadtest_cores),
                cores(self.load_average_1m)
            ),
        );
        self.cluster_rows(&mut row);
        row("errors", self.errors.to_string());
        for (kind, n) in &self.errors_by_kind {
            row(&format!("  {kind}"), n.to_string());
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        rows.iter()
            .map(|(k, v)| format!("{k:<width$}  {v}\n"))
            .collect()
    }
}
