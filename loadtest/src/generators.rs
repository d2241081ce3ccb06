//! A run over several generator processes (`--processes K`) and/or a cluster of the
//! run's own (`--nodes N`): this process starts the servers, re-executes itself K times as
//! generator children (each with a share of the players, `run::Slice`), watches their
//! holds (each says on stdout when its hold starts and ends) to read every process's CPU
//! over the hold, kills a node at the middle of the hold with `--kill-node`, and merges
//! the children's raw figures (`dump.rs`) into one report.

use std::io::Write;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::ValueEnum;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::cluster::{metric, LocalCluster};
use crate::conn::spread_over_sources;
use crate::cpu::{self, Watched};
use crate::dump::Dump;
use crate::failover;
use crate::limits;
use crate::local::LocalServer;
use crate::options::RunOptions;
use crate::report::{ClusterReport, Counters, Report};
use crate::run::{drive, loopback_addresses, CpuUse, Memories};
use crate::slice::Slice;
use crate::stats::Stats;

/// What a generator child prints on stdout when its hold starts and ends.
pub const HOLD_START: &str = "hold-start";
pub const HOLD_END: &str = "hold-end";

/// Beyond the ramp and the hold, how long the children may take (signing in stragglers,
/// stopping) before they are killed.
const CHILD_MARGIN: Duration = Duration::from_secs(180);

/// A line to the parent.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A generator child: its share of the players against the parent's servers.
pub async fn child(options: RunOptions) -> anyhow::Result<()> {
    let text = options.generator.as_deref().unwrap_or_default();
    let (index, count) = text
        .split_once('/')
        .and_then(|(i, k)| Some((i.parse::<u64>().ok()?, k.parse::<u64>().ok()?)))
        .filter(|(i, k)| i < k)
        .with_context(|| format!("--generator {text:?}: expected I/K"))?;
    limits::raise().context("raising RLIMIT_NOFILE")?;
    // The parent holds our stdin: when it is gone, so is the run.
    tokio::spawn(async {
        crate::local::parent_gone().await;
        eprintln!("generator: the run's process is gone; stopping");
        std::process::exit(1);
    });
    spread_over_sources(options.players + options.spectators);
    let servers = loopback_addresses(&options.child_servers)?;
    let slice = Slice::share(&options, index, count);
    drive(&options, servers, &slice, None, None, None).await?;
    Ok(())
}

