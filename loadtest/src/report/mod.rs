//! The results of a run: the JSON object `--json` writes and the table printed at the end.
//!
//! This file builds the [`Report`] (what `--json` writes); `table` renders it as the
//! table printed at the end of a run.

mod cluster;
mod table;

pub use cluster::ClusterReport;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use elementals_client::protocol::messages::GameId;
use serde::Serialize;

use crate::broadcast::CeilingResult;
use crate::conn::PACE_SHARE;
use crate::ctx::FanoutRound;
use crate::echo::EchoResult;
use crate::options::RunOptions;
use crate::run::{CpuUse, Memories};
use crate::sampler::Samples;
use crate::stats::{Percentiles, Stats};

/// The most rounds `fanout_rounds` lists.
pub const MAX_LISTED_ROUNDS: usize = 5_000;

/// One round's fan-out.
#[derive(Debug, Clone, Serialize)]
pub struct FanoutRoundReport {
    /// The game, numbered from 0 in the order of the hold.
    pub game: u32,
    pub round: u32,
    /// When its last reveal went, in seconds from the first such round of the hold.
    pub at_s: f64,
    /// From its last reveal sent to its result reaching half of its spectators.
    pub half_ms: f64,
    /// ... 90 % of them, and 99 %.
    pub p90_ms: f64,
    pub p99_ms: f64,
    /// From its last reveal sent to its result reaching the last spectator.
    pub last_ms: f64,
    /// From its result first reaching a player to the last spectator.
    pub last_from_result_ms: Option<f64>,
    /// How many spectators it reached.
    pub received: u32,
}

/// Counters read at the start and the end of the hold.
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize)]
pub struct Counters {
    rounds: u64,
    games: u64,
    frames: u64,
}

impl Counters {
    /// The sum of two processes' counters.
    pub fn add(self, other: Counters) -> Counters {
        Counters {
            rounds: self.rounds + other.rounds,
            games: self.games + other.games,
            frames: self.frames + other.frames,
        }
    }

    pub fn take(stats: &Stats) -> Counters {
        Counters {
            rounds: stats.rounds.load(Relaxed),
            games: stats.games.load(Relaxed),
            frames: stats.frames(),
        }
    }
}

