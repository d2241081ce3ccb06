//! The real server binary as a child process, for the recovery tests: started on a free
//! port with a database in a temporary directory, killed with SIGKILL, stopped with
//! SIGTERM or left to crash at a test hook, and started again on the same database.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use elementals_protocol::messages::{
    ClientMsg, Clocks, EndReason, GameId, GameSnapshot, Phase, SeatPair, ServerMsg,
};
use elementals_protocol::rules::Seat;
use tokio::process::Child;

use elementals_server::db::testing::TestPostgres;

use crate::common::process::{free_addr, server_command, wait_healthy};
use crate::common::{
    http_get, metric_at, play_round, player_at, until, until_status, Backend, TestClient, WAIT,
};

/// A database that outlives the servers started on it: a SQLite file in a temporary
/// directory, or a PostgreSQL database of the test's own (dropped with this value).
pub struct Database {
    dir: tempfile::TempDir,
    pg: Option<TestPostgres>,
    /// The URL servers are given instead of the database's own (through a test's proxy).
    through: Option<String>,
}

impl Database {
    pub fn new() -> Database {
        Database {
            dir: tempfile::tempdir().unwrap(),
            pg: None,
            through: None,
        }
    }

    pub fn on(backend: Backend) -> Database {
        match backend {
            Backend::Sqlite => Database::new(),
            Backend::Postgres => Database {
                dir: tempfile::tempdir().unwrap(),
                pg: Some(TestPostgres::create()),
                through: None,
            },
        }
    }

    /// A database in a directory of its own under `parent` (a filesystem a test mounted).
    pub fn in_dir(parent: &std::path::Path) -> Database {
        Database {
            dir: tempfile::tempdir_in(parent).unwrap(),
            pg: None,
            through: None,
        }
    }

    /// Runs one query returning a number on the PostgreSQL database, as an operator would
    /// (or, with a statement, the rows it changed).
    pub fn sql(&self, sql: &str) -> i64 {
        let url = self
            .pg
            .as_ref()
            .expect("a PostgreSQL database")
            .url()
            .to_owned();
        let sql = sql.to_owned();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            if sql.trim_start().to_uppercase().starts_with("SELECT") {
                client.query_one(&sql, &[]).unwrap().get(0)
            } else {
                client.execute(&sql, &[]).unwrap() as i64
            }
        })
        .join()
        .unwrap()
    }

    /// Runs `sql` (a `SELECT … FOR UPDATE`) in a transaction left open, as an operator's
    /// forgotten session would: its locks are held until the returned `Held` is dropped.
    pub fn hold(&self, sql: &str) -> Held {
        let url = self.url().to_owned();
        let sql = sql.to_owned();
        let (locked, rows) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let mut tx = client.transaction().unwrap();
            locked.send(tx.query(&sql, &[]).unwrap().len()).unwrap();
            // Until the `Held` is dropped (its sender with it).
            let _ = released.recv();
            tx.rollback().unwrap();
        });
        Held {
            rows: rows.recv().unwrap(),
            release: Some(release),
            thread: Some(thread),
        }
    }

    /// A cluster name of this database's own (its name), so that tests sharing one Redis
    /// never share keys.
    pub fn cluster_name(&self) -> String {
        let url = self.pg.as_ref().expect("a PostgreSQL database").url();
        url.rsplit('/').next().unwrap_or("test").to_owned()
    }

    /// The PostgreSQL database's own URL (the test's looks use it, never a proxy).
    pub fn url(&self) -> &str {
        self.pg.as_ref().expect("a PostgreSQL database").url()
    }

    /// Servers started from now on reach the database at `url` (a proxy's).
    pub fn connect_through(&mut self, url: String) {
        self.through = Some(url);
    }

    /// What `--database` gets: the file's path, or the PostgreSQL URL.
    pub fn path(&self) -> PathBuf {
        if let Some(url) = &self.through {
            return PathBuf::from(url);
        }
        match &self.pg {
            Some(pg) => PathBuf::from(pg.url()),
            None => self.dir.path().join("recovery.db"),
        }
    }
}

/// Locks taken by `Database::hold`, released when dropped.
pub struct Held {
    /// The rows the statement returned.
    pub rows: usize,
    release: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

pub struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts the server on `db` and waits until it answers `/healthz`.
    pub async fn start(db: &Database) -> ServerProcess {
        Self::start_crashing_at(db, None).await
    }

    /// Starts node `node_id` of `db`'s cluster (`--redis`, `--cluster`, `--node-id`): the
    /// database is PostgreSQL, the cluster named after it, on the Redis at 127.0.0.1:6379.
    pub async fn start_node(db: &Database, node_id: &str) -> ServerProcess {
        Self::start_node_with(db, node_id, &[]).await
    }

    /// `start_node`, with these `ELEMENTALS_*` settings in its environment too.
    pub async fn start_node_with(
        db: &Database,
        node_id: &str,
        settings: &[(&str, &str)],
    ) -> ServerProcess {
        let cluster = db.cluster_name();
        let mut env = vec![
            ("ELEMENTALS_REDIS", "redis://127.0.0.1:6379"),
            ("ELEMENTALS_CLUSTER", cluster.as_str()),
            ("ELEMENTALS_NODE_ID", node_id),
        ];
        env.extend_from_slice(settings);
        Self::spawn(db, &env, |status| status == 200).await
    }