pub async fn orchestrate(options: RunOptions) -> anyhow::Result<Report> {
    if options.echo || options.fanout_ceiling || options.reconnect_storm {
        bail!("--echo, --fanout-ceiling and --reconnect-storm run in one process: not with --nodes or --processes");
    }
    if options.sampling().is_some() {
        bail!("--sample-every and --samples-csv sample one local server: not with --nodes or --processes");
    }
    if options.kill_node && options.nodes < 2 {
        bail!("--kill-node needs a cluster of the run's own: --nodes 2 or more");
    }
    if options.nodes > 0 && !options.server.is_empty() {
        bail!("--nodes starts the run's own cluster: not with --server");
    }
    if options.postgres && (options.nodes > 0 || !options.server.is_empty()) {
        bail!("--postgres starts the run's own server on PostgreSQL: not with --nodes or --server");
    }
    let processes = u64::from(options.processes.max(1));
    let limit = limits::raise().context("reading RLIMIT_NOFILE")?;
    let per_process = (options.players + options.spectators).div_ceil(processes);
    limits::check(&limit, per_process, None)?;
    eprintln!(
        "{processes} generator processes, up to {per_process} connections each (open files: hard limit {})",
        limit.hard
    );

    let mut cluster = None;
    let mut local = None;
    // With `--postgres`: the single server's database, dropped after it stops.
    let mut database = None;
    let servers = if options.nodes > 0 {
        let started = LocalCluster::start(
            options.nodes,
            options.argon2_memory_kib,
            &options.server_args,
        )
        .await?;
        let addrs = started.addrs.clone();
        cluster = Some(started);
        addrs
    } else if !options.server.is_empty() {
        loopback_addresses(&options.server)?
    } else if options.postgres {
        let db = crate::cluster::postgres_database()?;
        let mut args = vec![format!("--database={}", db.url())];
        args.extend(options.server_args.iter().cloned());
        let server = LocalServer::game_at(options.argon2_memory_kib, &args, None).await?;
        eprintln!(
            "local server on PostgreSQL: pid {} on {}",
            server.pid, server.addr
        );
        let addr = server.addr;
        local = Some(server);
        database = Some(db);
        vec![addr]
    } else {
        let server = LocalServer::game(options.argon2_memory_kib, &options.server_args).await?;
        eprintln!("local server: pid {} on {}", server.pid, server.addr);
        let addr = server.addr;
        local = Some(server);
        vec![addr]
    };
    // Interrupted (Ctrl-C), the run still stops its nodes and removes its database and keys.
    let result = tokio::select! {
        result = generate(
            &options,
            &servers,
            cluster.as_mut(),
            local.as_ref(),
            database.as_ref().map(|db| db.name()),
        ) => result,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    if let Some(cluster) = cluster {
        cluster.stop().await;
    }
    if let Some(local) = local {
        local.stop().await;
    }
    drop(database);
    result
}

/// The hold as the parent sees it: CPU snapshots when the last child's hold started and
/// when the first child's ended.
#[derive(Default)]
struct Hold {
    started: usize,
    start: Option<cpu::Snapshot>,
    end: Option<cpu::Snapshot>,
}

async fn generate(
    options: &RunOptions,
    servers: &[SocketAddr],
    mut cluster: Option<&mut LocalCluster>,
    local: Option<&LocalServer>,
    database: Option<&str>,
) -> anyhow::Result<Report> {
    let processes = options.processes.max(1) as usize;
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let tag = format!("{:04x}", rand::random::<u16>());
    let exe = std::env::current_exe().context("finding this executable")?;
    let mut children: Vec<Child> = Vec::new();
    // Each child's stdin, held open until the run ends (`Child::wait` would close it, and
    // a child whose stdin closes stops: its parent is gone).
    let mut stdins = Vec::new();
    let mut watched: Vec<Watched> = Vec::new();
    let (lines_tx, mut lines) = mpsc::unbounded_channel::<(usize, String)>();
    for i in 0..processes {
        let mut command = Command::new(&exe);
        command
            .args(std::env::args_os().skip(1))
            .arg(format!("--generator={i}/{processes}"))
            .arg(format!("--tag={tag}"))
            .arg(format!(
                "--dump={}",
                dir.path().join(format!("{i}.json")).display()
            ));
        for addr in servers {
            command.arg(format!("--child-server={addr}"));
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting a generator process")?;
        watched.push(Watched {
            name: "generators".into(),
            pid: child.id().context("a generator exited at once")?,
        });
        stdins.push(child.stdin.take());
        let mut out = BufReader::new(child.stdout.take().expect("piped")).lines();
        let tx = lines_tx.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                let _ = tx.send((i, line));
            }
        });
        children.push(child);
    }
    drop(lines_tx);
    match (&cluster, local) {
        (Some(cluster), _) => {
            for (id, pid) in cluster.pids() {
                watched.push(Watched {
                    name: format!("node {id}"),
                    pid,
                });
            }
            watched.extend(cpu::services(cluster.database()));
        }
        (None, Some(local)) => {
            watched.push(Watched {
                name: "server".into(),
                pid: local.pid,
            });
            if let Some(database) = database {
                watched.extend(cpu::services(database));
            }
        }
        (None, None) => {}
    }
    let server_names: Vec<String> = watched
        .iter()
        .filter(|w| w.name.starts_with("node ") || w.name == "server")
        .map(|w| w.name.clone())
        .collect();

    // Follow the children's holds; kill a node in the middle of it if asked.
    let hold = Arc::new(Mutex::new(Hold::default()));
    let follow = {
        let (hold, mut watched, servers) = (hold.clone(), watched.clone(), servers.to_vec());
        // PostgreSQL's backends are found again as the hold starts: a server opens some of
        // its connections only once it is busy, and closes its migration's.
        let database = database
            .map(str::to_owned)
            .or_else(|| cluster.as_ref().map(|c| c.database().to_owned()));
        let quarter = options.duration / 4;
        tokio::spawn(async move {
            let mut connections = None;
            while let Some((_, line)) = lines.recv().await {
                let started = {
                    let mut hold = hold.lock().expect("hold lock");
                    match line.trim() {
                        HOLD_START => {
                            hold.started += 1;
                            let all = hold.started == processes;
                            if all {
                                if let Some(database) = &database {
                                    watched.retain(|w| !cpu::is_service(w));
                                    watched.extend(cpu::services(database));
                                }
                                hold.start = Some(cpu::snapshot(&watched));
                            }
                            all
                        }
                        HOLD_END if hold.end.is_none() => {
                            hold.end = Some(cpu::snapshot(&watched));
                            false
                        }
                        _ => false,
                    }
                };
                if started {
                    // Where the players are, as each server counts them, a quarter into
                    // the hold (before a `--kill-node` at its middle).
                    let servers = servers.clone();
                    connections = Some(tokio::spawn(async move {
                        tokio::time::sleep(quarter).await;
                        let mut open = Vec::new();
                        for addr in &servers {
                            let n = metric(*addr, "elementals_connections").await;
                            open.push(n.map(|n| n as u64));
                        }
                        open
                    }));
                }
            }
            match connections {
                Some(task) => task.await.unwrap_or_default(),
                None => Vec::new(),
            }
        })
    };
    let ramp_s = (options.players + options.spectators) as f64 / options.ramp_per_s.max(1) as f64;
    let deadline = tokio::time::Instant::now()
        + Duration::from_secs_f64(ramp_s)
        + options.duration
        + CHILD_MARGIN;
    let failover = match (options.kill_node, cluster.as_deref_mut()) {
        (true, Some(cluster)) => {
            let held = || hold.lock().expect("hold lock").start.is_some();
            while !held() {
                if tokio::time::Instant::now() > deadline {
                    bail!("the generators' holds did not start in time");
                }
                for (i, child) in children.iter_mut().enumerate() {
                    if let Some(status) = child.try_wait()? {
                        bail!("generator {i} ended before its hold: {status}");
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(options.duration / 2).await;
            Some(failover::kill_and_watch(cluster).await?)
        }
        _ => None,
    };
    for (i, child) in children.iter_mut().enumerate() {
        match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => bail!("generator {i} failed: {status}"),
            Ok(Err(e)) => bail!("generator {i}: {e}"),
            Err(_) => bail!("generator {i} did not finish in time"),
        }
    }
    drop(stdins);
    let connections_at_hold_end = follow.await.unwrap_or_default();

    let dumps = (0..processes)
        .map(|i| Dump::read(&dir.path().join(format!("{i}.json"))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let stats = Stats::default();
    let (mut at_start, mut at_end) = (Counters::default(), Counters::default());
    let (mut hold_s, mut ramp_s, mut in_game, mut connected) = (0.0, 0.0f64, 0, 0);
    let mut loadtest_cores = None;
    for dump in &dumps {
        dump.add_to(&stats);
        at_start = at_start.add(dump.at_start);
        at_end = at_end.add(dump.at_end);
        hold_s += dump.hold_s / dumps.len() as f64;
        ramp_s = ramp_s.max(dump.ramp_s);
        in_game += dump.in_game_at_end;
        connected += dump.connected_at_end;
        if let Some(cores) = dump.loadtest_cores {
            *loadtest_cores.get_or_insert(0.0) += cores;
        }
    }
    let cores = {
        let hold = hold.lock().expect("hold lock");
        match (&hold.start, &hold.end) {
            (Some(start), Some(end)) => cpu::cores(start, end),
            _ => Vec::new(),
        }
    };
    let server_cores = cores
        .iter()
        .filter(|c| server_names.contains(&c.name))
        .map(|c| c.cores)
        .reduce(|a, b| a + b);
    let failover = match (failover, cluster.as_deref()) {
        (Some(watch), Some(cluster)) => Some(watch.check_rounds(cluster, &dumps).await?),
        _ => None,
    };
    let report = Report::new(
        options,
        &stats,
        at_start,
        at_end,
        hold_s,
        ramp_s,
        (in_game, connected),
        Memories {
            baseline: None,
            at_hold: None,
            peak: None,
        },
        None,
        None,
        CpuUse {
            server_cores,
            loadtest_cores,
        },
        None,
    );
    Ok(report.with_cluster(ClusterReport {
        nodes: servers.len(),
        processes,
        spread: options
            .spread
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned()),
        connections_at_hold_end,
        cores,
        failover,
    }))
}
