//! A cluster the run starts for itself (`--nodes N`): N `serve` children in cluster mode
//! on loopback, on a PostgreSQL database of the run's own (created on the server at
//! 127.0.0.1:5432, `ELEMENTALS_TEST_POSTGRES` names another; dropped after) and the Redis
//! at 127.0.0.1:6379 under a cluster name of the run's own (its keys deleted after). Also
//! what the failover check reads of PostgreSQL: whose lease each game is under, and the
//! rounds each game holds.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use elementals_client::protocol::messages::GameId;
use elementals_server::record::{LogEntry, LogStep};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::local::LocalServer;

/// The Redis every node of the run's cluster uses.
pub const REDIS: &str = "redis://127.0.0.1:6379";

/// How long a node may take to answer `/healthz` 200 once started.
const NODE_START: Duration = Duration::from_secs(30);

pub struct LocalCluster {
    pub name: String,
    pg: RunDatabase,
    /// Each node, `None` once killed.
    nodes: Vec<Option<LocalServer>>,
    pub addrs: Vec<SocketAddr>,
}

/// Node `i`'s `--node-id`.
pub fn node_id(i: usize) -> String {
    format!("n{i}")
}

impl LocalCluster {
    pub async fn start(
        count: u32,
        argon2_memory_kib: u32,
        extra: &[String],
    ) -> anyhow::Result<LocalCluster> {
        redis_ping().context(
            "--nodes needs Redis at 127.0.0.1:6379 (`bash .ci/services`, or \
             `redis-server --port 6379 --save '' --appendonly no --daemonize yes`)",
        )?;
        let pg = postgres_database()?;
        let name = format!("lt-{}-{:08x}", std::process::id(), rand::random::<u32>());
        let mut cluster = LocalCluster {
            name,
            pg,
            nodes: Vec::new(),
            addrs: Vec::new(),
        };
        for i in 0..count as usize {
            let mut args = vec![
                format!("--database={}", cluster.pg.url()),
                format!("--redis={REDIS}"),
                format!("--cluster={}", cluster.name),
                format!("--node-id={}", node_id(i)),
            ];
            args.extend(extra.iter().cloned());
            let node = LocalServer::game_at(argon2_memory_kib, &args, None).await?;
            eprintln!("node {}: pid {} on {}", node_id(i), node.pid, node.addr);
            cluster.addrs.push(node.addr);
            // One at a time: the first migrates the database, which two at once would race.
            until_healthy(node.addr).await?;
            cluster.nodes.push(Some(node));
        }
        Ok(cluster)
    }

    /// The live nodes' process ids, by node id.
    pub fn pids(&self) -> Vec<(String, u32)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((node_id(i), n.as_ref()?.pid)))
            .collect()
    }

    /// `kill -9` node `i`.
    pub async fn kill(&mut self, i: usize) {
        if let Some(node) = self.nodes.get_mut(i).and_then(Option::take) {
            node.kill().await;
        }
    }

    /// Stop every node (as `LocalServer::stop`), then delete the cluster's Redis keys; the
    /// database goes when `self` drops.
    pub async fn stop(mut self) {
        for node in self.nodes.drain(..).flatten() {
            node.stop().await;
        }
        if let Err(e) = forget_keys(&self.name) {
            eprintln!("could not delete the cluster's Redis keys: {e}");
        }
    }

    fn url(&self) -> String {
        self.pg.url().to_owned()
    }

    /// The database's name (the last part of its URL).
    pub fn database(&self) -> &str {
        self.pg.url().rsplit('/').next().unwrap_or_default()
    }

    /// Each leased game's node, from `game_leases`.
    pub async fn leases(&self) -> anyhow::Result<HashMap<String, String>> {
        let rows = query(self.url(), "SELECT game_id, node_id FROM game_leases").await?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .collect())
    }

    /// Per game, the last round PostgreSQL holds: a recorded game's `rounds`, a live
    /// game's last `result` step in `game_log`; and which games are recorded.
    pub async fn rounds_held(&self) -> anyhow::Result<Held> {
        let mut held = Held::default();
        for row in query(self.url(), "SELECT id, rounds FROM games").await? {
            if let Ok(id) = row.get::<_, String>(0).parse() {
                held.rounds.insert(id, row.get::<_, i64>(1) as u32);
                held.recorded.insert(id);
            }
        }
        for row in query(self.url(), "SELECT game_id, entry FROM game_log").await? {
            let (Ok(id), Ok(step)) = (
                row.get::<_, String>(0).parse::<GameId>(),
                rmp_serde::from_slice::<LogStep>(row.get::<_, &[u8]>(1)),
            ) else {
                continue;
            };
            if let LogEntry::Result { round } = step.entry {
                let last = held.rounds.entry(id).or_insert(0);
                *last = (*last).max(round.round);
            }
        }
        Ok(held)
    }
}

