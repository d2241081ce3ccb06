//! The fan-out ceiling (`--fanout-ceiling`): a bare tokio-tungstenite server that sends
//! whatever one connection sends it to every connection, each through a writer task of
//! its own, and as many lean spectators as the run has, timed from the moment the trigger
//! frame is sent to its arrival at each of them. It is the fan-out benchmark with the game
//! taken out (no sessions, no actor, no encoding, one event per round), so the game
//! server's last-spectator figure can be stated against what this machine manages at all,
//! measured in the same run, as `--echo` does for throughput.

use std::io::{ErrorKind, Read};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mio::{Events, Interest, Poll, Token};
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Bytes, Message};

use crate::conn::{source_address, upgrade};
use crate::lean::{parse_frame, SPIN};
use crate::local::{listen, parent_gone};
use crate::stats::{Latency, Percentiles};

/// The same read buffer as the echo server's and the game server's.
const READ_BUFFER: usize = 4 * 1024;

/// Frames a connection may have queued, as a game server's outbox would bound them.
const QUEUE: usize = 256;

/// The broadcast frame's size: about a round's result and the next round's start, which a
/// game's spectators get together.
const PAYLOAD: usize = 320;

/// Connections being opened at once.
const CONNECTING: usize = 256;

/// How long a round may take to reach everyone before the measurement gives up on it.
const ROUND_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause between one round reaching everyone and the next trigger.
const BETWEEN_ROUNDS: Duration = Duration::from_millis(300);

/// What the ceiling run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingResult {
    pub spectators: u64,
    pub rounds: u64,
    /// Trigger sent to each spectator's arrival.
    pub spectator_ms: Percentiles,
    /// Per round, trigger sent to the last spectator's arrival.
    pub last_spectator_ms: Percentiles,
    /// Rounds that did not reach every spectator within 5 s, and connections that failed.
    pub errors: u64,
}

/// The hidden `broadcast-serve` subcommand.
pub async fn serve() -> anyhow::Result<()> {
    let listener = listen("127.0.0.1:0".parse()?)?;
    let writers: Arc<Mutex<Vec<mpsc::Sender<Bytes>>>> = Arc::default();
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(connection(stream, writers.clone()));
        }
    };
    tokio::select! {
        () = accept => {}
        () = parent_gone() => {}
    }
    Ok(())
}

/// One connection: a writer task draining its queue, and a reader that broadcasts what
/// it receives to every connection's queue.
async fn connection(stream: TcpStream, writers: Arc<Mutex<Vec<mpsc::Sender<Bytes>>>>) {
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0);
    // Registered before the handshake's answer goes, so that a client whose upgrade is
    // done has every broadcast after it (a frame sent meanwhile waits in the queue);
    // if the handshake fails, the queue's receiver drops and the next broadcast lets go
    // of its sender.
    let (tx, mut rx) = mpsc::channel::<Bytes>(QUEUE);
    writers.lock().expect("writers lock").push(tx);
    let Ok(ws) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
        return;
    };
    let (mut sink, mut stream) = ws.split();
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if sink.send(Message::Binary(frame)).await.is_err() {
                return;
            }
        }
    });
    while let Some(Ok(msg)) = stream.next().await {
        if let Message::Binary(frame) = msg {
            let mut writers = writers.lock().expect("writers lock");
            writers.retain(|w| w.try_send(frame.clone()).is_ok() || !w.is_closed());
        }
    }
}

/// Per round: when its trigger went, and how many spectators have it and when the last did.
#[derive(Default)]
struct Round {
    sent: Option<Instant>,
    arrived: u64,
    last: Option<Instant>,
}