    /// Starts the server with `ELEMENTALS_CRASH_AT` set to `step` (see `db::crash_point`).
    pub async fn start_crashing_at(db: &Database, step: Option<&str>) -> ServerProcess {
        let env: Vec<_> = step
            .map(|s| ("ELEMENTALS_CRASH_AT", s))
            .into_iter()
            .collect();
        Self::spawn(db, &env, |status| status == 200).await
    }

    /// Starts the server with `ELEMENTALS_HOLD_AT` set to `hold` (`step:ms`, see
    /// `db::hold_point`).
    pub async fn start_holding_at(db: &Database, hold: &str) -> ServerProcess {
        Self::spawn(db, &[("ELEMENTALS_HOLD_AT", hold)], |status| status == 200).await
    }

    /// Starts the server on `db` and waits until `/healthz` answers at all: 200, or 503
    /// while the server cannot write its games' log.
    pub async fn start_answering(db: &Database) -> ServerProcess {
        Self::spawn(db, &[], |status| status == 200 || status == 503).await
    }

    /// Starts the server with every sync of its game log failing (`ELEMENTALS_FAIL_SYNC`,
    /// a `test-hooks` feature).
    pub async fn start_failing_syncs(db: &Database) -> ServerProcess {
        Self::spawn(db, &[("ELEMENTALS_FAIL_SYNC", "1")], |status| status == 200).await
    }

    async fn spawn(db: &Database, env: &[(&str, &str)], up: fn(u16) -> bool) -> ServerProcess {
        let addr = free_addr();
        let mut command = server_command(addr, db.path(), "RECOVERY_TEST_LOGS");
        command
            .env_remove("ELEMENTALS_CRASH_AT")
            .env_remove("ELEMENTALS_FAIL_SYNC")
            .env_remove("ELEMENTALS_HOLD_AT")
            .env_remove("ELEMENTALS_REDIS")
            .env_remove("ELEMENTALS_CLUSTER")
            .env_remove("ELEMENTALS_NODE_ID")
            .envs(env.iter().copied());
        let mut child = command.spawn().expect("the server binary starts");
        wait_healthy(&mut child, addr, up, "the server").await;
        ServerProcess { child, addr }
    }

    /// Sends the process `signal` (`STOP`: paused, its sockets held open; `CONT`: on again).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{signal} {pid}");
    }

    /// `kill -9`: the process ends at once, with nothing flushed beyond what it committed.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    /// Sends SIGTERM and waits (at most `within`) for the process to exit.
    pub async fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.child.id().expect("running").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        tokio::time::timeout(within, self.child.wait())
            .await
            .expect("the server exits in time after SIGTERM")
            .unwrap()
    }

    /// Waits for the process to end by itself (a crash hook aborting it).
    pub async fn crashed(mut self) -> ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server crashes at its hook")
            .unwrap()
    }

    pub async fn http_get(&self, path: &str) -> (u16, String) {
        http_get(self.addr, path).await
    }

    /// Waits until `/metrics`' `name` reaches `value`, polling (metrics are not rate
    /// limited), and panics at `deadline`.
    pub async fn until_metric(&self, name: &str, value: u64, deadline: tokio::time::Instant) {
        until(format!("{name} reaches {value}"), deadline, async || {
            let now = self.metric(name).await;
            if now >= value {
                Ok(())
            } else {
                Err(format!("{now}"))
            }
        })
        .await;
    }

    /// Waits until `/healthz` answers `status` (the server has no event to wait on for
    /// it: a log that takes writes again, a claim made on a timer).
    pub async fn until_health(&self, status: u16) {
        until_status(self.addr, "/healthz", status).await;
    }

    /// A counter or gauge of `/metrics`.
    pub async fn metric(&self, name: &str) -> u64 {
        metric_at(self.addr, name).await
    }

    /// `GET /api/players/{name}` as JSON.
    pub async fn player(&self, name: &str) -> serde_json::Value {
        player_at(self.addr, name).await
    }

    /// Asserts that exactly one rated game, won by `winner` from 1.0 against `loser` at
    /// 1.0, has been applied to both accounts.
    pub async fn assert_rated_once(&self, winner: &str, loser: &str) {
        let won = self.player(winner).await;
        let lost = self.player(loser).await;
        assert_eq!(won["rating"], 1.5, "{won}");
        assert_eq!(
            (&won["wins"], &won["losses"]),
            (&1.into(), &0.into()),
            "{won}"
        );
        assert_eq!(won["history"].as_array().unwrap().len(), 1, "{won}");
        assert_eq!(lost["rating"], 1.0, "{lost}");
        assert_eq!(
            (&lost["wins"], &lost["losses"]),
            (&0.into(), &1.into()),
            "{lost}"
        );
        assert_eq!(lost["history"].as_array().unwrap().len(), 1, "{lost}");
    }
}

