//! Test harness: start the real server on 127.0.0.1:0 with a temporary database, and a
//! typed WebSocket client that speaks real MessagePack frames.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use elementals_protocol::commitment;
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

/// A minimal HTTP/1.1 GET over loopback.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let status: u16 = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    // Bodies from axum's Json are sent with content-length here; chunked would need decoding.
    (status, body)
}

/// A metric's current value, from `GET /metrics`.
pub async fn metric(server: &TestServer, name: &str) -> u64 {
    let (_, body) = server.http_get("/metrics").await;
    let prefix = format!("{name} ");
    body.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{name} is exported"))
        .trim()
        .parse()
        .unwrap()
}

/// Asks `/metrics` until `name` reads `value` (a gauge catching up with a connection
/// that just ended); fails after `WAIT`.
pub async fn until_metric(server: &TestServer, name: &str, value: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let now = metric(server, name).await;
        if now == value {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} stayed at {now}, expected {value}"
        );
        tokio::task::yield_now().await;
    }
}

/// A WebSocket upgrade request, to which tests add headers.
pub type ClientRequest = tokio_tungstenite::tungstenite::handshake::client::Request;

/// The upgrade request for `server`'s `/ws`, with the given extra headers.
pub fn ws_request(server: &TestServer, headers: &[(&'static str, &str)]) -> ClientRequest {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = server.ws_url().into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().append(*name, value.parse().unwrap());
    }
    request
}

pub struct TestClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: RequestId,
    /// Pushed messages that arrived while waiting for a reply.
    pending: VecDeque<ServerMsg>,
    pub token: Option<String>,
}

impl TestClient {
    /// Connect and say hello.
    pub async fn connect(server: &TestServer) -> TestClient {
        Self::connect_at(server.addr).await
    }

    /// Connect to a server at `addr` (one started as a child process, say) and say hello.
    pub async fn connect_at(addr: SocketAddr) -> TestClient {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap();
        let mut client = TestClient {
            ws,
            next_id: 0,
            pending: VecDeque::new(),
            token: None,
        };
        let id = client.id();
        match client
            .request(ClientMsg::Hello {
                id,
                protocol_version: 1,
                client: Some("test".into()),
            })
            .await
        {
            ServerMsg::Welcome { .. } => {}
            other => panic!("expected welcome, got {other:?}"),
        }
        client
    }

    /// The `limits` a new connection's `welcome` announces.
    pub async fn welcome_limits(server: &TestServer) -> Limits {
        let mut client = TestClient::connect_raw(server).await;
        let id = client.id();
        let hello = ClientMsg::Hello {
            id,
            protocol_version: 1,
            client: None,
        };
        match client.request(hello).await {
            ServerMsg::Welcome { limits, .. } => limits,
            other => panic!("expected welcome, got {other:?}"),
        }
    }

    pub async fn connect_raw(server: &TestServer) -> TestClient {
        let (ws, _) = tokio_tungstenite::connect_async(server.ws_url())
            .await
            .unwrap();
        TestClient {
            ws,
            next_id: 0,
            pending: VecDeque::new(),
            token: None,
        }
    }

