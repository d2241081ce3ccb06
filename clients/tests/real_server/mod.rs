//! The real server on 127.0.0.1:0, in this test process, for the end-to-end tests; and a
//! signed-in bot waiting in a pool.

#![allow(dead_code)]

use std::time::Duration;

use elementals_client::protocol::Variant;
use elementals_client::{apply_or_resync, Client, GameState, ServerUrl};
use elementals_server::Config;
use tokio::sync::oneshot;

/// How long any step may take before the test fails (a guard, not a synchronisation).
pub const WAIT: Duration = Duration::from_secs(30);

/// Applies `client`'s events to `state` until `done` holds.
pub async fn until(client: &Client, state: &mut GameState, done: impl Fn(&GameState) -> bool) {
    tokio::time::timeout(WAIT, async {
        while !done(state) {
            let event = client.next_event().await.expect("connected");
            apply_or_resync(client, state, &event).await.unwrap();
        }
    })
    .await
    .expect("the game gets there in time");
}

pub struct TestServer {
    /// `ws://127.0.0.1:PORT/ws`.
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub fn server_url(&self) -> ServerUrl {
        ServerUrl::parse(&self.url).unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn start_server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_database(dir.path().join("e2e.db"));
    // The same argon2id at its smallest cost, so that signing in is fast.
    config.argon2_memory_kib = 8;
    config.message_rate = 1000;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(elementals_server::run(listener, config, async move {
        let _ = stopped.await;
    }));
    TestServer {
        url,
        stop: Some(stop),
        _dir: dir,
    }
}

/// A signed-in client waiting in the rated blitz pool for the classic variant.
pub async fn queued_bot(server: &TestServer, name: &str) -> Client {
    let client = Client::connect(&server.url).await.unwrap();
    client.register_or_login(name, "password-1").await.unwrap();
    client
        .join_pool(Variant::CLASSIC, "blitz", true)
        .await
        .unwrap();
    client
}

/// Run the `elementals` binary with arguments.
pub fn elementals(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_elementals"));
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}
