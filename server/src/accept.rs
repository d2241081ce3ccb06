//! The accept loop: HTTP/1.1 on each TCP connection (hyper), with a deadline on every
//! request head and a cap on connections that have not finished their handshake.
//!
//! `axum::serve` has neither, so a client could open sockets and trickle header bytes
//! forever (slowloris). Here each connection must deliver a complete request head within
//! `--handshake-timeout-secs` of its handshake starting (and of its previous response, for
//! keep-alive), and at most `--max-handshakes` connections may be in that state at once.
//! Beyond that, connections are still accepted, up to `--accept-queue` more, and wait in
//! order for a slot, holding only their socket. Only past both does the loop stop
//! accepting and leave connections to the kernel's accept queue (`LISTEN_BACKLOG`, capped
//! by `net.core.somaxconn`); past that the kernel drops their SYNs, and a client retries a
//! SYN only after a second, then three. So a burst of reconnecting clients (a restart, a
//! network blip) is admitted as fast as handshakes complete, where with the kernel's queue
//! alone much of a 10,000-player storm would wait out those timers.
//! One address may have at most `--max-connections-per-ip` connections in a handshake or
//! waiting for one (a trusted proxy's connections are not counted: they carry many
//! clients); more are closed at once, so no one address fills the queue. A connection
//! leaves this accounting when it upgrades to a WebSocket: from then on the connection caps
//! in `http` and the sign-in and idle timeouts in `connection` govern it. Only HTTP/1.1 is
//! served: WebSockets need nothing else, and HTTP/2's preface detection would be a read
//! without a deadline.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::config::Config;
use crate::limits::IpConnections;
use crate::metrics::{Counted, Metrics};

/// Largest request head hyper buffers (hyper's minimum is 8 KiB; its default of ~400 KiB
/// per connection would let a slow client pin that much memory).
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;

/// How long shutdown lets plain HTTP requests in flight finish.
const DRAIN: Duration = Duration::from_secs(5);

/// After an accept error (out of file descriptors, say), wait this long before the next
/// accept rather than spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Connections the kernel queues for `accept` (it caps this at `net.core.somaxconn`,
/// 4096 by default on current kernels).
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with a `LISTEN_BACKLOG`-deep accept queue.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serve `app` on `listener` until `shutdown` completes; then stop accepting, ask open
/// HTTP connections to finish their current request, and wait (boundedly) for them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: &Config,
    metrics: &Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let max_handshakes = config.max_handshakes.max(1);
    let handshakes = Arc::new(Semaphore::new(max_handshakes));
    // Connections accepted and not yet upgraded (or closed): in a handshake, or waiting
    // for a slot.
    let accepted = Arc::new(Semaphore::new(
        max_handshakes.saturating_add(config.accept_queue),
    ));
    // Per address, connections accepted and not yet upgraded.
    let per_address = IpConnections::new(config.max_connections_per_ip);
    let header_timeout = config.handshake_timeout();
    let connections = TaskTracker::new();
    let stop = CancellationToken::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // Room for one more first, then a connection to give it to.
        let room = tokio::select! {
            _ = &mut shutdown => break,
            room = accepted.clone().acquire_owned() => match room {
                Ok(room) => room,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let address_slot = if config.trusted_proxy.contains(&peer.ip()) {
            None
        } else {
            match per_address.try_acquire(peer.ip()) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(%peer, "too many connections in a handshake from one address");
                    drop(stream);
                    continue;
                }
            }
        };
        let app = app.clone();
        let stop = stop.clone();
        let handshakes = handshakes.clone();
        let metrics = metrics.clone();
        connections.spawn(async move {
            // Waiting holds the socket and this small future; hyper's state and buffers
            // come with the slot. The semaphore is fair: first come, first served.
            let waiting = Counted::new(&metrics.handshakes_waiting);
            let slot = tokio::select! {
                slot = handshakes.acquire_owned() => slot,
                _ = stop.cancelled() => return,
            };
            drop(waiting);
            if let Ok(slot) = slot {
                let _in_handshake = Counted::new(&metrics.handshakes);
                Box::pin(serve_connection(stream, peer, app, header_timeout, stop)).await;
                drop(slot);
            }
            drop((room, address_slot));
        });
    }
    stop.cancel();
    connections.close();
    if tokio::time::timeout(DRAIN, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("some HTTP connections did not finish in time");
    }
    Ok(())
}

/// One connection: hyper's HTTP/1.1 with upgrades, the peer's address as `ConnectInfo`.
/// Returns when the connection closes or has been handed to a WebSocket.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    header_timeout: Duration,
    stop: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(request)
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut conn = pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        // Timeouts, resets and malformed requests: the client's problem, not ours.
        tracing::debug!(%peer, error = %e, "HTTP connection ended");
    }
}