    /// Connect with a prepared upgrade request (see [`ws_request`]) and say nothing yet;
    /// a refused upgrade gives its HTTP status.
    pub async fn connect_with(request: ClientRequest) -> Result<TestClient, u16> {
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => Ok(TestClient {
                ws,
                next_id: 0,
                pending: VecDeque::new(),
                token: None,
            }),
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                Err(response.status().as_u16())
            }
            Err(e) => panic!("connecting failed: {e}"),
        }
    }

    /// The socket under the WebSocket, to read the server's frames without answering its
    /// pings (tungstenite answers them as it reads).
    pub fn socket(&mut self) -> &mut MaybeTlsStream<TcpStream> {
        self.ws.get_mut()
    }

    /// Send a frame; false if the connection is already gone.
    pub async fn try_send_frame(&mut self, msg: Message) -> bool {
        self.ws.send(msg).await.is_ok()
    }

    /// Write out what the socket holds back, such as the pong tungstenite queues for a
    /// ping (it is otherwise sent only with the next read or write); false if the
    /// connection is gone.
    pub async fn flush(&mut self) -> bool {
        self.ws.flush().await.is_ok()
    }

    /// The next frame as it arrives, pings included; `None` once the connection is gone.
    pub async fn next_frame(&mut self) -> Option<Message> {
        tokio::time::timeout(WAIT, self.ws.next())
            .await
            .expect("a frame arrives in time")
            .and_then(Result::ok)
    }

    pub fn id(&mut self) -> RequestId {
        self.next_id += 1;
        self.next_id
    }

    pub async fn send(&mut self, msg: &ClientMsg) {
        self.send_raw(wire::encode(msg)).await;
    }

    pub async fn send_raw(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::Binary(bytes.into())).await.unwrap();
    }

    pub async fn send_frame(&mut self, msg: Message) {
        self.ws.send(msg).await.unwrap();
    }

    /// The next message from the server, whatever it is.
    pub async fn recv(&mut self) -> ServerMsg {
        if let Some(msg) = self.pending.pop_front() {
            return msg;
        }
        self.recv_wire().await
    }

    async fn recv_wire(&mut self) -> ServerMsg {
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("a message arrives in time")
                .expect("connection open")
                .expect("frame ok");
            match frame {
                Message::Binary(b) => {
                    return wire::decode_server(&b).expect("server frames decode")
                }
                Message::Ping(_) | Message::Pong(_) => continue,
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    /// The next close frame's code, skipping any messages before it.
    pub async fn closed_with(&mut self) -> Option<u16> {
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("closes in time");
            match frame {
                Some(Ok(Message::Close(Some(c)))) => return Some(c.code.into()),
                Some(Ok(Message::Close(None))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Send a request and wait for the reply with its id, keeping pushes for later.
    pub async fn request(&mut self, msg: ClientMsg) -> ServerMsg {
        let id = msg.id();
        self.send(&msg).await;
        loop {
            let reply = self.recv_wire().await;
            if reply.reply_id() == Some(id) {
                return reply;
            }
            self.pending.push_back(reply);
        }
    }

    /// A `ping` request is answered with `pong`: the connection is open and served.
    pub async fn assert_open(&mut self) {
        let id = self.id();
        let reply = self.request(ClientMsg::Ping { id }).await;
        assert!(matches!(reply, ServerMsg::Pong { .. }), "{reply:?}");
    }

    /// Every message that came before the answer to a `ping` sent now: all the server had
    /// sent this connection so far.
    pub async fn received_before_pong(&mut self) -> Vec<ServerMsg> {
        let id = self.id();
        self.send(&ClientMsg::Ping { id }).await;
        let mut before = Vec::new();
        loop {
            match self.recv().await {
                ServerMsg::Pong { id: pong } if pong == id => return before,
                msg => before.push(msg),
            }
        }
    }

    /// Wait for the first message matching `pred`, dropping the ones before it.
    pub async fn expect(&mut self, what: &str, pred: impl Fn(&ServerMsg) -> bool) -> ServerMsg {
        loop {
            let msg = tokio::time::timeout(WAIT, self.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
            if pred(&msg) {
                return msg;
            }
        }
    }

    pub async fn register(&mut self, name: &str) -> String {
        let id = self.id();
        match self
            .request(ClientMsg::Register {
                id,
                name: name.into(),
                password: "password123".into(),
            })
            .await
        {
            ServerMsg::Authenticated { token, .. } => {
                self.token = Some(token.clone());
                token
            }
            other => panic!("register failed: {other:?}"),
        }
    }

    pub async fn resume(&mut self, token: &str) -> ServerMsg {
        let id = self.id();
        self.request(ClientMsg::Resume {
            id,
            token: token.into(),
        })
        .await
    }

    /// Resign `game_id`, which must be answered `ok`.
    pub async fn resign(&mut self, game_id: GameId) {
        let id = self.id();
        assert_ok(&self.request(ClientMsg::Resign { id, game_id }).await);
    }

    pub async fn join_pool(&mut self, variant: Variant, preset: &str) {
        let id = self.id();
        match self
            .request(ClientMsg::JoinPool {
                id,
                variant,
                time_control: preset.into(),
                rated: true,
            })
            .await
        {
            ServerMsg::Queued { .. } => {}
            other => panic!("join_pool failed: {other:?}"),
        }
    }

    /// Wait for the game to start; returns the game and this client's seat.
    pub async fn game_start(&mut self) -> (GameInfo, Seat) {
        match self
            .expect("game_start", |m| matches!(m, ServerMsg::GameStart { .. }))
            .await
        {
            ServerMsg::GameStart { game, seat } => (game, seat),
            _ => unreachable!(),
        }
    }

    pub async fn commit(
        &mut self,
        game: GameId,
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: [u8; 32],
    ) -> ServerMsg {
        let id = self.id();
        let commitment = commitment::make(&game.0, round, seat, pick, &nonce).to_vec();
        self.request(ClientMsg::Commit {
            id,
            game_id: game,
            round,
            commitment,
        })
        .await
    }

    pub async fn reveal(
        &mut self,
        game: GameId,
        round: u32,
        pick: Element,
        nonce: [u8; 32],
    ) -> ServerMsg {
        let id = self.id();
        self.request(ClientMsg::Reveal {
            id,
            game_id: game,
            round,
            pick,
            nonce: nonce.to_vec(),
        })
        .await
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

pub fn assert_ok(msg: &ServerMsg) {
    assert!(
        matches!(msg, ServerMsg::Ok { .. }),
        "expected ok, got {msg:?}"
    );
}

pub fn assert_error(msg: &ServerMsg, code: elementals_protocol::ErrorCode) {
    match msg {
        ServerMsg::Error { code: c, .. } => assert_eq!(*c, code, "wrong error: {msg:?}"),
        other => panic!("expected error {code}, got {other:?}"),
    }
}

/// Two registered players paired in the classic pool; returns them in seat order.
pub async fn paired_players(
    server: &TestServer,
    a: &str,
    b: &str,
) -> (TestClient, TestClient, GameInfo) {
    paired_at(server.addr, a, b).await
}

/// `paired_players` on a server at `addr` (one started as a child process, say).
pub async fn paired_at(addr: SocketAddr, a: &str, b: &str) -> (TestClient, TestClient, GameInfo) {
    let mut ca = TestClient::connect_at(addr).await;
    ca.register(a).await;
    let mut cb = TestClient::connect_at(addr).await;
    cb.register(b).await;
    ca.join_pool(Variant::CLASSIC, "blitz").await;
    cb.join_pool(Variant::CLASSIC, "blitz").await;
    let (game, seat_a) = ca.game_start().await;
    let (_, seat_b) = cb.game_start().await;
    assert_ne!(seat_a, seat_b);
    if seat_a == Seat::One {
        (ca, cb, game)
    } else {
        (cb, ca, game)
    }
}

/// Play one round fully: both commit, both reveal; returns the round_result seen by `one`.
pub async fn play_round(
    one: &mut TestClient,
    two: &mut TestClient,
    game: GameId,
    round: u32,
    picks: (Element, Element),
) -> ServerMsg {
    let n1 = rand::random::<[u8; 32]>();
    let n2 = rand::random::<[u8; 32]>();
    assert_ok(&one.commit(game, round, Seat::One, picks.0, n1).await);
    assert_ok(&two.commit(game, round, Seat::Two, picks.1, n2).await);
    one.expect(
        "reveal_phase",
        |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
    )
    .await;
    two.expect(
        "reveal_phase",
        |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
    )
    .await;
    assert_ok(&one.reveal(game, round, picks.0, n1).await);
    assert_ok(&two.reveal(game, round, picks.1, n2).await);
    two.expect(
        "round_result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
    )
    .await;
    one.expect(
        "round_result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
    )
    .await
}
