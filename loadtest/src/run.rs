//! One run: check the file limit, start (or find) the server, measure the echo ceiling
//! if asked, ramp the simulated clients up at the given rate, hold, optionally storm,
//! stop everyone, and gather the figures.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use elementals_client::protocol::Variant;
use elementals_client::ServerUrl;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::broadcast::{self, CeilingResult};
use crate::conn::{
    ask_for_batches, last_source_address, spread_over_sources, CONNECTIONS_PER_ADDRESS,
};
use crate::ctx::{Ctx, FanoutLog, PlayStyle, RevealLog, Storm};
use crate::echo::{self, EchoResult};
use crate::lean::LeanSpectators;
use crate::limits;
use crate::local::{cpu_seconds, listen_overflows, LocalServer, Memory};
use crate::options::RunOptions;
use crate::player::{Player, Role};
use crate::report::{Counters, Report, StormResult};
use crate::sampler::{self, Sampler};
use crate::slice::Slice;
use crate::spectator::Spectator;
use crate::stats::Stats;
use crate::status::Status;

/// The local server's default connection cap (`--max-connections`).
const SERVER_DEFAULT_MAX_CONNECTIONS: u64 = 19_000;

/// How long after the ramp the run waits for stragglers to sign in before holding.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long stopped clients get to close before they are aborted.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// When sampling, how long after the clients have stopped the last sample is taken.
const SETTLE_AFTER_STOP: Duration = Duration::from_secs(2);

pub async fn run(options: RunOptions) -> anyhow::Result<Report> {
    let total = options.players + options.spectators;
    if total == 0 {
        bail!("nothing to do: --players and --spectators are both 0");
    }
    if !(0.0..=1.0).contains(&options.playing_fraction) {
        bail!("--playing-fraction must be between 0 and 1");
    }
    if options.nodes > 0 || options.processes > 1 || options.postgres {
        return crate::generators::orchestrate(options).await;
    }
    if options.kill_node {
        bail!("--kill-node needs a cluster of the run's own: --nodes 2 or more");
    }
    if let Some(every) = options.sampling() {
        if !options.server.is_empty() {
            bail!("--sample-every and --samples-csv sample the local server: not with --server");
        }
        if every < sampler::MIN_INTERVAL {
            bail!(
                "--sample-every must be at least {:?}",
                sampler::MIN_INTERVAL
            );
        }
    }
    let limit = limits::raise().context("reading RLIMIT_NOFILE")?;
    let local_cap = options
        .server
        .is_empty()
        .then(|| server_cap(&options.server_args));
    let sources = spread_over_sources(total.max(options.echo_connections));
    ask_for_batches(!options.no_batch);
    eprintln!(
        "open files: soft limit {} raised to the hard limit {}: room for {} connections per \
         process; spreading them over {sources} source addresses 127.0.0.2-{} \
         (at most {CONNECTIONS_PER_ADDRESS} each)",
        limit.soft_before,
        limit.hard,
        limit.connections(),
        last_source_address(),
    );
    limits::check(&limit, total.max(options.echo_connections), local_cap)?;

    let echo = match options.echo {
        true => Some(echo::measure_ceiling(&options).await?),
        false => None,
    };
    let ceiling = match options.fanout_ceiling {
        true => Some(broadcast::measure_ceiling(&options).await?),
        false => None,
    };

    let (local, servers) = match options.server.is_empty() {
        false => (None, loopback_addresses(&options.server)?),
        true => {
            let local = LocalServer::game(options.argon2_memory_kib, &options.server_args).await?;
            eprintln!("local server: pid {} on {}", local.pid, local.addr);
            let addr = local.addr;
            (Some(local), vec![addr])
        }
    };
    let slice = Slice::whole(&options);
    let result = drive(&options, servers, &slice, local.as_ref(), echo, ceiling).await;
    if let Some(local) = local {
        local.stop().await;
    }
    result
}

