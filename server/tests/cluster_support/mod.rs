//! A cluster of real `elementals-server` processes on loopback (issue 26): every node on
//! one fresh PostgreSQL database and the Redis at 127.0.0.1:6379, under a cluster name of
//! the test's own, whose keys are deleted when the cluster is dropped.
//! Its clients' steps and checks are in `clients.rs`, the cuttable Redis proxy in `proxy.rs`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use elementals_protocol::messages::GameId;
use elementals_server::db::testing::TestPostgres;
use tokio::process::Child;

use crate::common::process::{free_addr, server_command, wait_healthy};
use crate::common::{http_get, player_at, WAIT};

mod clients;
mod proxy;

// Not every crate that includes this module uses them (as `dead_code` above).
#[allow(unused_imports)]
pub use clients::*;
#[allow(unused_imports)]
pub use proxy::Proxy;

/// Where the tests' Redis is (started by `.ci/services`).
pub const REDIS: &str = "redis://127.0.0.1:6379";

/// Between two looks at something the test waits for (a node starting, a game listed).
const POLL: Duration = Duration::from_millis(25);
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

/// Takes the seating marks of every player out of Redis, as if their last game had begun
/// longer ago than the marks last (2 s).
pub fn marks_lapsed(cluster: &Cluster) {
    let mut con = cluster.redis();
    let marks: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:seating:*", cluster.name))
        .query(&mut con)
        .unwrap();
    if !marks.is_empty() {
        redis::cmd("DEL").arg(marks).query::<()>(&mut con).unwrap();
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
    /// The node's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// `kill -9`.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    pub async fn http_get(&self, path: &str) -> (u16, String) {
        http_get(self.addr, path).await
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
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let live = self.live_games().await.unwrap_or_default();
            if games.iter().all(|g| live.contains(g)) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{games:?} not all listed by {}: {live:?}",
                self.addr
            );
            tokio::time::sleep(LIST_POLL).await;
        }
    }

    /// Waits until `/api/games/live` no longer lists `game`.
    pub async fn until_unlisted(&self, game: GameId) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let live = self.live_games().await.unwrap_or_else(|| vec![game]);
            if !live.contains(&game) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{game} still listed by {}",
                self.addr
            );
            tokio::time::sleep(LIST_POLL).await;
        }
    }

    /// Waits until `/api/games/live` lists `game` with `count` spectators.
    pub async fn until_spectators(&self, game: GameId, count: u64) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (status, body) = self.http_get("/api/games/live").await;
            if status == 200 {
                let json: serde_json::Value = serde_json::from_str(&body).unwrap();
                let games = json
                    .get("games")
                    .unwrap_or(&json)
                    .as_array()
                    .unwrap()
                    .clone();
                let id = game.to_string();
                let now = games
                    .iter()
                    .find(|g| g["game_id"] == id.as_str())
                    .and_then(|g| g["spectators"].as_u64());
                if now == Some(count) {
                    return;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{game} not listed with {count} spectators by {}: {body}",
                self.addr
            );
            tokio::time::sleep(LIST_POLL).await;
        }
    }

    /// Waits until `/healthz` answers `status`.
    pub async fn until_health(&self, status: u16) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (now, body) = self.http_get("/healthz").await;
            if now == status {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "/healthz still {now} ({body}), not {status}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// `GET /api/players/{name}` as JSON.
    pub async fn player(&self, name: &str) -> serde_json::Value {
        player_at(self.addr, name).await
    }
}
