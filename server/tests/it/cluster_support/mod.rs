//! A cluster of real `elementals-server` processes on loopback (issue 26): every node on
//! one fresh PostgreSQL database and the Redis at 127.0.0.1:6379, under a cluster name of
//! the test's own, whose keys are deleted when the cluster is dropped.
//! Its clients' steps and checks are in `clients.rs`, the cuttable Redis proxy in `proxy.rs`.

use std::net::SocketAddr;
use std::time::Duration;

use elementals_protocol::messages::GameId;
use elementals_server::db::testing::TestPostgres;
use tokio::process::Child;

use crate::common::process::{free_addr, server_command, wait_healthy};
use crate::common::{equal, player_at, try_get, until, until_every, until_status, WAIT};

mod clients;
mod proxy;

pub use clients::*;
pub use proxy::Proxy;

/// Where the tests' Redis is (started by `.ci/services`).
pub const REDIS: &str = "redis://127.0.0.1:6379";

/// Between two looks at a node's live games (the API allows 10 requests a second).
const LIST_POLL: Duration = Duration::from_millis(200);

pub struct Cluster {
    pub name: String,
    pg: TestPostgres,
    /// The Redis URL the nodes are given: Redis itself, or a proxy of the test's.
    redis: String,
}

pub struct Node {
    child: Child,
    pub addr: SocketAddr,
}

impl Cluster {
    /// A fresh database and cluster name; fails, saying how to start it, without Redis.
    pub fn new() -> Cluster {
        let client = redis::Client::open(REDIS).unwrap();
        if client
            .get_connection()
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_err()
        {
            panic!(
                "these tests need Redis at 127.0.0.1:6379: start it with `bash .ci/services` \
                 (or `redis-server --port 6379 --save '' --appendonly no --daemonize yes`)"
            );
        }
        Cluster {
            name: format!("test-{}-{:08x}", std::process::id(), rand::random::<u32>()),
            pg: TestPostgres::create(),
            redis: REDIS.to_owned(),
        }
    }

    /// A cluster whose nodes reach Redis through `proxy`.
    pub fn through(proxy: &Proxy) -> Cluster {
        let mut cluster = Cluster::new();
        cluster.redis = format!("redis://{}", proxy.addr);
        cluster
    }

    /// One number from the cluster's PostgreSQL database (a `SELECT count(*)`, say).
    pub fn sql(&self, sql: &str) -> i64 {
        let (url, sql) = (self.pg.url().to_owned(), sql.to_owned());
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            client.query_one(&sql, &[]).unwrap().get(0)
        })
        .join()
        .unwrap()
    }

    /// Waits until `sql` (one number) answers `expected`, failing with `what` after
    /// `within`.
    pub async fn until_sql(&self, sql: &str, expected: i64, within: Duration, what: &str) {
        until(format!("{what} ({sql})"), within, async || {
            equal(self.sql(sql), expected)
        })
        .await;
    }

    /// A connection to Redis itself, for the test's own looks and changes.
    pub fn redis(&self) -> redis::Connection {
        redis::Client::open(REDIS)
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Deletes every key of the cluster, as a Redis restarted empty would have lost them.
    pub fn forget_keys(&self) {
        let mut con = self.redis();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.name))
            .query(&mut con)
            .unwrap();
        if !keys.is_empty() {
            redis::cmd("DEL").arg(keys).query::<()>(&mut con).unwrap();
        }
    }

    /// Starts a node and waits until it answers `/healthz`.
    pub async fn node(&self, id: &str) -> Node {
        self.node_on(id, &self.redis, &[]).await
    }

    /// `node`, with these `ELEMENTALS_*` settings in its environment.
    pub async fn node_with(&self, id: &str, env: &[(&str, &str)]) -> Node {
        self.node_on(id, &self.redis, env).await
    }

    /// Starts a node that reaches Redis through `proxy` (the others do not).
    pub async fn node_through(&self, id: &str, proxy: &Proxy) -> Node {
        self.node_on(id, &format!("redis://{}", proxy.addr), &[])
            .await
    }

    /// `node_through`, with these `ELEMENTALS_*` settings in its environment.
    pub async fn node_through_with(&self, id: &str, proxy: &Proxy, env: &[(&str, &str)]) -> Node {
        self.node_on(id, &format!("redis://{}", proxy.addr), env)
            .await
    }

    async fn node_on(&self, id: &str, redis: &str, env: &[(&str, &str)]) -> Node {
        let addr = free_addr();
        let mut command = server_command(addr, self.pg.url(), "CLUSTER_TEST_LOGS");
        command
            .arg("--redis")
            .arg(redis)
            .arg("--cluster")
            .arg(&self.name)
            .arg("--node-id")
            .arg(id)
            .envs(env.iter().copied());
        let mut child = command.spawn().expect("the server binary starts");
        wait_healthy(
            &mut child,
            addr,
            |status| status == 200,
            &format!("node {id}"),
        )
        .await;
        Node { child, addr }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let Ok(mut con) = redis::Client::open(REDIS).and_then(|c| c.get_connection()) else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.name))
            .query(&mut con)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut con);
        }
    }
}

