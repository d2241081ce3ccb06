//! The cost of crossing nodes (issue 26): rounds of one game whose players are both on the
//! game's node ("same"), against the same with player two signed in on another node
//! ("crossed": its moves go to the game and its events come back over Redis).
//!
//! `cargo bench -p elementals-server --bench cluster_hop` (a plain program: it prints a
//! table). Needs PostgreSQL at 127.0.0.1:5432 and Redis at 127.0.0.1:6379
//! (`bash .ci/services`). Two real nodes; `RUNS` runs of each kind, alternating, each a
//! fresh game of `ROUNDS` tied rounds (nothing moves, so the game never ends) played as
//! fast as the two clients go. Per run: the median round's wall time (both commits, both
//! reveals, the result seen by both) and the CPU both nodes spent per round (`/proc`).

// The integration tests' harness, of which this program uses a few parts.
#[allow(dead_code, unused_imports)]
#[path = "../tests/it/cluster_support/mod.rs"]
mod cluster_support;
#[allow(dead_code, unused_imports)]
#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use cluster_support::{Cluster, Node};
use common::{paired_at, play_round};
use elementals_protocol::messages::ServerMsg;

/// Tied rounds a run plays (one game, under the 1,000-round bound).
const ROUNDS: u32 = 300;
/// Runs of each kind, alternating.
const RUNS: usize = 3;
/// Both pick 1: a tie.
const TIE: (u16, u16) = (1, 1);

/// The CPU a process has used (user + system), from `/proc/PID/stat`.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_micros(ticks * 1_000_000 / per_second)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// One run: a fresh game on `a`, player two moved to `b` if `crossed`; the median round's
/// milliseconds and both nodes' CPU microseconds per round.
async fn run(a: &Node, b: &Node, crossed: bool, n: usize) -> (f64, f64) {
    let tag = format!("{}{n}", if crossed { "x" } else { "s" });
    let (mut one, mut two, game) =
        paired_at(a.addr, &format!("one{tag}"), &format!("two{tag}")).await;
    if crossed {
        let token = two.token.clone().unwrap();
        let mut on_b = common::TestClient::connect_at(b.addr).await;
        assert!(matches!(
            on_b.resume(&token).await,
            ServerMsg::Authenticated { .. }
        ));
        on_b.expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
            .await;
        two = on_b;
    }
    let before = cpu(a.pid()) + cpu(b.pid());
    let mut times = Vec::with_capacity(ROUNDS as usize);
    for round in 1..=ROUNDS {
        let start = Instant::now();
        play_round(&mut one, &mut two, game.game_id, round, TIE).await;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let spent = cpu(a.pid()) + cpu(b.pid()) - before;
    one.resign(game.game_id).await;
    (median(times), spent.as_secs_f64() * 1e6 / f64::from(ROUNDS))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    println!("| run | kind | round p50 (ms) | CPU per round, both nodes (µs) |");
    println!("|---|---|---|---|");
    let (mut same, mut crossed) = (Vec::new(), Vec::new());
    for n in 0..RUNS {
        for kind in [false, true] {
            let (p50, cpu) = run(&a, &b, kind, n).await;
            let name = if kind { "crossed" } else { "same" };
            println!("| {} | {name} | {p50:.2} | {cpu:.0} |", n + 1);
            if kind {
                crossed.push((p50, cpu));
            } else {
                same.push((p50, cpu));
            }
        }
    }
    let med = |xs: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| median(xs.iter().map(f).collect());
    let (sp, sc) = (med(&same, |x| x.0), med(&same, |x| x.1));
    let (cp, cc) = (med(&crossed, |x| x.0), med(&crossed, |x| x.1));
    println!("| median | same | {sp:.2} | {sc:.0} |");
    println!("| median | crossed | {cp:.2} | {cc:.0} |");
    println!(
        "crossed / same: round time x{:.2}, CPU per round x{:.2}",
        cp / sp,
        cc / sc
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.trim());
}