/// What the reconnect storm measured.
#[derive(Debug, Clone, Serialize)]
pub struct StormResult {
    /// Players signed in when their connections were dropped.
    pub players: u64,
    pub in_game_at_drop: u64,
    /// Players that signed in again (and got their game's snapshot, if seated).
    pub back: u64,
    /// From the signal to return until the last player was back.
    pub all_back_s: f64,
    pub resume_latency_ms: Percentiles,
    /// Reconnects retried (with backoff) after a refused or failed attempt.
    pub retries: u64,
    /// Connections the machine's listeners turned away with a full accept queue during
    /// the storm (`local::listen_overflows`; `None` where it cannot be read). Each waited
    /// a second or more for TCP to retry it.
    pub listen_overflows: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub players_target: u64,
    pub spectators_target: u64,
    /// How spectators were read: `"tasks"` (a task per spectator, through the client
    /// code the players use) or `"lean"` (one thread polling them all, `--lean-spectators`).
    pub spectator_client: &'static str,
    pub playing_fraction: f64,
    pub think_ms: u64,
    pub players_connected_peak: i64,
    pub spectators_connected_peak: i64,
    /// Players seated in live games when the hold ended.
    pub players_in_game_at_end: i64,
    /// Whole run (ramp and hold).
    pub games_completed: u64,
    pub rounds_completed: u64,
    /// During the hold.
    pub games_in_hold: u64,
    /// Games that ended on time where the think time could drain a bank (not errors).
    pub games_lost_on_time: u64,
    /// Moves answered `game_over` because the game had just ended (not errors).
    pub moves_after_game_over: u64,
    /// First sign-ins refused `rate_limited` and tried again (not errors: the protocol
    /// asks for a retry after a few seconds; one refused every time is an error).
    pub sign_in_retries: u64,
    pub rounds_in_hold: u64,
    pub rounds_per_s: f64,
    /// Frames sent plus received by all simulated clients, per second of the hold: the
    /// messages through the server.
    pub messages_per_s: f64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub commit_ack_latency_ms: Percentiles,
    /// From the moment a round's last reveal is sent to the moment its result arrives at
    /// a player.
    pub result_latency_ms: Percentiles,
    /// The same, at each spectator.
    pub spectator_result_latency_ms: Percentiles,
    /// Per round, from its last reveal sent to its result reaching the last spectator.
    pub fanout_last_spectator_ms: Percentiles,
    /// Per round, from its result first reaching a player to the last spectator: the
    /// fan-out from (nearly) the moment the result left the game, which the generator
    /// cannot see. The server writes a round's players first, so this falls short of the
    /// true figure by a player's own delivery; `fanout_last_spectator_ms` exceeds it by
    /// the last reveal's trip and the game's work. The truth is between the two.
    pub fanout_from_result_ms: Percentiles,
    pub spectator_resyncs: u64,
    pub server_rss_peak_bytes: Option<u64>,
    /// Before any client connected.
    pub server_rss_baseline_bytes: Option<u64>,
    /// At the end of the hold.
    pub server_rss_hold_bytes: Option<u64>,
    /// (RSS at the end of the hold - baseline) / connections signed in then.
    pub server_rss_per_connection_bytes: Option<f64>,
    pub ramp_s: f64,
    /// The hold, over which the rates are computed.
    pub duration_s: f64,
    pub echo: Option<EchoResult>,
    /// messages_per_s / the echo ceiling's messages_per_s.
    pub messages_vs_echo: Option<f64>,
    /// The most rounds/s the players' pacing allows (each sends a commit and a reveal a
    /// round at `PACE_SHARE` of the server's announced rate limit, and a round needs
    /// both players of a game): the offered load at `--think-ms 0`, before the lobby's
    /// own requests between games. None until a player has signed in.
    pub pace_cap_rounds_per_s: Option<f64>,
    /// That cap in messages/s (at this run's messages per round), over the echo
    /// ceiling's messages/s: the highest `messages_vs_echo` this run could show.
    pub pace_cap_vs_echo: Option<f64>,
    /// With `--fanout-ceiling`: the bare broadcast server's figures, measured first.
    pub fanout_ceiling: Option<CeilingResult>,
    /// fanout_last_spectator_ms.p50 / the ceiling's last_spectator_ms.p50.
    pub fanout_vs_ceiling: Option<f64>,
    /// Every round of the hold that reached a spectator, in the order their last reveals
    /// went: which rounds make the fan-out's tail (a game's first or last, say).
    /// (Listed only when there are at most `MAX_LISTED_ROUNDS`, as in a fan-out run; a
    /// long run with spectators over many games leaves them out and counts them here.)
    pub fanout_rounds: Vec<FanoutRoundReport>,
    pub fanout_rounds_left_out: usize,
    pub reconnect_storm: Option<StormResult>,
    /// Cores each process kept busy during the hold, and the machine's load average at
    /// the end (other work on the machine shows there).
    pub cpu: CpuUse,
    /// The server's CPU per round of the hold, in microseconds (`cpu.server_cores` over
    /// `rounds_per_s`): below saturation, the steadiest measure of what a round costs the
    /// server (`bench.sh roundcost`); at saturation it also counts
    /// what waiting for the cores costs.
    pub server_cpu_us_per_round: Option<f64>,
    /// The same for the load generator.
    pub loadtest_cpu_us_per_round: Option<f64>,
    pub load_average_1m: Option<f64>,
    /// With `--sample-every` or `--samples-csv`: the local server's RSS and descriptors
    /// over the run, and their trend over the hold after its warm-up.
    pub server_samples: Option<Samples>,
    /// With `--nodes` or `--processes`: each process's cores and the failover's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        options: &RunOptions,
        stats: &Stats,
        start: Counters,
        end: Counters,
        hold_s: f64,
        ramp_s: f64,
        (in_game_at_end, connected): (i64, i64),
        memory: Memories,
        echo: Option<EchoResult>,
        reconnect_storm: Option<StormResult>,
        cpu: CpuUse,
        server_samples: Option<Samples>,
    ) -> Report {
        let per_s = |n: u64| n as f64 / hold_s.max(1e-9);
        let messages_per_s = per_s(end.frames - start.frames);
        let rounds_per_s = per_s(end.rounds - start.rounds);
        let playing = options.playing() as f64;
        let pace_cap_rounds_per_s = match stats.announced_rate.load(Relaxed) {
            0 => None,
            // Per game: two players, each at rate * PACE_SHARE messages/s, two a round.
            rate => Some(playing / 2.0 * rate as f64 * PACE_SHARE / 2.0),
        };
        let pace_cap_vs_echo = match (pace_cap_rounds_per_s, &echo) {
            (Some(cap), Some(e)) if rounds_per_s > 0.0 => {
                Some(cap * (messages_per_s / rounds_per_s) / e.messages_per_s)
            }
            _ => None,
        };
        let rss_per_connection = match (memory.baseline, memory.at_hold) {
            (Some(base), Some(hold)) if connected > 0 => {
                Some((hold.rss as f64 - base.rss as f64) / connected as f64)
            }
            _ => None,
        };
        Report {
            players_target: options.players,
            spectators_target: options.spectators,
            spectator_client: match options.lean_spectators {
                true => "lean",
                false => "tasks",
            },
            playing_fraction: options.playing_fraction,
            think_ms: options.think_ms,
            players_connected_peak: stats.connected_peak.load(Relaxed),
            spectators_connected_peak: stats.spectators_peak.load(Relaxed),
            players_in_game_at_end: in_game_at_end,
            games_completed: stats.games.load(Relaxed),
            rounds_completed: stats.rounds.load(Relaxed),
            games_in_hold: end.games - start.games,
            games_lost_on_time: stats.games_lost_on_time.load(Relaxed),
            moves_after_game_over: stats.moves_after_game_over.load(Relaxed),
            sign_in_retries: stats.sign_in_retries.load(Relaxed),
            rounds_in_hold: end.rounds - start.rounds,
            rounds_per_s,
            messages_per_s,
            errors: stats.error_total(),
            errors_by_kind: stats.errors(),
            commit_ack_latency_ms: stats.commit_ack.percentiles(),
            result_latency_ms: stats.result.percentiles(),
            spectator_result_latency_ms: stats.spectator_result.percentiles(),
            fanout_last_spectator_ms: stats.fanout_last.percentiles(),
            fanout_from_result_ms: stats.fanout_from_result.percentiles(),
            spectator_resyncs: stats.spectator_resyncs.load(Relaxed),
            server_rss_peak_bytes: memory.peak,
            server_rss_baseline_bytes: memory.baseline.map(|m| m.rss),
            server_rss_hold_bytes: memory.at_hold.map(|m| m.rss),
            server_rss_per_connection_bytes: rss_per_connection,
            ramp_s,
            duration_s: hold_s,
            messages_vs_echo: echo.as_ref().map(|e| messages_per_s / e.messages_per_s),
            pace_cap_rounds_per_s,
            pace_cap_vs_echo,
            echo,
            fanout_ceiling: None,
            fanout_vs_ceiling: None,
            fanout_rounds: Vec::new(),
            fanout_rounds_left_out: 0,
            reconnect_storm,
            cpu,
            server_cpu_us_per_round: per_round(cpu.server_cores, rounds_per_s),
            loadtest_cpu_us_per_round: per_round(cpu.loadtest_cores, rounds_per_s),
            load_average_1m: load_average(),
            server_samples,
            cluster: None,
        }
    }

    /// Adds the fan-out ceiling measured before the run.
    pub fn with_fanout_ceiling(mut self, ceiling: Option<CeilingResult>) -> Report {
        self.fanout_vs_ceiling = ceiling.as_ref().and_then(|c| {
            (c.last_spectator_ms.p50 > 0.0 && self.fanout_last_spectator_ms.count > 0)
                .then(|| self.fanout_last_spectator_ms.p50 / c.last_spectator_ms.p50)
        });
        self.fanout_ceiling = ceiling;
        self
    }

    /// Adds the rounds behind `fanout_last_spectator_ms`, numbering games in the order
    /// their first recorded round went.
    pub fn with_fanout_rounds(mut self, rounds: &[((GameId, u32), FanoutRound)]) -> Report {
        let Some((_, first)) = rounds.first() else {
            return self;
        };
        if rounds.len() > MAX_LISTED_ROUNDS {
            self.fanout_rounds_left_out = rounds.len();
            return self;
        }
        let mut games: HashMap<GameId, u32> = HashMap::new();
        self.fanout_rounds = rounds
            .iter()
            .map(|((game_id, round), r)| {
                let next = games.len() as u32;
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                let [half, p90, p99] = r.quantiles([0.5, 0.9, 0.99]);
                FanoutRoundReport {
                    game: *games.entry(*game_id).or_insert(next),
                    round: *round,
                    at_s: r.sent.duration_since(first.sent).as_secs_f64(),
                    half_ms: ms(half),
                    p90_ms: ms(p90),
                    p99_ms: ms(p99),
                    last_ms: ms(r.last),
                    last_from_result_ms: r.last_from_result().map(ms),
                    received: r.arrivals_us.len() as u32,
                }
            })
            .collect();
        self
    }
}

/// The 1-minute load average, from `/proc/loadavg`.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Microseconds of CPU per round, from cores kept busy and rounds a second.
fn per_round(cores: Option<f64>, rounds_per_s: f64) -> Option<f64> {
    cores
        .filter(|_| rounds_per_s > 0.0)
        .map(|c| 1e6 * c / rounds_per_s)
}