/// Connect `spectators` lean sockets and one trigger connection to the broadcast server at
/// `server`, then time `rounds` broadcasts.
pub async fn measure(
    server: SocketAddr,
    spectators: u64,
    rounds: u64,
) -> anyhow::Result<CeilingResult> {
    let errors = Arc::new(AtomicU64::new(0));
    let mut sockets = Vec::with_capacity(spectators as usize);
    let mut connecting = tokio::task::JoinSet::new();
    for n in 0..spectators {
        if connecting.len() >= CONNECTING {
            if let Some(Ok(Some(socket))) = connecting.join_next().await {
                sockets.push(socket);
            }
        }
        connecting.spawn(async move {
            let ws = upgrade(server, source_address(n)).await.ok()?;
            ws.into_inner().into_std().ok()
        });
    }
    while let Some(joined) = connecting.join_next().await {
        if let Ok(Some(socket)) = joined {
            sockets.push(socket);
        }
    }
    errors.fetch_add(spectators - sockets.len() as u64, Relaxed);
    let mut trigger = upgrade(server, source_address(spectators))
        .await
        .map_err(|e| anyhow::anyhow!("the trigger connection: {e}"))?;

    let table: Arc<Mutex<Vec<Round>>> =
        Arc::new(Mutex::new((0..rounds).map(|_| Round::default()).collect()));
    let latency = Arc::new(Latency::default());
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<u64>();
    let expected = sockets.len() as u64;
    let reader = {
        let (table, latency, errors) = (table.clone(), latency.clone(), errors.clone());
        std::thread::Builder::new()
            .name("fanout-ceiling".into())
            .spawn(move || read(sockets, &table, &latency, &errors, &done_tx, rounds))?
    };

    let last = Latency::default();
    for round in 0..rounds {
        let mut frame = vec![0u8; PAYLOAD];
        frame[..8].copy_from_slice(&round.to_le_bytes());
        table.lock().expect("rounds lock")[round as usize].sent = Some(Instant::now());
        trigger
            .send(Message::Binary(frame.into()))
            .await
            .map_err(|e| anyhow::anyhow!("sending a trigger: {e}"))?;
        let reached = tokio::time::timeout(ROUND_TIMEOUT, async {
            while let Some(r) = done_rx.recv().await {
                if r == round {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        let timed = {
            let row = &table.lock().expect("rounds lock")[round as usize];
            match (reached, row.sent, row.last) {
                (true, Some(sent), Some(at)) if row.arrived == expected => {
                    Some(at.saturating_duration_since(sent))
                }
                _ => None,
            }
        };
        match timed {
            Some(delay) => last.record(delay),
            None => {
                errors.fetch_add(1, Relaxed);
            }
        }
        tokio::time::sleep(BETWEEN_ROUNDS).await;
    }
    let _ = trigger.close(None).await;
    // The reader stops once every round is in or its sockets close with the server.
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    Ok(CeilingResult {
        spectators,
        rounds,
        spectator_ms: latency.percentiles(),
        last_spectator_ms: last.percentiles(),
        errors: errors.load(Relaxed),
    })
}

/// The reader thread: every socket polled, every ready one read before any frame is
/// looked at (as the lean spectators do), each arrival timed against its round's trigger.
fn read(
    sockets: Vec<std::net::TcpStream>,
    table: &Mutex<Vec<Round>>,
    latency: &Latency,
    errors: &AtomicU64,
    done: &mpsc::UnboundedSender<u64>,
    rounds: u64,
) {
    let Ok(mut poll) = Poll::new() else {
        errors.fetch_add(1, Relaxed);
        return;
    };
    let mut conns: Vec<(mio::net::TcpStream, Vec<u8>)> = Vec::with_capacity(sockets.len());
    for (i, socket) in sockets.into_iter().enumerate() {
        let mut stream = mio::net::TcpStream::from_std(socket);
        if poll
            .registry()
            .register(&mut stream, Token(i), Interest::READABLE)
            .is_err()
        {
            errors.fetch_add(1, Relaxed);
            continue;
        }
        conns.push((stream, Vec::new()));
    }
    let expected = conns.len() as u64;
    let mut events = Events::with_capacity(16 * 1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut ready = Vec::new();
    let mut complete = 0;
    let mut quiet_since = Instant::now();
    while complete < rounds && quiet_since.elapsed() < ROUND_TIMEOUT * 2 {
        // As the lean spectators do: no sleep within `SPIN` of the last read.
        let wait = match quiet_since.elapsed() < SPIN {
            true => Duration::ZERO,
            false => Duration::from_millis(100),
        };
        if poll.poll(&mut events, Some(wait)).is_err() {
            continue;
        }
        for event in events.iter() {
            let (stream, pending) = &mut conns[event.token().0];
            let mut read_at = None;
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        read_at.get_or_insert_with(Instant::now);
                        pending.extend_from_slice(&buf[..n]);
                        if n < buf.len() {
                            // Empty now; a later arrival makes it ready again (as in
                            // `lean/`).
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if let Some(at) = read_at {
                ready.push((event.token().0, at));
            }
        }
        if !ready.is_empty() {
            quiet_since = Instant::now();
        }
        let mut table = table.lock().expect("rounds lock");
        for (i, at) in ready.drain(..) {
            let pending = &mut conns[i].1;
            let mut used = 0;
            while let Ok(Some(frame)) = parse_frame(&pending[used..]) {
                let payload = &pending[used + frame.payload.start..used + frame.payload.end];
                used += frame.len;
                let Some(round) = payload
                    .get(..8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .filter(|r| *r < rounds)
                else {
                    continue;
                };
                let row = &mut table[round as usize];
                if let Some(sent) = row.sent {
                    latency.record(at.saturating_duration_since(sent));
                }
                row.arrived += 1;
                row.last = Some(row.last.map_or(at, |last| last.max(at)));
                if row.arrived == expected {
                    complete += 1;
                    let _ = done.send(round);
                }
            }
            pending.drain(..used);
        }
    }
}

/// The fan-out ceiling of `--fanout-ceiling`, on a bare broadcast server started for it.
pub async fn measure_ceiling(
    options: &crate::options::RunOptions,
) -> anyhow::Result<CeilingResult> {
    if options.spectators == 0 {
        anyhow::bail!("--fanout-ceiling needs --spectators");
    }
    let server = crate::local::LocalServer::broadcast().await?;
    eprintln!(
        "fan-out ceiling: {} spectators, {} broadcasts...",
        options.spectators, options.fanout_ceiling_rounds
    );
    let result = measure(
        server.addr,
        options.spectators,
        options.fanout_ceiling_rounds,
    )
    .await;
    server.stop().await;
    let result = result?;
    eprintln!(
        "fan-out ceiling: last spectator p50 {:.1} ms, p99 {:.1} ms",
        result.last_spectator_ms.p50, result.last_spectator_ms.p99
    );
    Ok(result)
}
