//! A cluster behind nginx (issue 26, `deploy/`): three real nodes and Debian's nginx, run
//! with the configuration `deploy/cluster.sh nginx-conf` renders from
//! `deploy/elementals.conf` (the shipped file is the one tested), every client through
//! nginx's one address.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::cluster_support::*;
use crate::common::*;
use crate::recovery_support::{watch_at, TWO_WINS};
use tokio::process::{Child, Command};

/// Debian's nginx (`.ci/test.sh` installs it when missing).
const NGINX: &str = "/usr/sbin/nginx";
/// How long nginx may take to answer through to a node after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long nginx has to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// nginx as this user, from a directory of its own, in front of `nodes`.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Nginx {
    async fn start(nodes: &[&Node]) -> Nginx {
        assert!(
            Path::new(NGINX).exists(),
            "these tests need nginx at {NGINX}: `apt-get install nginx-light` (.ci/test.sh does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/cluster.sh");
        let rendered = std::process::Command::new("bash")
            .arg(script)
            .arg("nginx-conf")
            .arg(dir.path())
            .arg(addr.to_string())
            .args(nodes.iter().map(|n| n.addr.to_string()))
            .status()
            .unwrap();
        assert!(rendered.success(), "deploy/cluster.sh nginx-conf failed");
        let path = |file: &str| format!("{}/{file}", dir.path().display());
        let child = Command::new(NGINX)
            .args([
                "-p",
                &path(""),
                "-c",
                &path("nginx.conf"),
                "-e",
                &path("error.log"),
            ])
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut nginx = Nginx { child, addr, dir };
        until("nginx passes /healthz on", START_TIMEOUT, async || {
            if let Some(status) = nginx.child.try_wait().unwrap() {
                panic!("nginx exited ({status}): {}", nginx.error_log());
            }
            match try_get(addr, "/healthz").await {
                Ok((200, _)) => Ok(()),
                _ => Err(nginx.error_log()),
            }
        })
        .await;
        nginx
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    /// SIGTERM, so that the master stops its workers (a SIGKILL would leave them
    /// listening), then a wait for it; a kill if it has not stopped in time.
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else {
            return;
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let deadline = std::time::Instant::now() + STOP_TIMEOUT;
        while std::time::Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.start_kill();
    }
}

/// A node's `elementals_connections` (its open WebSockets).
async fn connections(node: &Node) -> u64 {
    let (_, body) = node.http_get("/metrics").await;
    body.lines()
        .find_map(|l| l.strip_prefix("elementals_connections "))
        .expect("elementals_connections is exported")
        .trim()
        .parse()
        .unwrap()
}

/// A WebSocket upgrade through `addr` from the loopback address `source`; a refusal
/// gives its HTTP status.
async fn upgrade_from(source: IpAddr, addr: SocketAddr) -> Result<impl Sized, u16> {
    upgrade(source, addr, None).await
}

/// `upgrade_from`, as a browser page from `origin` would.
async fn upgrade(
    source: IpAddr,
    addr: SocketAddr,
    origin: Option<&str>,
) -> Result<impl Sized, u16> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
    }
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(source, 0)).unwrap();
    let stream = socket.connect(addr).await.unwrap();
    match tokio_tungstenite::client_async(request, stream).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("upgrading through nginx failed: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_nginx_a_rated_game_spans_the_nodes_and_a_dead_node_is_passed_over() {
    let cluster = Cluster::new();
    let trusted = [("ELEMENTALS_TRUSTED_PROXY", "127.0.0.1")];
    let a = cluster.node_with("a", &trusted).await;
    let b = cluster.node_with("b", &trusted).await;
    let c = cluster.node_with("c", &trusted).await;
    let nodes = [&a, &b, &c];
    let nginx = Nginx::start(&nodes).await;
    // Both players through nginx: `least_conn` sends the second to another node than the
    // first, so the game's moves and events cross nodes.
    let (mut one, mut two, game) = paired_at(nginx.addr, "ann", "bob").await;
    let mut served = Vec::new();
    for node in nodes {
        served.push(connections(node).await);
    }
    served.sort();
    assert_eq!(served, [0, 1, 1], "one player on each of two nodes");
    for node in nodes {
        node.until_listed(&[game.game_id]).await;
    }
    // The spectator through nginx too (the third node, by `least_conn`).
    let (mut spectator, snapshot) = watch_at(nginx.addr, game.game_id).await;
    assert_eq!(snapshot.game.game_id, game.game_id);
    for node in nodes {
        assert_eq!(connections(node).await, 1, "one connection on each node");
    }
    a.until_spectators(game.game_id, 1).await;
    for round in 1..=3 {
        play_round(&mut one, &mut two, game.game_id, round, TWO_WINS).await;
    }
    watched_to_the_end(&mut spectator, &snapshot, 3).await;
    seat_two_won_rated_once([&mut one, &mut two], &game, &nodes).await;
    // A node killed: nginx's passive check passes each new connection that finds it
    // refusing on to a live node (with `least_conn` the dead one, emptied, is tried first).
    drop((one, two, spectator));
    c.kill().await;
    for _ in 0..4 {
        TestClient::connect_at(nginx.addr).await;
    }
    let log = nginx.error_log();
    assert!(
        log.contains("Connection refused"),
        "the dead node was tried: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_nginx_each_client_keeps_its_address_and_a_browser_its_origin() {
    let cluster = Cluster::new();
    let env = [
        ("ELEMENTALS_TRUSTED_PROXY", "127.0.0.1"),
        ("ELEMENTALS_MAX_CONNECTIONS_PER_IP", "2"),
    ];
    let a = cluster.node_with("a", &env).await;
    let b = cluster.node_with("b", &env).await;
    let c = cluster.node_with("c", &env).await;
    let nginx = Nginx::start(&[&a, &b, &c]).await;
    // From 127.0.0.2, through nginx: at most 2 on each node, so the seventh is refused
    // with the node's 429.
    let first: IpAddr = "127.0.0.2".parse().unwrap();
    let mut open = Vec::new();
    let mut refused = None;
    for attempt in 1..=7 {
        match upgrade_from(first, nginx.addr).await {
            Ok(ws) => open.push(ws),
            Err(status) => {
                refused = Some((attempt, status));
                break;
            }
        }
    }
    let (attempt, status) = refused.expect("a client past the cap on every node is refused");
    assert_eq!(status, 429, "refused at attempt {attempt}");
    assert_eq!(
        attempt, 7,
        "`least_conn` spreads the first six, two on each node"
    );
    // Another client, through the same nginx, is its own address to the nodes (were nginx
    // or the header not trusted, all would count as nginx's 127.0.0.1, and it is refused).
    let second: IpAddr = "127.0.0.3".parse().unwrap();
    for _ in 0..2 {
        let upgraded = upgrade_from(second, nginx.addr).await;
        assert!(
            upgraded.is_ok(),
            "127.0.0.3 has its own allowance: {:?}; nginx: {}",
            upgraded.err(),
            nginx.error_log()
        );
    }
    // A browser page served through nginx opens the WebSocket: nginx passes on the Host
    // (port included) that the page's origin names. Another site's page is refused.
    let third: IpAddr = "127.0.0.4".parse().unwrap();
    let own = format!("http://{}", nginx.addr);
    assert!(upgrade(third, nginx.addr, Some(&own)).await.is_ok());
    let foreign = upgrade(third, nginx.addr, Some("http://elsewhere.example")).await;
    assert_eq!(foreign.err(), Some(403));
}
