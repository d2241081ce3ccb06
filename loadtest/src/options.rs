//! Command-line options.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Load test for the Elementals server: simulated players who sign in, queue and play
/// whole games with real commit–reveal, spectators on live games, and the machine's
/// WebSocket echo ceiling for comparison. Traffic stays on loopback.
///
/// For a soak (does the server's memory or descriptor count grow over a long run?),
/// `--sample-every 10s --samples-csv FILE` records the local server's RSS and open file
/// descriptors over the run, and the report summarises them after a warm-up; the script
/// `loadtest/soak.sh MINUTES` runs one with a steady workload and prints a verdict.
#[derive(Debug, Parser)]
#[command(
    name = "elementals-loadtest",
    version,
    args_conflicts_with_subcommands = true,
    // A flag given twice takes its last value, so scripts (`soak.sh`) can put defaults
    // first and let their caller's flags override them.
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the game server (used by the load test itself; takes `elementals-server` flags).
    #[command(hide = true)]
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the bare echo server (used by `--echo`).
    #[command(hide = true, name = "echo-serve")]
    EchoServe,

    /// Run the bare broadcast server (used by `--fanout-ceiling`).
    #[command(hide = true, name = "broadcast-serve")]
    BroadcastServe,

    /// The spectator flood: two players play one game
    /// while many connections flood it with `watch`, `sync` and `unwatch`; reports the
    /// players' result latency and every move refused.
    Flood(crate::flood::FloodOptions),

    /// Print several runs' `--json` reports side by side with their median, as a
    /// Markdown table (`loadtest/bench.sh` uses it).
    Medians {
        /// The reports, one per run.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RunOptions {
    /// Simulated players (registered accounts).
    #[arg(long, default_value_t = 200)]
    pub players: u64,

    /// Simulated spectators (guests), spread over the live games.
    #[arg(long, default_value_t = 0)]
    pub spectators: u64,

    /// Read every spectator's socket from one thread polling them all, instead of a task
    /// per spectator: for thousands of spectators, so that the fan-out figure measures
    /// the server rather than the load generator.
    #[arg(long)]
    pub lean_spectators: bool,

    /// Simulated clients do not ask for batches in `hello` (PROTOCOL.md, "Batches"): each
    /// message comes in a frame of its own, as to a client that predates them.
    #[arg(long)]
    pub no_batch: bool,

    /// The share of players who queue and play; the rest stay signed in, in the lobby.
    #[arg(long, default_value_t = 1.0)]
    pub playing_fraction: f64,

    /// Mean think time before each commit, in ms (each drawn from 0.5–1.5 times this).
    #[arg(long, default_value_t = 1000)]
    pub think_ms: u64,

    /// How often a lobby player lists the open seeks, in ms; 0: never (idle).
    #[arg(long, default_value_t = 10_000)]
    pub lobby_poll_ms: u64,

    /// Connections opened per second while ramping up.
    #[arg(long, default_value_t = 500)]
    pub ramp_per_s: u64,

    /// How long to hold the full load after the ramp (e.g. `30s`, `2m`, `1500ms`).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,

    /// A running server (`ws://127.0.0.1:7878/ws`, `127.0.0.1:7878`, ...); loopback only.
    /// Repeatable: the nodes of one cluster, players spread over them (`--spread`).
    /// Without it the run starts its own server, in a separate process, on a temporary
    /// database (or, with `--nodes`, its own cluster).
    #[arg(long)]
    pub server: Vec<String>,

    /// How players are spread over the servers: `round-robin` (player n on server n mod
    /// N; who meets whom is the cluster's pool's choice, so with N nodes about (N-1)/N of
    /// the games have their players on two nodes) or `same-node` (every player on the
    /// first server: every game runs there with both its players, for comparison).
    #[arg(long, value_enum, default_value_t = Spread::RoundRobin)]
    pub spread: Spread,

    /// Start a cluster of this many nodes on loopback for the run (`cluster.rs`): a
    /// PostgreSQL database of the run's own on 127.0.0.1:5432, the Redis at
    /// 127.0.0.1:6379 under a cluster name of the run's own; both are cleaned up after.
    #[arg(long, default_value_t = 0)]
    pub nodes: u32,

    /// Start the run's own server (one node, not a cluster) on a PostgreSQL database of the
    /// run's own on 127.0.0.1:5432, dropped after, instead of a SQLite file; the report
    /// gives PostgreSQL's cores beside the server's. Not with `--nodes` or `--server`.
    #[arg(long)]
    pub postgres: bool,

    /// Generator processes: this many children share the players (disjoint names and
    /// source addresses), since one process may hold at most about 20,000 sockets; their
    /// histograms and counters are merged into one report (`generators.rs`).
    #[arg(long, default_value_t = 1)]
    pub processes: u32,

    /// Failover under load (needs `--nodes` 2 or more): at the middle of the hold, kill
    /// -9 the last node; players whose node died reconnect to the next and `resume`. The
    /// report gives each of its games' time from the kill until another node claimed it,
    /// and the acknowledged rounds that PostgreSQL does not hold after the run.
    #[arg(long)]
    pub kill_node: bool,

    /// A generator child (`I/K`): run player slice I of K against `--child-server`s and
    /// write the raw figures to `--dump`. Set by `--processes`/`--nodes`.
    #[arg(long, hide = true)]
    pub generator: Option<String>,

    /// A generator child's servers, as the parent resolved them.
    #[arg(long = "child-server", hide = true)]
    pub child_servers: Vec<String>,

    /// A generator child's name tag, the same in every child of a run.
    #[arg(long, hide = true)]
    pub tag: Option<String>,

    /// Where a generator child writes its raw figures (JSON).
    #[arg(long, hide = true)]
    pub dump: Option<PathBuf>,

    /// Pool time-control preset.
    #[arg(long, default_value = "blitz")]
    pub preset: String,

    /// argon2id memory (KiB) for the local server. Deliberately low for load tests: at the
    /// default 19 MiB, registering thousands of players measures password hashing.
    #[arg(long, default_value_t = 64)]
    pub argon2_memory_kib: u32,

    /// A flag for the local server, e.g. `--server-arg=--message-rate=50` (repeatable).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub server_args: Vec<String>,

    /// Measure the echo ceiling first (a bare WebSocket echo server and the same client
    /// sockets), so throughput can be stated as a share of it.
    #[arg(long)]
    pub echo: bool,

    /// Connections for the echo measurement.
    #[arg(long, default_value_t = 100)]
    pub echo_connections: u64,

    /// How long to measure the echo ceiling.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub echo_duration: Duration,

    /// Measure the fan-out ceiling first: a bare WebSocket broadcast server and as many
    /// lean spectators as `--spectators`, each round timed from the trigger sent to its
    /// arrival at the last spectator, so the fan-out can be stated against it.
    #[arg(long)]
    pub fanout_ceiling: bool,

    /// Broadcasts timed for the fan-out ceiling.
    #[arg(long, default_value_t = 20)]
    pub fanout_ceiling_rounds: u64,

    /// Halfway through the hold, drop every player's connection at once and have them
    /// all resume with their tokens; report how long until all are back in their games.
    #[arg(long)]
    pub reconnect_storm: bool,

    /// Write the results as a JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Sample the local server's RSS and open file descriptors this often (at least
    /// `1s`), with the run's progress (phase, players, in game, games, rounds/s); the
    /// report gets every sample (`server_samples`) and their trend over the hold after a
    /// warm-up of 20 % of it (at least 2 minutes, at most half). For soak runs.
    #[arg(long, value_parser = parse_duration)]
    pub sample_every: Option<Duration>,

    /// Append each sample to this CSV file (with a header) as it is taken; samples
    /// every 10 s unless `--sample-every` says otherwise.
    #[arg(long)]
    pub samples_csv: Option<PathBuf>,

    /// The warm-up the samples' trend skips, instead of 20 % of the hold: for a server
    /// whose caches fill for longer (the registry remembers the last 10,000 finished
    /// games, which takes ~14 minutes at the soak's ~12 games a second).
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
}