/// Signs in again with `token`; returns the client and the snapshot of the game it is
/// seated in, if any.
pub async fn resume_at(addr: SocketAddr, token: &str) -> (TestClient, Option<GameSnapshot>) {
    let mut client = TestClient::connect_at(addr).await;
    match client.resume(token).await {
        ServerMsg::Authenticated { .. } => client.token = Some(token.into()),
        other => panic!("resume failed: {other:?}"),
    }
    // A seated player's snapshot is queued right after `authenticated`; a ping's answer
    // comes after it, so anything before the pong is all there is.
    let id = client.id();
    client.send(&ClientMsg::Ping { id }).await;
    let mut snapshot = None;
    loop {
        match client.recv().await {
            ServerMsg::Pong { id: pong } if pong == id => break,
            ServerMsg::Snapshot { snapshot: s, .. } => snapshot = Some(s),
            _ => {}
        }
    }
    (client, snapshot)
}

/// Signs in as a guest and watches `game`; returns the spectator and its snapshot.
pub async fn watch_at(
    addr: SocketAddr,
    game: elementals_protocol::messages::GameId,
) -> (TestClient, GameSnapshot) {
    let mut client = TestClient::connect_at(addr).await;
    let id = client.id();
    assert!(matches!(
        client.request(ClientMsg::Guest { id }).await,
        ServerMsg::Authenticated { .. }
    ));
    let id = client.id();
    match client.request(ClientMsg::Watch { id, game_id: game }).await {
        ServerMsg::Snapshot { snapshot, .. } => (client, snapshot),
        other => panic!("watch failed: {other:?}"),
    }
}

/// Seat two's 2 beats seat one's 5 and moves one square towards -3: three such rounds win.
pub const TWO_WINS: (u16, u16) = (5, 2);

/// Round 2 under way with every step acknowledged, as the tests' crashes find it: both
/// players committed (seat two to win), seat one revealed. Returns the banks as of that
/// reveal, the last step the server acknowledged (and so logged).
pub async fn round_two_half_revealed(
    one: &mut TestClient,
    two: &mut TestClient,
    g: GameId,
) -> (u64, u64) {
    let (n1, n2) = (rand::random(), rand::random());
    crate::common::assert_ok(&one.commit(g, 2, Seat::One, TWO_WINS.0, n1).await);
    crate::common::assert_ok(&two.commit(g, 2, Seat::Two, TWO_WINS.1, n2).await);
    crate::common::assert_ok(&one.reveal(g, 2, TWO_WINS.0, n1).await);
    match one
        .expect("revealed", |m| {
            matches!(
                m,
                ServerMsg::Revealed {
                    round: 2,
                    seat: Seat::One,
                    ..
                }
            )
        })
        .await
    {
        ServerMsg::Revealed { clocks, .. } => banks(&clocks),
        _ => unreachable!(),
    }
}

/// Both players' session tokens, to sign in again with after the server is gone.
pub fn tokens(one: &TestClient, two: &TestClient) -> (String, String) {
    (one.token.clone().unwrap(), two.token.clone().unwrap())
}

/// Both banks as a message showed them.
pub fn banks(clocks: &Clocks) -> (u64, u64) {
    (clocks.one_ms, clocks.two_ms)
}

/// The banks survived the outage: as logged at the last step (to the millisecond the
/// log's microseconds round to), and stopped until both players are back.
pub fn assert_banks_kept(snapshot: &GameSnapshot, before: (u64, u64)) {
    let (one, two) = banks(&snapshot.clocks);
    assert!(
        one.abs_diff(before.0) <= 1 && two.abs_diff(before.1) <= 1,
        "banks {:?} after the restart, {before:?} before",
        (one, two)
    );
    assert_eq!(snapshot.clocks.running, SeatPair::new(false, false));
}

/// A restored game whose round `round` was interrupted: voided and waiting for commitments.
pub fn assert_round_voided(snapshot: &GameSnapshot, round: u32) {
    assert_eq!(snapshot.round, round);
    assert_eq!(snapshot.phase, Phase::Commit);
    assert_eq!(snapshot.committed, SeatPair::new(false, false));
    assert_eq!(snapshot.revealed, SeatPair::new(false, false));
    assert_eq!(snapshot.rounds.len(), round as usize - 1);
    assert_eq!(snapshot.result, None);
}

/// Plays rounds `from..=3` with two winning each, and waits for the game's end.
pub async fn two_wins_from(one: &mut TestClient, two: &mut TestClient, game: GameId, from: u32) {
    for round in from..=3 {
        play_round(one, two, game, round, TWO_WINS).await;
    }
    seat_two_won([one, two], EndReason::Edge).await;
}

/// Both players see seat two win by `reason`, rated, and hear their rating change.
pub async fn seat_two_won(players: [&mut TestClient; 2], reason: EndReason) {
    for player in players {
        match player
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, rated, .. } => {
                assert_eq!((result.winner, result.reason), (Some(Seat::Two), reason));
                assert!(rated);
            }
            _ => unreachable!(),
        }
        player
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
}
