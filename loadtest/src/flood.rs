//! The spectator flood (`elementals-loadtest flood`): two
//! players play one game as fast as the server's rate limit lets them while many
//! connections flood it with `watch`, `sync` and `unwatch`, each as fast as the server
//! answers and its rate limit allows (every connection paced at `PACE_SHARE` of the
//! announced rate: past it a request is refused with a nil id, and a connection refused
//! 20 times in a row is closed). Reported: the players' result latency (from a round's last reveal sent to its
//! result's arrival at each player) and every move the server refused.
//!
//! Bounded in count and time: at most `MAX_FLOODERS` flooders and `MAX_ROUNDS` rounds,
//! stopped at `--time-limit` whatever is left; loopback only.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use elementals_client::protocol::commitment;
use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::rules::Seat;
use elementals_client::protocol::{ClientMsg, ServerMsg, Variant};
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::conn::{source_address, spread_over_sources, Conn, ConnError, Pacer};
use crate::local::LocalServer;
use crate::options::parse_duration;
use crate::stats::{Latency, Percentiles, Stats};

/// The most flooding connections a run opens.
const MAX_FLOODERS: u64 = 1_000;

/// The most rounds a run plays (below the server's round limit, so the game never ends
/// on it).
const MAX_ROUNDS: u32 = 900;

const PASSWORD: &str = "loadtest-password";

#[derive(Debug, Clone, Args)]
pub struct FloodOptions {
    /// Connections flooding the game with `watch`, `sync` and `unwatch` (at most 1,000).
    #[arg(long, default_value_t = 50)]
    pub flooders: u64,

    /// Rounds the two players play (at most 900); every round is a tie, so the game goes
    /// on and its snapshots grow with it. At the server's default rate limit (20 messages
    /// a second) the players play 8 rounds a second.
    #[arg(long, default_value_t = 120)]
    pub rounds: u32,

    /// The run stops after this long whatever is left (the flooders never sign in, and
    /// the server closes them 30 s after they connect).
    #[arg(long, default_value = "25s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// A running server on loopback; without it the run starts its own.
    #[arg(long)]
    pub server: Option<String>,

    /// argon2id memory (KiB) for the local server.
    #[arg(long, default_value_t = 64)]
    pub argon2_memory_kib: u32,