/// How players are spread over several servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Spread {
    RoundRobin,
    SameNode,
}

impl RunOptions {
    /// How many of the players queue and play (`--playing-fraction` of them).
    pub fn playing(&self) -> u64 {
        (self.players as f64 * self.playing_fraction).round() as u64
    }

    /// How often to sample the server, if at all.
    pub fn sampling(&self) -> Option<Duration> {
        self.sample_every.or(self
            .samples_csv
            .is_some()
            .then_some(crate::sampler::DEFAULT_INTERVAL))
    }

    /// The warm-up, in seconds, of a hold of `hold_s` seconds.
    pub fn warmup_s(&self, hold_s: f64) -> f64 {
        self.warmup
            .map_or_else(|| crate::sampler::warmup_s(hold_s), |w| w.as_secs_f64())
    }
}

/// `30s`, `2m`, `1500ms`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?} (try 30s, 2m, 500ms)"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?} (use ms, s, m or h)"
            ))
        }
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("not a duration: {text:?}"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warmup_is_a_fifth_of_the_hold_unless_given() {
        let run = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("elementals-loadtest").chain(args.iter().copied()))
                .unwrap()
                .run
        };
        assert_eq!(run(&[]).warmup_s(1800.0), 360.0);
        assert_eq!(run(&["--warmup", "15m"]).warmup_s(1800.0), 900.0);
    }

    #[test]
    fn servers_repeat_and_the_spread_names_how_players_are_shared() {
        let run = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("elementals-loadtest").chain(args.iter().copied()))
                .unwrap()
                .run
        };
        let both = run(&["--server=127.0.0.1:1", "--server", "127.0.0.1:2"]);
        assert_eq!(both.server, ["127.0.0.1:1", "127.0.0.1:2"]);
        assert_eq!(both.spread, Spread::RoundRobin);
        assert_eq!(run(&["--spread=same-node"]).spread, Spread::SameNode);
    }

    #[test]
    fn durations_parse_in_their_units() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("12"), Ok(Duration::from_secs(12)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1.5min"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3 days").is_err());
    }
}
