//! Timeouts and slow clients over real sockets: the sign-in deadline, slowloris handshakes,
//! the cap on connections still in their handshake, the heartbeat's pong deadline, and a
//! client that floods requests but never reads its replies. Paused time where no database
//! work is involved (the database thread runs on real time, and an idle paused runtime
//! would jump its clock while waiting for it); short configured timeouts elsewhere.

use std::time::Duration;

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::wire;
use elementals_server::outbox::OUTBOX_CAPACITY;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// Reads until the server closes the TCP connection; returns what it sent.
async fn read_until_closed(stream: &mut (impl AsyncRead + Unpin)) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(WAIT, stream.read(&mut buf))
            .await
            .expect("the server closes the connection in time")
        {
            Ok(0) | Err(_) => return seen,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// Sends `GET /healthz` on `stream` and checks the answer (whenever it comes) is a 200.
async fn answered_healthz(stream: &mut TcpStream) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(stream).await;
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

/// Returns once the server answers HTTP. Paused tests start their clocks only after this:
/// while the server is still starting (restoring games from the database, on real time),
/// an idle paused runtime would jump straight to the test's own time limits.
async fn serving(server: &TestServer) {
    assert_eq!(server.http_get("/healthz").await.0, 200);
}

/// Server frames as raw bytes (servers do not mask): how many pings came before the
/// close frame, and its code.
fn pings_then_close(mut bytes: &[u8]) -> (usize, Option<u16>) {
    let mut pings = 0;
    while bytes.len() >= 2 {
        let (opcode, short) = (bytes[0] & 0x0f, (bytes[1] & 0x7f) as usize);
        let (header, len) = match short {
            126 => (4, u16::from_be_bytes([bytes[2], bytes[3]]) as usize),
            127 => (
                10,
                u64::from_be_bytes(bytes[2..10].try_into().unwrap()) as usize,
            ),
            n => (2, n),
        };
        let payload = &bytes[header..header + len];
        match opcode {
            0x2 => conform(Sender::Server, payload),
            0x9 => pings += 1,
            0x8 => {
                return (
                    pings,
                    payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]])),
                )
            }
            _ => {}
        }
        bytes = &bytes[header + len..];
    }
    (pings, None)
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_does_not_sign_in_in_time_is_closed_4001() {
    let server = start_server_with(|c| c.auth_timeout_secs = 5).await;
    serving(&server).await;
    let start = Instant::now();
    let mut silent = TestClient::connect_raw(&server).await;
    // Saying hello and pinging is activity, but not signing in: the deadline holds.
    let mut chatty = TestClient::connect(&server).await;
    let chatty_code = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let id = chatty.id();
        if !chatty
            .try_send_frame(Message::Binary(
                wire::encode(&ClientMsg::Ping { id }).into(),
            ))
            .await
        {
            break None;
        }
        match chatty.next_frame().await {
            Some(Message::Binary(_)) => continue,
            Some(Message::Close(frame)) => break frame.map(|f| u16::from(f.code)),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(chatty_code, Some(4001));
    assert_eq!(silent.closed_with().await, Some(4001));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn slowloris_handshakes_are_cut_off() {
    let server = start_server().await; // the default: 10 s to send a request head
    serving(&server).await;
    let start = Instant::now();
    let mut trickle = TcpStream::connect(server.addr).await.unwrap();
    trickle
        .write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
        .await
        .unwrap();
    let mut mute = TcpStream::connect(server.addr).await.unwrap();
    // Meanwhile complete requests are served at once.
    assert_eq!(server.http_get("/healthz").await.0, 200);
    TestClient::connect(&server).await;
    for stream in [&mut trickle, &mut mute] {
        let answer = read_until_closed(stream).await;
        // Dropped without a response, or with hyper's 408.
        assert!(
            answer.is_empty() || answer.starts_with(b"HTTP/1.1 408"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(12),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn connections_past_the_handshake_cap_wait_for_a_free_slot() {
    let server = start_server_with(|c| c.max_handshakes = 2).await;
    serving(&server).await;
    let start = Instant::now();
    // Two silent connections hold both slots.
    let mut a = TcpStream::connect(server.addr).await.unwrap();
    let mut b = TcpStream::connect(server.addr).await.unwrap();
    // The third waits, not refused: its request is answered once a silent one has timed
    // out and freed a slot.
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    answered_healthz(&mut third).await;
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(10), "{waited:?}");
    read_until_closed(&mut a).await;
    read_until_closed(&mut b).await;
}

/// `GET /metrics` on a fresh connection, sent at once: the connection waits its turn if
/// the handshake slots are taken.
async fn ask_metrics(server: &TestServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    stream
}

/// A gauge's value in a `/metrics` answer.
fn gauge(answer: &[u8], name: &str) -> u64 {
    let text = String::from_utf8_lossy(answer);
    let line = text
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Past the handshake cap, connections are accepted at once and wait in the server's own
/// queue, in order: not in the kernel's, which drops SYNs once full (a client then retries
/// a second later). `--accept-queue` bounds them.
#[tokio::test(start_paused = true)]
async fn connections_past_the_handshake_cap_wait_in_order_in_the_servers_queue() {
    for (queue, expected) in [(8, vec![3, 2, 1, 0]), (0, vec![0, 0, 0, 0])] {
        let server = start_server_with(|c| {
            c.max_handshakes = 1;
            c.accept_queue = queue;
        })
        .await;
        serving(&server).await;
        // A silent connection holds the one slot for its 10 s.
        let mut silent = TcpStream::connect(server.addr).await.unwrap();
        let mut waiting = Vec::new();
        for _ in 0..4 {
            waiting.push(ask_metrics(&server).await);
        }
        // Each is answered in turn; each answer counts the connections still waiting
        // behind it in the server (with no queue of its own, they wait in the kernel's).
        let mut reported = Vec::new();
        for stream in &mut waiting {
            let answer = read_until_closed(stream).await;
            assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
            assert_eq!(gauge(&answer, "elementals_handshakes"), 1);
            reported.push(gauge(&answer, "elementals_handshakes_waiting"));
        }
        assert_eq!(reported, expected, "accept queue {queue}");
        read_until_closed(&mut silent).await;
    }
}

/// One address cannot fill the queue: past `--max-connections-per-ip` connections in a
/// handshake or waiting for one, its next is closed at once. Other addresses still get in.
#[tokio::test(start_paused = true)]
async fn one_address_may_hold_only_its_share_of_connections_not_yet_upgraded() {
    let server = start_server_with(|c| {
        c.max_handshakes = 2;
        c.max_connections_per_ip = 2;
    })
    .await;
    serving(&server).await;
    let start = Instant::now();
    // Two silent connections from 127.0.0.1 hold both slots, and that address's share.
    let mut a = TcpStream::connect(server.addr).await.unwrap();
    let mut b = TcpStream::connect(server.addr).await.unwrap();
    // Its third is closed before the silent ones time out, unanswered.
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(read_until_closed(&mut third).await, b"");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    // Another address waits for a slot as usual and is answered once one frees.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(server.addr).await.unwrap();
    answered_healthz(&mut other).await;
    assert!(start.elapsed() >= Duration::from_secs(10));
    read_until_closed(&mut a).await;
    read_until_closed(&mut b).await;
}

#[tokio::test]
async fn a_client_that_stops_answering_pings_is_closed_4002() {
    let server = start_server_with(|c| {
        c.heartbeat_secs = 1;
        c.idle_timeout_secs = 2;
    })
    .await;
    let (mut one, mut two, _game) = paired_players(&server, "deaf01", "awake01").await;
    // From here `one` reads nothing, so it answers no ping; `two` keeps reading (its
    // library answers pings) but sends nothing else. The opponent hears of it when the
    // server gives up on `one`.
    two.expect("presence", |m| {
        matches!(
            m,
            ServerMsg::Presence {
                connected: false,
                ..
            }
        )
    })
    .await;
    // Read raw: a WebSocket library would answer the queued pings as it read them, into a
    // socket the server has already closed.
    let (pings, code) = pings_then_close(&read_until_closed(one.socket()).await);
    assert_eq!(code, Some(4002));
    assert!(pings >= 1, "pings were sent");
    // Answering pings was enough to stay connected.
    two.assert_open().await;
}

/// The idle deadline moves with every frame, pongs included: a signed-in client that only
/// answers the heartbeat stays connected for several idle timeouts.
#[tokio::test]
async fn answering_pings_keeps_a_quiet_connection_open_past_the_idle_timeout() {
    let server = start_server_with(|c| {
        c.heartbeat_secs = 1;
        c.idle_timeout_secs = 2;
    })
    .await;
    let mut client = TestClient::connect(&server).await;
    let id = client.id();
    assert!(matches!(
        client.request(ClientMsg::Guest { id }).await,
        ServerMsg::Authenticated { .. }
    ));
    // Read (and so answer) pings for two and a half idle timeouts, sending nothing else.
    let pings = answer_pings_until(&mut client, Instant::now() + Duration::from_secs(5)).await;
    assert!(pings >= 3, "{pings} pings in 5 s");
}

/// Seated players whose only frames are pongs keep their seats past the idle timeout.
#[tokio::test]
async fn players_who_only_answer_pings_stay_seated_past_the_idle_timeout() {
    let server = start_server_with(|c| {
        c.heartbeat_secs = 1;
        c.idle_timeout_secs = 2;
    })
    .await;
    let (mut one, mut two, _game) = paired_players(&server, "quiet01", "quiet02").await;
    let until = Instant::now() + Duration::from_secs(5);
    // Each player checks its own connection as soon as its pings stop: one left unread
    // while the other finishes would go quiet for real.
    let (pings_one, pings_two) = tokio::join!(
        answer_pings_until(&mut one, until),
        answer_pings_until(&mut two, until)
    );
    assert!(
        pings_one >= 3 && pings_two >= 3,
        "{pings_one} and {pings_two} pings in 5 s"
    );
}

/// Reads and answers pings at once until `until`, failing if the connection ends; then
/// checks the connection still answers a request. Returns the pings seen.
async fn answer_pings_until(client: &mut TestClient, until: Instant) -> u32 {
    let mut pings = 0;
    while Instant::now() < until {
        match client.next_frame().await {
            Some(Message::Ping(_)) => {
                pings += 1;
                assert!(client.flush().await, "the pong goes out");
            }
            Some(Message::Close(frame)) => panic!("closed: {frame:?}"),
            Some(_) => {}
            None => panic!("the connection ended"),
        }
    }
    client.assert_open().await;
    pings
}

#[tokio::test]
async fn a_client_that_floods_and_never_reads_is_dropped_without_hurting_others() {
    let server = start_server_with(|c| c.message_rate = 10_000_000).await;
    let (mut one, mut two, game) = paired_players(&server, "steady1", "steady2").await;
    let mut flooder = TestClient::connect(&server).await;
    flooder.register("flood01").await;
    // The game plays on while the flood goes on.
    let players = tokio::spawn(async move {
        let mut worst = Duration::ZERO;
        for round in 1..=3 {
            let start = Instant::now();
            play_round(&mut one, &mut two, game.game_id, round, (1, 1)).await;
            worst = worst.max(start.elapsed());
        }
        (worst, one, two)
    });
    let ping = wire::encode(&ClientMsg::Ping { id: 1 });
    let mut sent = 0u64;
    let flood = async {
        while flooder
            .try_send_frame(Message::Binary(ping.clone().into()))
            .await
        {
            sent += 1;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), flood)
        .await
        .expect("the server drops the flooder");
    let (worst_round, _one, _two) = players.await.unwrap();
    // Rounds of commit and reveal are a few round trips; a stalled server would show here.
    assert!(worst_round < Duration::from_secs(5), "{worst_round:?}");
    assert!(
        sent as usize > OUTBOX_CAPACITY,
        "more replies were due than an outbox holds"
    );
    // Only the players remain connected.
    until_metric(&server, "elementals_connections", 2).await;
}

/// A spectator needs no account (PROTOCOL.md section 3): watching a game lifts the sign-in
/// deadline, and watching nothing any more brings it back.
#[tokio::test]
async fn a_spectator_without_an_account_stays_past_the_sign_in_deadline() {
    let server = start_server_with(|c| c.auth_timeout_secs = 5).await;
    // The players sign in on real time (the database's thread runs on it); the clock is
    // paused once only the watcher, which needs no database, is left to act.
    let (_one, _two, game) = paired_players(&server, "deadl1", "deadl2").await;
    let mut watcher = TestClient::connect(&server).await;
    let id = watcher.id();
    let reply = watcher
        .request(ClientMsg::Watch {
            id,
            game_id: game.game_id,
        })
        .await;
    assert!(matches!(reply, ServerMsg::Snapshot { .. }), "{reply:?}");
    tokio::time::pause();
    tokio::time::sleep(Duration::from_secs(10)).await;
    watcher.assert_open().await;
    let id = watcher.id();
    assert_ok(
        &watcher
            .request(ClientMsg::Unwatch {
                id,
                game_id: game.game_id,
            })
            .await,
    );
    assert_eq!(watcher.closed_with().await, Some(4001));
}
