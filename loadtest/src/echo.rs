//! The echo ceiling: a bare tokio-tungstenite server that sends every frame back, and
//! the load generator's own socket code doing closed-loop round trips against it. What
//! this machine manages here is the most any WebSocket server could, so the game
//! server's throughput is stated as a share of it, measured in the same run.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::{wire, ClientMsg};
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::conn::{source_address, upgrade};
use crate::local::{listen, parent_gone};
use crate::stats::{Latency, Percentiles};

/// Echo server buffers, the same as the game server's (4 KiB reads), so that the
/// ceiling is measured under the same memory budget.
const READ_BUFFER: usize = 4 * 1024;

/// What the echo run measured.
#[derive(Debug, Clone, Serialize)]
pub struct EchoResult {
    pub connections: u64,
    pub duration_s: f64,
    pub round_trips_per_s: f64,
    /// Frames through the server per second: two per round trip.
    pub messages_per_s: f64,
    pub latency_ms: Percentiles,
    pub errors: u64,
}

/// The hidden `echo-serve` subcommand.
pub async fn serve() -> anyhow::Result<()> {
    let listener = listen("127.0.0.1:0".parse()?)?;
    let accept = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(echo_connection(stream));
        }
    };
    tokio::select! {
        () = accept => {}
        () = parent_gone() => {}
    }
    Ok(())
}

async fn echo_connection(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0);
    let Ok(mut ws) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
        return;
    };
    while let Some(Ok(msg)) = ws.next().await {
        if (msg.is_binary() || msg.is_text()) && ws.send(msg).await.is_err() {
            return;
        }
    }
}

/// Drive `connections` closed-loop clients (one frame in flight each) against the echo
/// server at `server` for `duration` after a second of warm-up.
pub async fn measure(
    server: SocketAddr,
    connections: u64,
    duration: Duration,
) -> anyhow::Result<EchoResult> {
    // A frame the size of a real `commit`.
    let frame: Vec<u8> = wire::encode_client(&ClientMsg::Commit {
        id: 1,
        game_id: GameId::new_random_from([7; 16]),
        round: 1,
        commitment: vec![0xAB; 32],
        pick: None,
        nonce: None,
    });
    let round_trips = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let latency = Arc::new(Latency::default());
    let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let warmup = Instant::now() + Duration::from_secs(1);
    let end = warmup + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..connections {
        let (frame, round_trips, errors, latency, measuring) = (
            frame.clone(),
            round_trips.clone(),
            errors.clone(),
            latency.clone(),
            measuring.clone(),
        );
        tasks.spawn(async move {
            let Ok(mut ws) = upgrade(server, source_address(n)).await else {
                errors.fetch_add(1, Relaxed);
                return;
            };
            while Instant::now() < end {
                let sent = Instant::now();
                if ws
                    .send(Message::Binary(frame.clone().into()))
                    .await
                    .is_err()
                {
                    errors.fetch_add(1, Relaxed);
                    return;
                }
                match ws.next().await {
                    Some(Ok(Message::Binary(_))) => {}
                    _ => {
                        errors.fetch_add(1, Relaxed);
                        return;
                    }
                }
                if measuring.load(Relaxed) {
                    round_trips.fetch_add(1, Relaxed);
                    latency.record(sent.elapsed());
                }
            }
            let _ = ws.close(None).await;
        });
    }
    tokio::time::sleep_until(warmup).await;
    measuring.store(true, Relaxed);
    let started = Instant::now();
    tokio::time::sleep_until(end).await;
    measuring.store(false, Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let done = round_trips.load(Relaxed);
    while tasks.join_next().await.is_some() {}
    let rate = done as f64 / elapsed;
    Ok(EchoResult {
        connections,
        duration_s: elapsed,
        round_trips_per_s: rate,
        messages_per_s: 2.0 * rate,
        latency_ms: latency.percentiles(),
        errors: errors.load(Relaxed),
    })
}

/// The echo ceiling of `--echo`, measured on a bare echo server started for it.
pub async fn measure_ceiling(options: &crate::options::RunOptions) -> anyhow::Result<EchoResult> {
    let server = crate::local::LocalServer::echo().await?;
    eprintln!(
        "echo ceiling: {} connections for {:?}...",
        options.echo_connections, options.echo_duration
    );
    let result = measure(server.addr, options.echo_connections, options.echo_duration).await;
    server.stop().await;
    let result = result?;
    eprintln!(
        "echo ceiling: {:.0} round trips/s ({:.0} messages/s), p99 {:.2} ms",
        result.round_trips_per_s, result.messages_per_s, result.latency_ms.p99
    );
    Ok(result)
}