/// What PostgreSQL holds of the run's games.
#[derive(Debug, Default)]
pub struct Held {
    /// Per game, its last round.
    pub rounds: HashMap<GameId, u32>,
    /// The games recorded (finished).
    pub recorded: HashSet<GameId>,
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // Stopped already (`stop`), or an error on the way: the keys go either way.
        let _ = forget_keys(&self.name);
    }
}

/// The PostgreSQL server the run's database is made on, without a database name.
fn server_url() -> String {
    std::env::var("ELEMENTALS_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// The run's own database, dropped (`WITH (FORCE)`) when this drops.
pub struct RunDatabase {
    name: String,
    url: String,
}

impl RunDatabase {
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its name: PostgreSQL's backends serving it name it on their command lines.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for RunDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = admin(&sql) {
            eprintln!("could not drop the run's database: {e}");
        }
    }
}

/// A fresh database, or why not.
pub fn postgres_database() -> anyhow::Result<RunDatabase> {
    let name = format!(
        "elementals_loadtest_{}_{:08x}",
        std::process::id(),
        rand::random::<u32>()
    );
    admin(&format!("CREATE DATABASE {name}")).with_context(|| {
        format!(
            "--nodes and --postgres need PostgreSQL at {} (user postgres, trust on 127.0.0.1; \
             `bash .ci/services`), or ELEMENTALS_TEST_POSTGRES naming another",
            server_url()
        )
    })?;
    Ok(RunDatabase {
        url: format!("{}/{name}", server_url()),
        name,
    })
}

/// One statement on the `postgres` database, on a thread of its own (the blocking client
/// runs a runtime of its own, which cannot start inside the run's).
fn admin(sql: &str) -> anyhow::Result<()> {
    let (url, sql) = (format!("{}/postgres", server_url()), sql.to_owned());
    std::thread::spawn(move || -> anyhow::Result<()> {
        let mut client = postgres::Client::connect(&url, postgres::NoTls)?;
        client.batch_execute(&sql)?;
        Ok(())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the PostgreSQL admin thread panicked"))?
}

/// A query on a thread of its own (see `admin`), awaited.
async fn query(url: String, sql: &'static str) -> anyhow::Result<Vec<postgres::Row>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let rows = postgres::Client::connect(&url, postgres::NoTls)
            .and_then(|mut client| client.query(sql, &[]));
        let _ = tx.send(rows);
    });
    Ok(rx.await.context("the query's thread ended")??)
}

fn redis_ping() -> anyhow::Result<()> {
    let mut con = redis::Client::open(REDIS)?.get_connection()?;
    redis::cmd("PING").query::<String>(&mut con)?;
    Ok(())
}

fn forget_keys(name: &str) -> anyhow::Result<()> {
    let mut con = redis::Client::open(REDIS)?.get_connection()?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{name}:*"))
        .query(&mut con)?;
    if !keys.is_empty() {
        redis::cmd("DEL").arg(keys).query::<()>(&mut con)?;
    }
    Ok(())
}

/// Waits until the node answers `GET /healthz` with 200.
async fn until_healthy(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + NODE_START;
    loop {
        if healthz(addr).await.ok() == Some(200) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the node on {addr} did not answer /healthz 200 within {NODE_START:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn healthz(addr: SocketAddr) -> anyhow::Result<u16> {
    Ok(http_get(addr, "/healthz").await?.0)
}

/// `GET path` on a server: its status and body.
async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await??;
    let text = String::from_utf8_lossy(&response);
    let status = text.get(9..12).context("a status line")?.parse()?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_owned()))
}

/// The value of the metric `name` (without labels) in a server's `/metrics`.
pub async fn metric(addr: SocketAddr, name: &str) -> Option<f64> {
    let (status, body) = http_get(addr, "/metrics").await.ok()?;
    if status != 200 {
        return None;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .find_map(|value| value.trim().parse().ok())
}
