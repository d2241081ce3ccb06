//! One lean client connection: a socket bound to a chosen loopback source address, the
//! WebSocket on it, and typed send and receive, all owned by the one task that uses it.
//!
//! The client library's `Connection` runs a reader and a writer task per socket and
//! connects from whatever source address the kernel picks. A load test holding 19,000
//! sockets wants neither: it spreads them over several 127.0.0.x source addresses (each
//! has its own ephemeral port range) and keeps one task per simulated client, so the
//! moment a frame is written is the moment it is timed.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use elementals_client::protocol::messages::RequestId;
use elementals_client::protocol::wire::{self, MAX_SERVER_MESSAGE_BYTES};
use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg, PROTOCOL_VERSION};
use futures::{SinkExt, StreamExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::stats::Stats;

/// Bytes tungstenite reads at a time: our frames are small, and 128 KiB (its default)
/// per socket would dominate the load generator's memory.
const READ_BUFFER: usize = 4 * 1024;

/// How long a request may wait for its reply before the run counts a timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Connections per loopback source address. Each address has its own ~28,000
/// ephemeral ports, and servers cap connections per client address (the Elementals
/// server at 64 by default), so many simulated clients need many addresses, as many
/// real clients would have.
pub const CONNECTIONS_PER_ADDRESS: u64 = 48;

/// The first source address: 127.0.0.2 (127.0.0.1 is left to everything else).
const FIRST_SOURCE: u32 = u32::from_be_bytes([127, 0, 0, 2]);

/// How many source addresses connections are spread over; set once per run.
static SOURCE_ADDRESSES: AtomicU32 = AtomicU32::new(8);

/// Spread `connections` over enough loopback addresses (at least 8); returns the count.
pub fn spread_over_sources(connections: u64) -> u32 {
    let count = connections.div_ceil(CONNECTIONS_PER_ADDRESS).max(8) as u32;
    SOURCE_ADDRESSES.store(count, Relaxed);
    count
}

/// Whether connections ask for batches in `hello`; set once per run (`--no-batch`).
static BATCH: AtomicBool = AtomicBool::new(true);

/// Whether connections ask for batches in `hello` (PROTOCOL.md, "Batches").
pub fn ask_for_batches(batch: bool) {
    BATCH.store(batch, Relaxed);
}

/// The last source address in use, for messages.
pub fn last_source_address() -> Ipv4Addr {
    Ipv4Addr::from(FIRST_SOURCE + SOURCE_ADDRESSES.load(Relaxed) - 1)
}

/// Why a connection failed, named as the run reports it.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("handshake: {0}")]
    Handshake(Box<tokio_tungstenite::tungstenite::Error>),
    #[error("closed")]
    Closed,
    #[error("timeout")]
    Timeout,
    /// The TCP connection or the WebSocket upgrade took longer than `REQUEST_TIMEOUT`
    /// (told apart from a request's timeout: a saturated server's accept queue, not its
    /// answer to a message).
    #[error("upgrade timeout")]
    UpgradeTimeout,
    #[error("server refused ({code})")]
    Server { code: ErrorCode },
    #[error("unexpected reply")]
    Unexpected,
    /// Resumed after a lost node, not seated although its game is live: not yet claimed.
    #[error("game not back yet")]
    GameNotBack,
    /// After a lost node: sign in again (`resume`) to hear where this player is seated.
    #[error("to resume again")]
    Reseat,
}

impl ConnError {
    /// The key under `errors_by_kind`.
    pub fn kind(&self, doing: &str) -> String {
        match self {
            ConnError::Connect(e) => format!("{doing}: connect ({})", e.kind()),
            ConnError::Handshake(_) => format!("{doing}: handshake"),
            ConnError::Closed => format!("{doing}: connection closed"),
            ConnError::Timeout => format!("{doing}: timeout"),
            ConnError::UpgradeTimeout => format!("{doing}: upgrade timeout"),
            ConnError::Server { code } => format!("{doing}: server error {code}"),
            ConnError::Unexpected => format!("{doing}: unexpected reply"),
            ConnError::GameNotBack => format!("{doing}: game not back"),
            ConnError::Reseat => format!("{doing}: resumed again"),
        }
    }
}

/// The source address for the `n`th connection: 127.0.0.2 onwards, round robin.
pub fn source_address(n: u64) -> IpAddr {
    let count = SOURCE_ADDRESSES.load(Relaxed) as u64;
    IpAddr::V4(Ipv4Addr::from(FIRST_SOURCE + (n % count) as u32))
}

pub struct Conn {
    ws: WebSocketStream<TcpStream>,
    next_id: RequestId,
    /// Pushes that arrived while a request waited for its reply.
    stashed: VecDeque<ServerMsg>,
    /// The rest of the last batch read from the socket, not yet read.
    unread: VecDeque<ServerMsg>,
    /// Messages per second the server allows this connection, from `welcome`.
    pub rate: u32,
    stats: Arc<Stats>,
}

impl Conn {
    /// Connect from `source`, upgrade, and say `hello`.
    pub async fn open(
        server: SocketAddr,
        source: IpAddr,
        stats: Arc<Stats>,
    ) -> Result<Conn, ConnError> {
        let ws = tokio::time::timeout(REQUEST_TIMEOUT, upgrade(server, source))
            .await
            .map_err(|_| ConnError::UpgradeTimeout)??;
        let mut conn = Conn {
            ws,
            next_id: 1,
            stashed: VecDeque::new(),
            unread: VecDeque::new(),
            rate: 0,
            stats,
        };
        let reply = conn
            .request(|id| ClientMsg::Hello {
                id,
                protocol_version: PROTOCOL_VERSION,
                client: Some("elementals-loadtest".into()),
                batch: BATCH.load(Relaxed),
            })
            .await?;
        match reply {
            ServerMsg::Welcome { limits, .. } => {
                conn.rate = limits.max_messages_per_s;
                conn.stats
                    .announced_rate
                    .store(limits.max_messages_per_s, Relaxed);
                Ok(conn)
            }
            _ => Err(ConnError::Unexpected),
        }
    }