    /// A flag for the local server (repeatable).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub server_args: Vec<String>,

    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct FloodReport {
    pub flooders: u64,
    pub rounds_played: u32,
    pub seconds: f64,
    /// From a round's last reveal sent to its `round_result` at each player.
    pub result_latency_ms: Percentiles,
    /// Moves answered with an error.
    pub moves_refused: u64,
    /// The flooders' requests the server answered, by what they asked.
    pub flood_answered: BTreeMap<&'static str, u64>,
    pub errors: BTreeMap<String, u64>,
}

impl FloodReport {
    pub fn table(&self) -> String {
        let l = &self.result_latency_ms;
        let answered: u64 = self.flood_answered.values().sum();
        let mut out = String::new();
        out += &format!("flooders                {}\n", self.flooders);
        out += &format!(
            "rounds played           {} in {:.1} s\n",
            self.rounds_played, self.seconds
        );
        out += &format!(
            "result latency (ms)     p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}  ({} results)\n",
            l.p50, l.p90, l.p99, l.max, l.count
        );
        out += &format!("moves refused           {}\n", self.moves_refused);
        out += &format!(
            "flood requests answered {answered} ({:.0}/s): {:?}\n",
            answered as f64 / self.seconds.max(1e-9),
            self.flood_answered,
        );
        out += &format!("errors                  {:?}\n", self.errors);
        out
    }
}

pub async fn run(options: FloodOptions) -> anyhow::Result<FloodReport> {
    if options.flooders > MAX_FLOODERS {
        bail!("--flooders is at most {MAX_FLOODERS}");
    }
    if options.rounds == 0 || options.rounds > MAX_ROUNDS {
        bail!("--rounds is 1 to {MAX_ROUNDS}");
    }
    crate::limits::raise().context("raising RLIMIT_NOFILE")?;
    spread_over_sources(options.flooders + 2);
    let local = match &options.server {
        Some(_) => None,
        None => Some(LocalServer::game(options.argon2_memory_kib, &options.server_args).await?),
    };
    let server = match (&options.server, &local) {
        (Some(url), _) => crate::run::loopback_address(url)?,
        (None, Some(local)) => local.addr,
        (None, None) => unreachable!("a local server is started without --server"),
    };
    let result = tokio::time::timeout(options.time_limit, drive(&options, server)).await;
    if let Some(local) = local {
        local.stop().await;
    }
    match result {
        Ok(report) => report,
        Err(_) => bail!(
            "the flood did not finish within --time-limit {:?}",
            options.time_limit
        ),
    }
}

/// Figures the players and flooders share.
#[derive(Default)]
struct Shared {
    latency: Latency,
    /// Per round, when its last reveal was sent.
    last_reveal: Mutex<HashMap<u32, Instant>>,
    moves_refused: AtomicU64,
    watch: AtomicU64,
    repeated_watch: AtomicU64,
    sync: AtomicU64,
    unwatch: AtomicU64,
}

async fn drive(
    options: &FloodOptions,
    server: std::net::SocketAddr,
) -> anyhow::Result<FloodReport> {
    let stats = Arc::new(Stats::default());
    let shared = Arc::new(Shared::default());
    // Two players, paired in an unrated pool.
    let tag = std::process::id() % 100_000;
    let mut players = Vec::new();
    for n in 0..2u64 {
        let mut conn = Conn::open(server, source_address(n), stats.clone()).await?;
        let name = format!("flood{tag}x{n}{}", rand::random::<u16>() % 1000);
        conn.request(|id| ClientMsg::Register {
            id,
            name,
            password: PASSWORD.into(),
        })
        .await
        .map_err(|e| anyhow::anyhow!(e.kind("register")))?;
        players.push(conn);
    }
    for conn in &mut players {
        conn.request(|id| ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: "rapid".into(),
            rated: false,
        })
        .await
        .map_err(|e| anyhow::anyhow!(e.kind("join pool")))?;
    }
    let mut seated = Vec::new();
    for mut conn in players {
        let (game_id, seat) = loop {
            match conn.recv().await? {
                ServerMsg::GameStart { game, seat } => break (game.game_id, seat),
                _ => continue,
            }
        };
        seated.push((conn, game_id, seat));
    }
    let game_id = seated[0].1;

    // The flooders: each watching the game before the players start.
    let stop = CancellationToken::new();
    let mut flooders = Vec::new();
    for n in 0..options.flooders {
        let mut conn = Conn::open(server, source_address(n + 2), stats.clone()).await?;
        conn.request(|id| ClientMsg::Watch { id, game_id })
            .await
            .map_err(|e| anyhow::anyhow!(e.kind("first watch")))?;
        let (shared, stop, stats) = (shared.clone(), stop.clone(), stats.clone());
        flooders.push(tokio::spawn(async move {
            if let Err(e) = flood(&mut conn, game_id, &shared, &stop).await {
                if !stop.is_cancelled() {
                    stats.error(e.kind("flooding"));
                }
            }
            conn.close().await;
        }));
    }

