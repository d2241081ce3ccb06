//! Test harness: start the real server on 127.0.0.1:0 with a temporary database, and a
//! typed WebSocket client that speaks real MessagePack frames, each checked against the
//! protocol's schema (`conform`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use elementals_protocol::commitment;
use elementals_protocol::conformance;
use elementals_protocol::messages::{ClientMsg, GameId, GameInfo, Limits, RequestId, ServerMsg};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::wire;
use elementals_server::db::testing::TestPostgres;
use elementals_server::Config;
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

mod client;
mod http;
mod play;
pub mod process;
mod until;

pub use client::*;
pub use http::*;
pub use play::*;
pub use until::*;

/// How long a test waits for a message it expects before failing (a guard, not a sleep).
pub const WAIT: Duration = Duration::from_secs(15);

pub struct TestServer {
    pub addr: SocketAddr,
    pub db_path: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), elementals_server::ServerError>>>,
    dir: Option<tempfile::TempDir>,
    /// The test's own PostgreSQL database, dropped with the server.
    pg: Option<TestPostgres>,
}

/// The storage backends every test that says so runs on, one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub const BACKENDS: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

/// A server on a fresh database of `backend`.
pub async fn start_server_on(backend: Backend) -> TestServer {
    start_server_on_with(backend, |_| {}).await
}

/// A server on a fresh database of `backend`, its configuration changed by `tweak`.
pub async fn start_server_on_with(backend: Backend, tweak: impl FnOnce(&mut Config)) -> TestServer {
    match backend {
        Backend::Sqlite => start_server_with(tweak).await,
        Backend::Postgres => {
            let pg = TestPostgres::create();
            let mut server = start_on(PathBuf::from(pg.url()), tweak).await;
            server.pg = Some(pg);
            server
        }
    }
}

/// A server on the test's PostgreSQL database `pg`, reached at `url` (through a proxy of
/// the test's, say); the database is dropped with the server.
pub async fn start_server_via(pg: TestPostgres, url: String) -> TestServer {
    let mut server = start_on(PathBuf::from(url), |_| {}).await;
    server.pg = Some(pg);
    server
}

pub fn test_config(db_path: PathBuf) -> Config {
    let mut config = Config::with_database(db_path);
    // The same argon2id, at its smallest memory cost, so tests stay fast.
    config.argon2_memory_kib = 8;
    config.message_rate = 1000;
    config
}

pub async fn start_server() -> TestServer {
    start_server_with(|_| {}).await
}

pub async fn start_server_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("test.db");
    let mut server = start_on(db_path, tweak).await;
    server.dir = Some(dir);
    server
}

async fn start_on(db_path: PathBuf, tweak: impl FnOnce(&mut Config)) -> TestServer {
    let mut config = test_config(db_path.clone());
    tweak(&mut config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(elementals_server::run(listener, config, async move {
        let _ = stopped.await;
    }));
    TestServer {
        addr,
        db_path,
        stop: Some(stop),
        task: Some(task),
        dir: None,
        pg: None,
    }
}

impl TestServer {
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// Shut down gracefully and wait for the server to return.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task)
                .await
                .expect("server stops in time")
                .unwrap()
                .unwrap();
        }
    }

    /// Stop, then start again on the same database file (a new port).
    pub async fn restart(self) -> TestServer {
        self.restart_with(|_| {}).await
    }

    /// `restart`, with the configuration changed by `tweak`.
    pub async fn restart_with(mut self, tweak: impl FnOnce(&mut Config)) -> TestServer {
        self.stop().await;
        let mut next = start_on(self.db_path.clone(), tweak).await;
        next.dir = self.dir.take();
        next.pg = self.pg.take();
        next
    }

    /// Runs a statement on the stopped server's database: `sqlite` on SQLite, `postgres`
    /// (the same statement in PostgreSQL's dialect) on PostgreSQL; returns the first
    /// column of the first row, if it has one, as an integer.
    pub fn sql(&self, sqlite: &str, postgres: &str) -> Option<i64> {
        match &self.pg {
            None => {
                let conn = rusqlite::Connection::open(&self.db_path).unwrap();
                let mut statement = conn.prepare(sqlite).unwrap();
                let mut rows = statement.query([]).unwrap();
                rows.next().unwrap().map(|row| row.get(0).unwrap())
            }
            Some(pg) => {
                // On a thread of its own: the blocking client runs a runtime of its own.
                let (url, sql) = (pg.url().to_owned(), postgres.to_owned());
                std::thread::spawn(move || {
                    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                    let rows = client.query(&sql, &[]).unwrap();
                    rows.first().map(|row| row.get(0))
                })
                .join()
                .unwrap()
            }
        }
    }

    pub async fn http_get(&self, path: &str) -> (u16, String) {
        http_get(self.addr, path).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A metric's current value, from `GET /metrics`.
pub async fn metric(server: &TestServer, name: &str) -> u64 {
    metric_at(server.addr, name).await
}

/// Asks `/metrics` until `name` reads `value` (a gauge catching up with a connection
/// that just ended); fails after `WAIT`.
pub async fn until_metric(server: &TestServer, name: &str, value: u64) {
    until(name, WAIT, async || {
        equal(metric(server, name).await, value)
    })
    .await;
}