    /// Send a request with a fresh id; its reply comes later through [`Conn::recv`].
    pub async fn send(
        &mut self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<RequestId, ConnError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let bytes = wire::encode_client(&build(id));
        self.ws
            .send(Message::Binary(bytes.into()))
            .await
            .map_err(|_| ConnError::Closed)?;
        self.stats.frames_out.fetch_add(1, Relaxed);
        Ok(id)
    }

    /// The next server message (stashed pushes first); `Closed` when the socket ends.
    /// Cancel-safe: a message is never lost when the future is dropped.
    pub async fn recv(&mut self) -> Result<ServerMsg, ConnError> {
        match self.stashed.pop_front() {
            Some(msg) => Ok(msg),
            None => self.read_socket().await,
        }
    }

    /// The next message from the socket; the rest of a batch is stashed for `recv`
    /// (a reply waited for is then found among them by `request`).
    async fn read_socket(&mut self) -> Result<ServerMsg, ConnError> {
        if let Some(msg) = self.unread.pop_front() {
            return Ok(msg);
        }
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Binary(bytes))) => {
                    self.stats.frames_in.fetch_add(1, Relaxed);
                    let mut first = None;
                    for msg in wire::decode_server_frame(&bytes) {
                        match msg {
                            Ok(msg) if first.is_none() => first = Some(msg),
                            Ok(msg) => self.unread.push_back(msg),
                            Err(_) => self.stats.error("decode: undecodable server message"),
                        }
                    }
                    if let Some(msg) = first {
                        return Ok(msg);
                    }
                }
                // Pings are answered by tungstenite while we read.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Err(ConnError::Closed),
                Some(Ok(_)) => {}
            }
        }
    }

    /// Send a request and wait for its reply, keeping pushes that come first for
    /// [`Conn::recv`]. An `error` reply is `ConnError::Server`.
    pub async fn request(
        &mut self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<ServerMsg, ConnError> {
        let id = self.send(build).await?;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let reply = loop {
            let msg = match tokio::time::timeout_at(deadline, self.read_socket()).await {
                Ok(msg) => msg?,
                Err(_) => return Err(ConnError::Timeout),
            };
            if msg.reply_id() == Some(id) {
                break msg;
            }
            self.stashed.push_back(msg);
        };
        match reply {
            ServerMsg::Error { code, .. } => Err(ConnError::Server { code }),
            reply => Ok(reply),
        }
    }

    /// The bare socket (non-blocking) and the next request id, for a client that reads it
    /// itself from here on (`lean/`). Only between requests, with nothing stashed.
    pub fn into_std(self) -> Result<(std::net::TcpStream, RequestId), ConnError> {
        if !self.stashed.is_empty() || !self.unread.is_empty() {
            return Err(ConnError::Unexpected);
        }
        let stream = self
            .ws
            .into_inner()
            .into_std()
            .map_err(ConnError::Connect)?;
        Ok((stream, self.next_id))
    }

    /// Forgets the pushes stashed while requests waited (a client that does not follow
    /// the game's events).
    pub fn discard_stashed(&mut self) {
        self.stashed.clear();
        self.unread.clear();
    }

    /// Close politely; errors are moot, the socket goes either way.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.close(None)).await;
    }
}

pub async fn upgrade(
    server: SocketAddr,
    source: IpAddr,
) -> Result<WebSocketStream<TcpStream>, ConnError> {
    let socket = TcpSocket::new_v4().map_err(ConnError::Connect)?;
    socket
        .bind(SocketAddr::new(source, 0))
        .map_err(ConnError::Connect)?;
    let stream = socket.connect(server).await.map_err(ConnError::Connect)?;
    // Nagle off: a round is a few small frames each way, and latency is what we measure.
    stream.set_nodelay(true).map_err(ConnError::Connect)?;
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(Some(MAX_SERVER_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_SERVER_MESSAGE_BYTES));
    let url = format!("ws://{server}/ws");
    let (ws, _) = tokio_tungstenite::client_async_with_config(url, stream, Some(config))
        .await
        .map_err(|e| ConnError::Handshake(Box::new(e)))?;
    Ok(ws)
}

/// The share of the server's announced rate limit a simulated connection uses.
pub const PACE_SHARE: f64 = 0.8;

/// Spaces a connection's requests so it stays under the server's announced rate limit
/// (at `PACE_SHARE` of it, leaving the burst allowance untouched).
pub struct Pacer {
    interval: Duration,
    next: Instant,
}

impl Pacer {
    pub fn new(rate_per_s: u32) -> Pacer {
        let rate = (rate_per_s.max(1) as f64) * PACE_SHARE;
        Pacer {
            interval: Duration::from_secs_f64(1.0 / rate),
            next: Instant::now(),
        }
    }

    /// The earliest instant a request wanted at `wanted` may go.
    pub fn earliest(&self, wanted: Instant) -> Instant {
        wanted.max(self.next)
    }

    /// A request went now: the next must wait an interval.
    pub fn sent(&mut self) {
        self.next = Instant::now() + self.interval;
    }
}