/// The cap the local server will run with, from `--server-arg=--max-connections=N`.
fn server_cap(server_args: &[String]) -> u64 {
    server_args
        .iter()
        .find_map(|a| a.strip_prefix("--max-connections="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(SERVER_DEFAULT_MAX_CONNECTIONS)
}

/// The servers' addresses, refusing anything but loopback.
pub(crate) fn loopback_addresses(urls: &[String]) -> anyhow::Result<Vec<SocketAddr>> {
    urls.iter().map(|url| loopback_address(url)).collect()
}

/// The server's address, refusing anything but loopback.
pub(crate) fn loopback_address(url: &str) -> anyhow::Result<SocketAddr> {
    let url = ServerUrl::parse(url)?;
    let addr = (url.host().trim_matches(['[', ']']), url.port())
        .to_socket_addrs()
        .with_context(|| format!("resolving {}", url.authority()))?
        .find(|a| a.is_ipv4())
        .with_context(|| format!("{} has no IPv4 address", url.authority()))?;
    if !addr.ip().is_loopback() {
        bail!("{addr} is not a loopback address: this load test only targets this machine");
    }
    Ok(addr)
}

pub async fn drive(
    options: &RunOptions,
    servers: Vec<SocketAddr>,
    slice: &Slice,
    local: Option<&LocalServer>,
    echo: Option<EchoResult>,
    ceiling: Option<CeilingResult>,
) -> anyhow::Result<Report> {
    let stats = Arc::new(Stats::default());
    let (storm_tx, storm_rx) = watch::channel(Storm::Calm);
    let stop = CancellationToken::new();
    let (lean, lean_reader) = match options.lean_spectators && options.spectators > 0 {
        true => {
            let (lean, reader) = LeanSpectators::start(stats.clone(), stop.clone())
                .context("starting the lean spectators' thread")?;
            (Some(lean), Some(reader))
        }
        false => (None, None),
    };
    let ctx = Arc::new(Ctx {
        servers,
        spread: options.spread,
        failover: options.kill_node,
        acked: Default::default(),
        stats: stats.clone(),
        style: PlayStyle {
            variant: Variant::CLASSIC,
            preset: options.preset.clone(),
            think: Duration::from_millis(options.think_ms),
            lobby_poll: (options.lobby_poll_ms > 0)
                .then(|| Duration::from_millis(options.lobby_poll_ms)),
        },
        tag: options
            .tag
            .clone()
            .unwrap_or_else(|| format!("{:04x}", rand::random::<u16>())),
        stop,
        storm: storm_rx,
        reveals: RevealLog::default(),
        fanout: FanoutLog::default(),
        lean,
    });
    let lean_thread = match lean_reader {
        Some(reader) => Some(
            reader
                .spawn(ctx.clone())
                .context("starting the lean spectators' thread")?,
        ),
        None => None,
    };
    let memory = || local.and_then(LocalServer::memory);
    let baseline = memory();
    let status = Status::start(stats.clone(), options.players, local.map(|l| l.pid));
    let sampler = match (options.sampling(), local) {
        (Some(every), Some(local)) => {
            let csv = options.samples_csv.as_deref();
            match Sampler::start(every, csv, stats.clone(), local.pid, status.phase_cell()) {
                Ok(sampler) => Some(sampler),
                Err(e) => {
                    status.finish();
                    return Err(e);
                }
            }
        }
        _ => None,
    };

    // Ramp: players first (spectators need live games), at the given rate.
    let total = slice.clients();
    let playing = options.playing();
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / slice.ramp_per_s);
    let mut clients = JoinSet::new();
    let numbers = slice
        .players
        .clone()
        .chain(slice.spectators.clone().map(|s| options.players + s));
    for (k, n) in numbers.enumerate() {
        tokio::time::sleep_until(started + interval * k as u32).await;
        let ctx = ctx.clone();
        if n < options.players {
            // Spread the lobby players evenly among the playing ones.
            let role = if (n * playing / options.players.max(1))
                != ((n + 1) * playing / options.players.max(1))
            {
                Role::Playing
            } else {
                Role::Lobby
            };
            clients.spawn(Player::new(ctx, n, role).run());
        } else {
            clients.spawn(Spectator::new(ctx, n).run());
        }
    }
    let settle_until = Instant::now() + SETTLE_TIMEOUT;
    while (stats.connected.load(Relaxed) + stats.spectators.load(Relaxed)) < total as i64
        && (stats.error_total() as i64) < total as i64
        && Instant::now() < settle_until
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ramp_s = started.elapsed().as_secs_f64();
    status.phase("hold");
    if slice.dump.is_some() {
        crate::generators::say(crate::generators::HOLD_START);
    }

    // Hold: rates and latencies describe this window only (the fan-out's tails too: a
    // round of the ramp reached fewer spectators than the run holds).
    stats.reset_latencies();
    ctx.fanout.clear();
    let hold_start = Instant::now();
    if let Some(sampler) = &sampler {
        sampler.hold_started(hold_start);
    }
    let at_start = Counters::take(&stats);
    let cpu = |pid: Option<u32>| pid.and_then(cpu_seconds);
    let (server_pid, own_pid) = (local.map(|l| l.pid), Some(std::process::id()));
    let cpu_start = (cpu(server_pid), cpu(own_pid));
    let mut storm = None;
    if options.reconnect_storm {
        tokio::time::sleep(options.duration / 2).await;
        status.phase("storm");
        storm = Some(reconnect_storm(&stats, &storm_tx, options.players).await);
        status.phase("hold");
    }
    tokio::time::sleep_until(hold_start + options.duration).await;
    let at_end = Counters::take(&stats);
    let hold_s = hold_start.elapsed().as_secs_f64();
    if slice.dump.is_some() {
        crate::generators::say(crate::generators::HOLD_END);
    }
    if let Some(sampler) = &sampler {
        sampler.sample_now();
    }
    let busy = |start: Option<f64>, end: Option<f64>| Some((end? - start?) / hold_s);
    let cpu_use = CpuUse {
        server_cores: busy(cpu_start.0, cpu(server_pid)),
        loadtest_cores: busy(cpu_start.1, cpu(own_pid)),
    };
    let at_hold = memory();
    let in_game_at_end = stats.in_game.load(Relaxed);
    let connected_at_end = stats.connected.load(Relaxed) + stats.spectators.load(Relaxed);

    status.phase("stopping");
    ctx.stop.cancel();
    let _ = tokio::time::timeout(STOP_TIMEOUT, async {
        while clients.join_next().await.is_some() {}
    })
    .await;
    clients.abort_all();
    if let Some(thread) = lean_thread {
        // It looks at the stop signal every 50 ms.
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
    let server_samples = match sampler {
        Some(sampler) => {
            // Give the server a moment to notice the closed sockets before the last
            // sample counts its descriptors.
            tokio::time::sleep(SETTLE_AFTER_STOP).await;
            Some(sampler.finish(options.warmup_s(hold_s)))
        }
        None => None,
    };
    let server_peak = memory().map(|m| m.peak).or(status.peak_rss());
    status.finish();

    if let Some(path) = &slice.dump {
        let dump = crate::dump::Dump::take(
            &ctx,
            (at_start, at_end),
            (hold_s, ramp_s),
            (in_game_at_end, connected_at_end),
            cpu_use.loadtest_cores,
        );
        dump.write(path)?;
    }
    let fanout_rounds = ctx.fanout.rounds();
    for (_, round) in &fanout_rounds {
        stats.fanout_last.record(round.last);
        if let Some(from_result) = round.last_from_result() {
            stats.fanout_from_result.record(from_result);
        }
    }
    Ok(Report::new(
        options,
        &stats,
        at_start,
        at_end,
        hold_s,
        ramp_s,
        (in_game_at_end, connected_at_end),
        Memories {
            baseline,
            at_hold,
            peak: server_peak,
        },
        echo,
        storm,
        cpu_use,
        server_samples,
    )
    .with_fanout_ceiling(ceiling)
    .with_fanout_rounds(&fanout_rounds))
}

/// Cores busy on average during the hold (1.0 = one core all the time).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct CpuUse {
    pub server_cores: Option<f64>,
    pub loadtest_cores: Option<f64>,
}

/// Server memory at the moments the report needs.
pub struct Memories {
    pub baseline: Option<Memory>,
    pub at_hold: Option<Memory>,
    pub peak: Option<u64>,
}

/// Drop every player's connection at once, then have all of them resume at once; time
/// until every one has signed in again and (if seated) has its game's snapshot.
async fn reconnect_storm(stats: &Stats, storm: &watch::Sender<Storm>, players: u64) -> StormResult {
    let before = stats.connected.load(Relaxed);
    let in_game = stats.in_game.load(Relaxed);
    let resumed_before = stats.resume.percentiles().count;
    let overflows_before = listen_overflows();
    storm.send_replace(Storm::Drop);
    let dropped_by = Instant::now() + Duration::from_secs(10);
    while stats.connected.load(Relaxed) > 0 && Instant::now() < dropped_by {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let go = Instant::now();
    storm.send_replace(Storm::Return(go));
    let back_by = go + Duration::from_secs(60);
    while stats.connected.load(Relaxed) < before && Instant::now() < back_by {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all_back_s = go.elapsed().as_secs_f64();
    let listen_overflows = overflows_before
        .zip(listen_overflows())
        .map(|(before, after)| after.saturating_sub(before));
    storm.send_replace(Storm::Calm);
    let latency = stats.resume.percentiles();
    StormResult {
        players: players.min(before.max(0) as u64),
        in_game_at_drop: in_game.max(0) as u64,
        back: latency.count - resumed_before,
        all_back_s,
        resume_latency_ms: latency,
        retries: stats.resume_retries.load(Relaxed),
        listen_overflows,
    }
}
