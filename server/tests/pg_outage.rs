//! PostgreSQL out of reach, with the server in process and a TCP proxy of the test's own
//! between it and PostgreSQL (loopback), which the test cuts and restores; the shared
//! PostgreSQL server itself is never stopped.
//!
//! - While the proxy is cut, a game's moves are answered `unavailable` and published to
//!   nobody, `/healthz` and the HTTP reads answer 503; once it is restored, every
//!   connection is made again, the held game goes on by itself, finishes, and its rated
//!   result is recorded once.
//! - A finished game's COMMIT whose answer is lost (the proxy forwards the COMMIT, lets
//!   PostgreSQL answer it, and drops the answer): the game is recorded and rated once,
//!   and a restart, which records every game whose log is still there, rates nobody twice.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use elementals_protocol::messages::{GameId, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
use elementals_server::db::testing::{server_url, TestPostgres};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// A tie: nobody moves.
const TIE: u16 = 1;

/// What the proxy is told to do with a writer's COMMIT.
type CommitCut = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// The proxy: forwards every connection to PostgreSQL while it is up; cut, it closes every
/// connection and refuses new ones.
struct Proxy {
    addr: SocketAddr,
    up: watch::Sender<bool>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
    commit_cut: CommitCut,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let target = server_url()
            .rsplit_once('@')
            .map(|(_, host)| host.trim_end_matches('/').to_owned())
            .expect("the test server's URL names a host");
        let (up, _) = watch::channel(true);
        let pumps: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let commit_cut: CommitCut = Arc::default();
        let accept = tokio::spawn({
            let up = up.clone();
            let pumps = Arc::clone(&pumps);
            let commit_cut = Arc::clone(&commit_cut);
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    if !*up.borrow() {
                        continue;
                    }
                    let pump = tokio::spawn(pump(
                        client,
                        target.clone(),
                        up.subscribe(),
                        Arc::clone(&commit_cut),
                    ));
                    pumps.lock().unwrap().push(pump);
                }
            }
        });
        Proxy {
            addr,
            up,
            pumps,
            commit_cut,
            accept,
        }
    }

    /// The URL of `pg`'s database through the proxy.
    fn url(&self, pg: &TestPostgres) -> String {
        let server = server_url();
        let (user, _) = server.rsplit_once('@').unwrap();
        let (_, name) = pg.url().rsplit_once('/').unwrap();
        format!("{user}@{}/{name}", self.addr)
    }

    /// Closes every connection (returns once each is closed) and refuses new ones.
    async fn cut(&self) {
        self.up.send_replace(false);
        let pumps = std::mem::take(&mut *self.pumps.lock().unwrap());
        for pump in pumps {
            pump.await.unwrap();
        }
    }

    fn restore(&self) {
        self.up.send_replace(true);
    }

    /// The next COMMIT of the connection that records games is forwarded, PostgreSQL's
    /// answer read and dropped, and the connection closed; the receiver hears once
    /// PostgreSQL has answered it.
    fn lose_next_record_commit(&self) -> oneshot::Receiver<()> {
        let (done, answered) = oneshot::channel();
        *self.commit_cut.lock().unwrap() = Some(done);
        answered
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One connection, both ways, until either side closes it, the proxy is cut, or the
/// records' COMMIT is to be lost.
async fn pump(
    client: TcpStream,
    target: String,
    mut up: watch::Receiver<bool>,
    commit_cut: CommitCut,
) {
    let Ok(server) = TcpStream::connect(&target).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // The writer's connection is the one that prepares the insert of finished games.
    let mut records = false;
    let to_server = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            records |= contains(chunk, b"INSERT INTO games");
            if server_write.write_all(chunk).await.is_err() {
                return None;
            }
            if records && contains(chunk, b"COMMIT\0") {
                if let Some(done) = commit_cut.lock().unwrap().take() {
                    return Some(done);
                }
            }
        }
    };
    let to_client = tokio::io::copy(&mut server_read, &mut client_write);
    let lost = tokio::select! {
        lost = to_server => lost,
        _ = to_client => None,
        _ = up.wait_for(|up| !*up) => None,
    };
    if let Some(done) = lost {
        // The client hears nothing more; PostgreSQL's answer to the COMMIT is read here.
        drop(client_write);
        let mut answer = [0u8; 256];
        let _ = server_read.read(&mut answer).await;
        let _ = done.send(());
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether any of `msgs` is a game's numbered event.
fn any_event(msgs: &[ServerMsg]) -> bool {
    msgs.iter().any(|m| m.seq().is_some())
}

/// Polls `path` until it answers `status` (a connection is made again on a timer: there
/// is no event to wait on).
async fn until_status(server: &TestServer, path: &str, status: u16) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if server.http_get(path).await.0 == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The counts that show one game recorded and rated once: games, rating history rows,
/// wins, losses.
fn recorded(server: &TestServer) -> [Option<i64>; 4] {
    let count = |sql: &str| server.sql(sql, sql);
    [
        count("SELECT count(*) FROM games"),
        count("SELECT count(*) FROM rating_history"),
        count("SELECT sum(wins)::bigint FROM accounts"),
        count("SELECT sum(losses)::bigint FROM accounts"),
    ]
}

/// Seat two resigns; both players hear the end and their rating changes.
async fn two_resigns(one: &mut TestClient, two: &mut TestClient, g: GameId) {
    two.resign(g).await;
    for player in [&mut *one, &mut *two] {
        player
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_wait_while_postgresql_is_out_of_reach_and_the_game_goes_on_after() {
    let proxy = Proxy::start().await;
    let pg = TestPostgres::create();
    let url = proxy.url(&pg);
    let mut server = start_server_via(pg, url).await;
    let (mut one, mut two, game) = paired_players(&server, "ada21", "bea21").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, (TIE, TIE)).await;
    one.received_before_pong().await;
    two.received_before_pong().await;

    // Out of reach: the moves are refused and kept, nobody hears of them.
    proxy.cut().await;
    let (n1, n2) = (rand::random(), rand::random());
    assert_error(
        &one.commit(g, 2, Seat::One, TIE, n1).await,
        ErrorCode::Unavailable,
    );
    assert_error(
        &two.commit(g, 2, Seat::Two, TIE, n2).await,
        ErrorCode::Unavailable,
    );
    assert!(!any_event(&one.received_before_pong().await));
    assert!(!any_event(&two.received_before_pong().await));
    let health = server.http_get("/healthz").await;
    assert_eq!(health.0, 503, "{}", health.1);
    let page = server.http_get("/api/leaderboard").await;
    assert_eq!(page.0, 503, "{}", page.1);

    // Back: the kept moves are logged and published, the round goes on.
    proxy.restore();
    for player in [&mut one, &mut two] {
        player
            .expect("the kept moves' reveal phase", |m| {
                matches!(m, ServerMsg::RevealPhase { round: 2, .. })
            })
            .await;
    }
    until_status(&server, "/healthz", 200).await;
    assert_ok(&one.reveal(g, 2, TIE, n1).await);
    assert_ok(&two.reveal(g, 2, TIE, n2).await);
    for player in [&mut one, &mut two] {
        player
            .expect(
                "round 2's result",
                |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == 2),
            )
            .await;
    }
    until_status(&server, "/api/leaderboard", 200).await;

    // The game ends and is recorded and rated once.
    two_resigns(&mut one, &mut two, g).await;
    for player in [&mut one, &mut two] {
        player
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
    server.stop().await;
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_whose_commit_answer_is_lost_is_rated_once_even_after_a_restart() {
    let proxy = Proxy::start().await;
    let pg = TestPostgres::create();
    let url = proxy.url(&pg);
    let server = start_server_via(pg, url).await;
    let (mut one, mut two, game) = paired_players(&server, "ada22", "bea22").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, (TIE, TIE)).await;

    // The writer's COMMIT of the game's record goes through; its answer does not.
    let answered = proxy.lose_next_record_commit();
    two_resigns(&mut one, &mut two, g).await;
    tokio::time::timeout(WAIT, answered)
        .await
        .expect("the record's COMMIT reached PostgreSQL")
        .unwrap();
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);

    // The writer connects again at its next batch: a new account is written.
    let mut three = TestClient::connect(&server).await;
    three.register("cid22").await;

    // A restart records every game whose log is left: this one's went with its record.
    drop((one, two, three));
    let mut server = server.restart().await;
    // Served once the log's games are restored.
    TestClient::connect(&server).await.close().await;
    server.stop().await;
    assert_eq!(recorded(&server), [Some(1), Some(2), Some(1), Some(1)]);
}
