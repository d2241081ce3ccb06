//! Servers the run starts for itself, each as a separate process so that its memory can
//! be read from `/proc` apart from the load generator's: this binary re-executed with
//! the hidden `serve` (the game server) or `echo-serve` (a bare WebSocket echo server)
//! subcommand. The child prints `listening ADDR` on stdout and stops when its stdin
//! closes, so it never outlives the run.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{TcpListener, TcpSocket};
use tokio::process::{Child, Command};

/// Pending connections the listener queues; the kernel caps it at `somaxconn` (4096
/// here). A reconnect storm opens thousands at once.
const LISTEN_BACKLOG: u32 = 4096;

/// A server in a child process.
pub struct LocalServer {
    child: Child,
    pub addr: SocketAddr,
    pub pid: u32,
    _dir: Option<tempfile::TempDir>,
}

/// Names another `elementals-loadtest` executable whose `serve` and `echo-serve` to run.
pub const SERVER_EXE_VAR: &str = "ELEMENTALS_LOADTEST_SERVER_EXE";

impl LocalServer {
    /// Start the game server on a fresh database in a temporary directory.
    pub async fn game(argon2_memory_kib: u32, extra: &[String]) -> anyhow::Result<LocalServer> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let database = dir.path().join("loadtest.db");
        let mut args = vec![format!("--database={}", database.display())];
        args.extend(extra.iter().cloned());
        LocalServer::game_at(argon2_memory_kib, &args, Some(dir)).await
    }

    /// Start the game server with `extra` flags (its `--database` among them), keeping
    /// `dir` until it stops.
    pub async fn game_at(
        argon2_memory_kib: u32,
        extra: &[String],
        dir: Option<tempfile::TempDir>,
    ) -> anyhow::Result<LocalServer> {
        let mut args = vec![
            "serve".to_owned(),
            "--listen=127.0.0.1:0".to_owned(),
            format!("--argon2-memory-kib={argon2_memory_kib}"),
            // Thousands of players sign up from a few loopback addresses: the per-address
            // limits on new accounts and API requests would refuse most of them.
            "--new-accounts-per-ip=0".to_owned(),
            "--http-requests-per-ip=0".to_owned(),
        ];
        args.extend(extra.iter().cloned());
        LocalServer::spawn(&args, dir).await
    }

    /// Start the bare echo server.
    pub async fn echo() -> anyhow::Result<LocalServer> {
        LocalServer::spawn(&["echo-serve".to_owned()], None).await
    }

    /// Start the bare broadcast server (the fan-out ceiling).
    pub async fn broadcast() -> anyhow::Result<LocalServer> {
        LocalServer::spawn(&["broadcast-serve".to_owned()], None).await
    }

    async fn spawn(args: &[String], dir: Option<tempfile::TempDir>) -> anyhow::Result<LocalServer> {
        // Another build's `serve` may be measured against this load generator (a server
        // built differently, with the generator unchanged): its path in this variable.
        let exe = match std::env::var_os(SERVER_EXE_VAR) {
            Some(path) => path.into(),
            None => std::env::current_exe().context("finding this executable")?,
        };
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting the local server process")?;
        let pid = child.id().ok_or_else(|| anyhow!("server exited at once"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .context("the local server did not start within 30 s")??
            .ok_or_else(|| anyhow!("the local server exited before listening"))?;
        let addr = first
            .strip_prefix("listening ")
            .and_then(|a| a.trim().parse().ok())
            .ok_or_else(|| anyhow!("unexpected first line from the local server: {first:?}"))?;
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(LocalServer {
            child,
            addr,
            pid,
            _dir: dir,
        })
    }

    /// Ask the server to stop (close its stdin) and wait for it, then make sure.
    pub async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }

    /// `kill -9`, and wait for it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    pub fn memory(&self) -> Option<Memory> {
        Memory::of(self.pid)
    }
}

/// A process's resident memory, from `/proc/PID/status`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// VmRSS: resident now.
    pub rss: u64,
    /// VmHWM: the peak resident size so far.
    pub peak: u64,
}

impl Memory {
    pub fn of(pid: u32) -> Option<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = status.lines().find(|l| l.starts_with(name))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        };
        Some(Memory {
            rss: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }
}

/// CPU time (user + system) a process has used so far, from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start after ") ".
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / per_s)
}

/// The machine's count of connections its listeners' full accept queues turned away
/// (`TcpExt: ListenOverflows` in `/proc/net/netstat`; every listener of the network
/// namespace, so on a quiet machine the server's). A turned-away client's SYN is retried
/// only a second later, then three: a burst that overflows waits on those timers.
pub fn listen_overflows() -> Option<u64> {
    netstat_counter(
        &std::fs::read_to_string("/proc/net/netstat").ok()?,
        "TcpExt",
        "ListenOverflows",
    )
}

/// One counter of `/proc/net/netstat`'s format: for each group, a line of names and then
/// a line of values, both starting with the group's name.
fn netstat_counter(netstat: &str, group: &str, name: &str) -> Option<u64> {
    let prefix = format!("{group}:");
    let mut lines = netstat.lines().filter(|line| line.starts_with(&prefix));
    let names = lines.next()?.split_whitespace().skip(1);
    let values = lines.next()?.split_whitespace().skip(1);
    names
        .zip(values)
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// A loopback listener with a deep accept queue, its address printed for the parent.
pub fn listen(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    // Linux hands TCP_NODELAY down to accepted sockets: without it, a frame written
    // while the previous one is unacknowledged waits for the peer's delayed ACK (40 ms).
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(LISTEN_BACKLOG)?;
    println!("listening {}", listener.local_addr()?);
    Ok(listener)
}

/// Resolves when the parent closes our stdin (or dies): time to stop.
pub async fn parent_gone() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The hidden `serve` subcommand: the real game server, as `elementals-server` runs it,
/// with the given server flags.
pub async fn serve(args: Vec<String>) -> anyhow::Result<()> {
    use clap::Parser;
    let config = elementals_server::Config::try_parse_from(
        std::iter::once("elementals-server".to_owned()).chain(args),
    )?;
    if !config.listen.ip().is_loopback() {
        bail!("the load test's server listens on loopback only");
    }
    // A PostgreSQL URL (`--nodes`) is no path.
    if !config.database.to_string_lossy().starts_with("postgres") {
        ensure_parent_dir(&config.database)?;
    }
    let listener = listen(config.listen)?;
    elementals_server::run(listener, config, parent_gone()).await?;
    Ok(())
}

fn ensure_parent_dir(path: &Path) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_netstat_counter_is_read_by_its_group_and_name() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\n\
                       TcpExt: 0 4879 4880\n\
                       IpExt: InNoRoutes ListenOverflows\n\
                       IpExt: 7 9\n";
        assert_eq!(
            netstat_counter(netstat, "TcpExt", "ListenOverflows"),
            Some(4879)
        );
        assert_eq!(
            netstat_counter(netstat, "IpExt", "ListenOverflows"),
            Some(9)
        );
        assert_eq!(netstat_counter(netstat, "TcpExt", "Nothing"), None);
        assert_eq!(netstat_counter("", "TcpExt", "ListenOverflows"), None);
    }
}
