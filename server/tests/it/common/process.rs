//! The real `elementals-server` binary as a child process on a free loopback port: the
//! command every harness starts it with, and the wait until it answers `/healthz`.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::{try_get, until, POLL};

/// How long a server may take to answer `/healthz` after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A free loopback address for a server process to listen on. Another process could take
/// the port between this probe and the server's bind; on loopback with ephemeral ports
/// that is rare enough for a test.
pub fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The server binary listening on `addr` with `database`, cheap password hashing and a
/// high message rate, killed when dropped; its output is discarded unless the
/// environment variable `logs_var` is set.
pub fn server_command(addr: SocketAddr, database: impl AsRef<OsStr>, logs_var: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_elementals-server"));
    command
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--database")
        .arg(database)
        .env("ELEMENTALS_ARGON2_MEMORY_KIB", "8")
        .env("ELEMENTALS_MESSAGE_RATE", "1000")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if std::env::var_os(logs_var).is_none() {
        command.stdout(Stdio::null()).stderr(Stdio::null());
    }
    command
}

/// Polls `addr`'s `/healthz` until `up` accepts its status; panics, naming the process
/// `what`, if it exits first or is not up within 20 s.
pub async fn wait_healthy(child: &mut Child, addr: SocketAddr, up: fn(u16) -> bool, what: &str) {
    until(format!("{what} comes up"), START_TIMEOUT, async || {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what} exited while starting: {status}");
        }
        matches!(
            tokio::time::timeout(POLL * 4, try_get(addr, "/healthz")).await,
            Ok(Ok((status, _))) if up(status)
        )
    })
    .await;
}
