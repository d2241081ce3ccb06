//! A cluster of real `elementals-server` processes on loopback (issue 26): every node on
//! one fresh PostgreSQL database and the Redis at 127.0.0.1:6379, under a cluster name of
//! the test's own, whose keys are deleted when the cluster is dropped.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use elementals_protocol::messages::{ClientMsg, GameId, GameInfo, GameSnapshot, MyGame, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use elementals_server::db::testing::TestPostgres;
use tokio::process::Child;

use crate::common::process::{free_addr, server_command, wait_healthy};
use crate::common::{http_get, player_at, TestClient, WAIT};

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

/// A client of `node`'s, registered as `name`.
pub async fn signed_in(node: &Node, name: &str) -> TestClient {
    let mut client = TestClient::connect_at(node.addr).await;
    client.register(name).await;
    client
}

/// `client` opens a rated classical blitz seek; its id.
pub async fn seek_id_at(client: &mut TestClient) -> u64 {
    let id = client.id();
    let created = client
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: true,
        })
        .await;
    match created {
        ServerMsg::SeekCreated { seek, .. } => seek.seek_id,
        other => panic!("{other:?}"),
    }
}

/// Whether `client`'s node sees nobody in any pool (as its lobby counted them last) and
/// no seek open.
pub async fn lobby_empty(client: &mut TestClient) -> bool {
    let id = client.id();
    let pools = match client.request(ClientMsg::LobbyCounts { id }).await {
        ServerMsg::Counts { pools, .. } => pools,
        other => panic!("{other:?}"),
    };
    let id = client.id();
    let seeks = match client.request(ClientMsg::ListSeeks { id }).await {
        ServerMsg::Seeks { seeks, .. } => seeks,
        other => panic!("{other:?}"),
    };
    pools.is_empty() && seeks.is_empty()
}

/// Waits until `client`'s node sees nobody in any pool and no seek open, failing with
/// `what` after `within`.
pub async fn until_lobby_empty(client: &mut TestClient, within: Duration, what: &str) {
    let deadline = tokio::time::Instant::now() + within;
    while !lobby_empty(client).await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(LIST_POLL).await;
    }
}

/// `GET /api/me/games` on `addr` with `token`'s session.
pub async fn http_my_games(addr: SocketAddr, token: &str) -> Vec<MyGame> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /api/me/games HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{text}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A TCP proxy to Redis: forwards every connection while up; cut, it closes every
/// connection and refuses new ones (Redis itself, shared, is never stopped).
pub struct Proxy {
    pub addr: SocketAddr,
    up: tokio::sync::watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start() -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = tokio::sync::watch::channel(true);
        let accept = tokio::spawn({
            let up = up.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    if !*up.borrow() {
                        continue;
                    }
                    let mut down = up.subscribe();
                    tokio::spawn(async move {
                        let Ok(server) = tokio::net::TcpStream::connect("127.0.0.1:6379").await
                        else {
                            return;
                        };
                        let (mut client, mut server) = (client, server);
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            _ = down.wait_for(|up| !*up) => {}
                        }
                    });
                }
            }
        });
        Proxy { addr, up, accept }
    }

    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads `client`'s numbered events up to and including `game_over`.
pub async fn events_until_over(client: &mut TestClient) -> Vec<ServerMsg> {
    let mut events = Vec::new();
    loop {
        let msg = tokio::time::timeout(WAIT, client.recv())
            .await
            .expect("the game's events arrive");
        let over = matches!(msg, ServerMsg::GameOver { .. });
        if msg.seq().is_some() {
            events.push(msg);
        }
        if over {
            return events;
        }
    }
}

/// Reads `spectator`'s events to the game's end: every event numbered after `seq` comes
/// once and in order.
pub async fn seen_once_in_order_after(spectator: &mut TestClient, seq: u64) {
    let seen = events_until_over(spectator).await;
    let after: Vec<u64> = seen
        .iter()
        .filter_map(ServerMsg::seq)
        .filter(|s| *s > seq)
        .collect();
    let expected: Vec<u64> = (seq + 1..=seq + after.len() as u64).collect();
    assert_eq!(after, expected, "{seen:?}");
}

/// Reads `spectator`'s events to the game's end: every event after `snapshot`, once and
/// in order, with `rounds` round results among them.
pub async fn watched_to_the_end(
    spectator: &mut TestClient,
    snapshot: &GameSnapshot,
    rounds: usize,
) {
    let seen = events_until_over(spectator).await;
    let seqs: Vec<u64> = seen.iter().filter_map(ServerMsg::seq).collect();
    let expected: Vec<u64> = (snapshot.seq + 1..=snapshot.seq + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "{seen:?}");
    let results = seen
        .iter()
        .filter(|m| matches!(m, ServerMsg::RoundResult { .. }))
        .count();
    assert_eq!(results, rounds, "{seen:?}");
}

/// The game's end as both its players see it (seat two won, rated), and its rating change
/// applied once, whichever of `nodes` is asked (each player 1.0 before the game).
pub async fn seat_two_won_rated_once(
    players: [&mut TestClient; 2],
    game: &GameInfo,
    nodes: &[&Node],
) {
    for client in players {
        match client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, .. } => assert_eq!(result.winner, Some(Seat::Two)),
            _ => unreachable!(),
        }
        client
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
    let (loser, winner) = (&game.players.one.name, &game.players.two.name);
    for node in nodes {
        let won = node.player(winner).await;
        let lost = node.player(loser).await;
        assert_eq!(won["rating"], 1.5, "{won}");
        assert_eq!(won["history"].as_array().unwrap().len(), 1, "{won}");
        assert_eq!(lost["rating"], 1.0, "{lost}");
        assert_eq!(lost["history"].as_array().unwrap().len(), 1, "{lost}");
    }
}