    let started = Instant::now();
    let mut playing = Vec::new();
    for (conn, game_id, seat) in seated {
        let (shared, rounds) = (shared.clone(), options.rounds);
        playing.push(tokio::spawn(async move {
            let result = play(conn, game_id, seat, rounds, &shared).await;
            result.map_err(|e| e.kind("playing"))
        }));
    }
    let mut rounds_played = options.rounds;
    for player in playing {
        match player.await {
            Ok(Ok(())) => {}
            Ok(Err(kind)) => {
                stats.error(kind);
                rounds_played = 0;
            }
            Err(e) => bail!("a player's task failed: {e}"),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    stop.cancel();
    for flooder in flooders {
        let _ = flooder.await;
    }
    let count = |c: &AtomicU64| c.load(Relaxed);
    let flood_answered = BTreeMap::from([
        ("watch", count(&shared.watch)),
        ("repeated watch", count(&shared.repeated_watch)),
        ("sync", count(&shared.sync)),
        ("unwatch", count(&shared.unwatch)),
    ]);
    Ok(FloodReport {
        flooders: options.flooders,
        rounds_played,
        seconds,
        result_latency_ms: shared.latency.percentiles(),
        moves_refused: count(&shared.moves_refused),
        flood_answered,
        errors: stats.errors(),
    })
}

/// One flooder: `sync`, a repeated `watch`, `unwatch`, `watch` again, over and over, each
/// sent as soon as the last is answered.
async fn flood(
    conn: &mut Conn,
    game_id: GameId,
    shared: &Shared,
    stop: &CancellationToken,
) -> Result<(), ConnError> {
    let mut pacer = Pacer::new(conn.rate);
    let mut step = 0usize;
    while !stop.is_cancelled() {
        pace(&mut pacer).await;
        let (counter, reply) = match step % 4 {
            0 => (
                &shared.sync,
                conn.request(|id| ClientMsg::Sync { id, game_id }).await,
            ),
            1 => (
                &shared.repeated_watch,
                conn.request(|id| ClientMsg::Watch { id, game_id }).await,
            ),
            2 => (
                &shared.unwatch,
                conn.request(|id| ClientMsg::Unwatch { id, game_id }).await,
            ),
            _ => (
                &shared.watch,
                conn.request(|id| ClientMsg::Watch { id, game_id }).await,
            ),
        };
        reply?;
        counter.fetch_add(1, Relaxed);
        step += 1;
        // Pushed events are of no interest: drop what the requests stashed.
        conn.discard_stashed();
    }
    Ok(())
}

/// One player: commit, wait for the reveals, reveal, wait for the result; every round a
/// tie (both pick 1).
async fn play(
    mut conn: Conn,
    game_id: GameId,
    seat: Seat,
    rounds: u32,
    shared: &Shared,
) -> Result<(), ConnError> {
    const PICK: u16 = 1;
    let mut pacer = Pacer::new(conn.rate);
    for round in 1..=rounds {
        let nonce: [u8; 32] = rand::random();
        let sealed = commitment::make(&game_id.0, round, seat, PICK, &nonce).to_vec();
        pace(&mut pacer).await;
        let commit = conn
            .request(|id| ClientMsg::Commit {
                id,
                game_id,
                round,
                commitment: sealed,
                pick: None,
                nonce: None,
            })
            .await;
        refused(commit, shared)?;
        wait_for(
            &mut conn,
            |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
        )
        .await?;
        pace(&mut pacer).await;
        {
            let mut last = shared.last_reveal.lock().expect("reveal times");
            let at = last.entry(round).or_insert_with(Instant::now);
            *at = (*at).max(Instant::now());
        }
        let reveal = conn
            .request(|id| ClientMsg::Reveal {
                id,
                game_id,
                round,
                pick: PICK,
                nonce: nonce.to_vec(),
            })
            .await;
        refused(reveal, shared)?;
        wait_for(
            &mut conn,
            |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
        )
        .await?;
        let arrived = Instant::now();
        let last = shared.last_reveal.lock().expect("reveal times")[&round];
        shared
            .latency
            .record(arrived.saturating_duration_since(last));
    }
    conn.close().await;
    Ok(())
}

/// Waits until `pacer` lets the next request go, and counts it gone.
async fn pace(pacer: &mut Pacer) {
    tokio::time::sleep_until(pacer.earliest(Instant::now())).await;
    pacer.sent();
}

/// A move's reply: a refusal is counted, not fatal.
fn refused(reply: Result<ServerMsg, ConnError>, shared: &Shared) -> Result<(), ConnError> {
    match reply {
        Ok(_) => Ok(()),
        Err(ConnError::Server { .. }) => {
            shared.moves_refused.fetch_add(1, Relaxed);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

async fn wait_for(conn: &mut Conn, what: impl Fn(&ServerMsg) -> bool) -> Result<(), ConnError> {
    let deadline = Instant::now() + crate::conn::REQUEST_TIMEOUT;
    loop {
        let msg = tokio::time::timeout_at(deadline, conn.recv())
            .await
            .map_err(|_| ConnError::Timeout)??;
        if what(&msg) {
            return Ok(());
        }
    }
}