impl Node {
    /// The node's process id (`benches/cluster_hop.rs` reads its CPU time; no test does).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// `kill -9`.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    /// Waits, up to `within`, for the node to stop on its own; its exit status.
    pub async fn stopped(mut self, within: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(within, self.child.wait())
            .await
            .expect("the node stops")
            .unwrap()
    }

    /// The node's number in the cluster, from its `/metrics`.
    pub async fn number(&self) -> u64 {
        let (status, body) = self.http_get("/metrics").await;
        assert_eq!(status, 200, "{body}");
        body.lines()
            .find_map(|l| l.strip_prefix("elementals_cluster_node "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no elementals_cluster_node in {body}"))
    }

    /// `GET path`; a failure to answer panics saying whether the node's process lives.
    pub async fn http_get(&self, path: &str) -> (u16, String) {
        match try_get(self.addr, path).await {
            Ok((status, text)) if status != 0 => {
                let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                (status, body.to_owned())
            }
            answer => {
                let state = self.child.id().and_then(|pid| {
                    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                    Some(status.lines().find(|l| l.starts_with("State:"))?.to_owned())
                });
                let state = state.unwrap_or_else(|| "gone".to_owned());
                panic!(
                    "GET {path} at {}: {answer:?}; its process: {state}",
                    self.addr
                )
            }
        }
    }

    /// The ids in `/api/games/live` (`None`: asked too often, 429).
    pub async fn live_games(&self) -> Option<Vec<GameId>> {
        let (status, body) = self.http_get("/api/games/live").await;
        if status == 429 {
            return None;
        }
        assert_eq!(status, 200, "{body}");
        let json: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let games = json.get("games").unwrap_or(&json);
        let games = games
            .as_array()
            .unwrap_or_else(|| panic!("a list of games: {json}"));
        Some(
            games
                .iter()
                .map(|g| g["game_id"].as_str().unwrap().parse().unwrap())
                .collect(),
        )
    }

    /// Waits until `/api/games/live` lists every game of `games` (looking every
    /// `LIST_POLL`, under the API's rate limit).
    pub async fn until_listed(&self, games: &[GameId]) {
        let what = format!("{games:?} all listed by {}", self.addr);
        until_every(what, WAIT, LIST_POLL, async || {
            let live = self.live_games().await.unwrap_or_default();
            if games.iter().all(|g| live.contains(g)) {
                Ok(())
            } else {
                Err(format!("{live:?}"))
            }
        })
        .await;
    }

    /// Waits until `/api/games/live` no longer lists `game`.
    pub async fn until_unlisted(&self, game: GameId) {
        let what = format!("{game} no longer listed by {}", self.addr);
        until_every(what, WAIT, LIST_POLL, async || {
            let live = self.live_games().await.unwrap_or_else(|| vec![game]);
            !live.contains(&game)
        })
        .await;
    }

    /// Waits until `/api/games/live` lists `game` with `count` spectators.
    pub async fn until_spectators(&self, game: GameId, count: u64) {
        let what = format!("{game} listed with {count} spectators by {}", self.addr);
        let id = game.to_string();
        until_every(what, WAIT, LIST_POLL, async || {
            let (status, body) = self.http_get("/api/games/live").await;
            if status != 200 {
                return Err(body);
            }
            let json: serde_json::Value = serde_json::from_str(&body).unwrap();
            let games = json.get("games").unwrap_or(&json).as_array().unwrap();
            let now = games
                .iter()
                .find(|g| g["game_id"] == id.as_str())
                .and_then(|g| g["spectators"].as_u64());
            if now == Some(count) {
                Ok(())
            } else {
                Err(body)
            }
        })
        .await;
    }

    /// Waits until `/healthz` answers `status`.
    pub async fn until_health(&self, status: u16) {
        until_status(self.addr, "/healthz", status).await;
    }

    /// `GET /api/players/{name}` as JSON.
    pub async fn player(&self, name: &str) -> serde_json::Value {
        player_at(self.addr, name).await
    }
}
