//! One WebSocket connection to a server: the socket's reader and writer tasks, the
//! routing of replies to the requests that wait for them, and the bounded stream of
//! everything else (pushes and game events).
//!
//! The reader task owns the receiving half: it decodes each binary frame and either
//! completes the oneshot of the request whose `id` the reply echoes, or queues the message
//! on the events channel. The writer task owns the sending half and drains a bounded
//! queue of frames. Tungstenite answers the server's pings by itself while the reader
//! reads, so a client that is only waiting still looks alive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elementals_protocol::messages::{Limits, RequestId};
use elementals_protocol::wire::{self, MAX_SERVER_MESSAGE_BYTES};
use elementals_protocol::{ClientMsg, ServerMsg, PROTOCOL_VERSION};
use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::Connector;

use crate::error::ClientError;
use crate::tls::TlsRoots;
use crate::url::ServerUrl;

/// Settings for [`Connection::connect_with`].
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Bytes the socket's read buffer allocates up front. Tungstenite's default is
    /// 128 KiB; a load test holding thousands of connections wants a few KiB.
    pub read_buffer: usize,
    /// Bytes written frames may gather before they are flushed to the socket.
    pub write_buffer: usize,
    /// How many pushes and game events may wait unread; see [`DEFAULT_EVENTS_CAPACITY`].
    pub events_capacity: usize,
    /// How long a request waits for its reply.
    pub request_timeout: Duration,
    /// What the client calls itself in `hello`.
    pub client_name: String,
    /// What a `wss://` connection trusts.
    pub tls_roots: TlsRoots,
}

/// Events a connection holds for a caller that has not read them yet. A game sends a
/// handful per round and the lobby about one a second, so this absorbs any burst while a
/// caller awaits a reply; it is bounded so that a caller that stops reading costs at most
/// this much memory. When it is full the reader stops reading the socket, and TCP's
/// backpressure reaches the server, whose own bounded queue then decides.
pub const DEFAULT_EVENTS_CAPACITY: usize = 1024;

/// Frames queued for the writer. Callers await their replies, so only concurrent callers
/// queue here; when the socket is slow, senders wait instead of growing a buffer.
const OUTGOING_CAPACITY: usize = 32;

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            read_buffer: 128 * 1024,
            write_buffer: 0,
            events_capacity: DEFAULT_EVENTS_CAPACITY,
            request_timeout: Duration::from_secs(30),
            client_name: format!("elementals-client/{}", env!("CARGO_PKG_VERSION")),
            tls_roots: TlsRoots::default(),
        }
    }
}

impl ConnectOptions {
    /// Small buffers for load tests that hold many connections.
    pub fn small() -> ConnectOptions {
        ConnectOptions {
            read_buffer: 4 * 1024,
            ..ConnectOptions::default()
        }
    }
}

/// What the server said in `welcome`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub protocol_version: u32,
    pub server: String,
    pub limits: Limits,
}

/// Requests waiting for replies; `None` once the connection has closed, so that a request
/// made after that fails at once instead of waiting out its timeout.
type Pending = Arc<Mutex<Option<HashMap<RequestId, oneshot::Sender<ServerMsg>>>>>;

/// An open, greeted connection. Requests take `&self`, so one connection can be shared
/// (in an `Arc`) by a task reading events and others making requests.
pub struct Connection {
    next_id: AtomicU32,
    // std Mutex: it is only held to insert or remove an entry, never across an `.await`.
    pending: Pending,
    outgoing: mpsc::Sender<Message>,
    events: tokio::sync::Mutex<mpsc::Receiver<ServerMsg>>,
    request_timeout: Duration,
    info: ServerInfo,
    reader: JoinHandle<()>,
}

impl Connection {
    /// Connect with default options and say `hello`.
    pub async fn connect(url: &str) -> Result<Connection, ClientError> {
        Connection::connect_with(url, ConnectOptions::default()).await
    }

    /// Connect, start the reader and writer tasks, and say `hello`. `url` may be any form
    /// [`ServerUrl`] accepts.
    pub async fn connect_with(
        url: &str,
        options: ConnectOptions,
    ) -> Result<Connection, ClientError> {
        let url = ServerUrl::parse(url)?;
        let config = WebSocketConfig::default()
            .read_buffer_size(options.read_buffer)
            .write_buffer_size(options.write_buffer)
            .max_message_size(Some(MAX_SERVER_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_SERVER_MESSAGE_BYTES));
        // The roots are only gathered for TLS: a load test opens thousands of plain sockets.
        let connector = match url.is_tls() {
            true => Some(Connector::Rustls(Arc::new(
                options.tls_roots.client_config()?,
            ))),
            false => None,
        };
        // Nagle off: a round is a few small frames each way, and latency is the game.
        let (socket, _response) = tokio_tungstenite::connect_async_tls_with_config(
            url.ws_url(),
            Some(config),
            true,
            connector,
        )
        .await?;
        let (sink, stream) = socket.split();

        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let (events_tx, events_rx) = mpsc::channel(options.events_capacity.max(1));
        let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CAPACITY);
        let reader = tokio::spawn(read_frames(stream, pending.clone(), events_tx));
        // The writer ends by itself when every sender (this connection) is gone.
        tokio::spawn(write_frames(sink, outgoing_rx));

        let mut connection = Connection {
            next_id: AtomicU32::new(1),
            pending,
            outgoing,
            events: tokio::sync::Mutex::new(events_rx),
            request_timeout: options.request_timeout,
            info: ServerInfo {
                protocol_version: 0,
                server: String::new(),
                limits: Limits {
                    max_message_bytes: 0,
                    max_messages_per_s: 0,
                    heartbeat_ms: 0,
                    idle_timeout_ms: 0,
                    max_rounds: 0,
                    first_commit_ms: 0,
                },
            },
            reader,
        };
        let client = Some(options.client_name);
        let reply = connection
            .request(|id| ClientMsg::Hello {
                id,
                protocol_version: PROTOCOL_VERSION,
                client,
                // A round's events come as one frame each time (PROTOCOL.md, "Batches").
                batch: true,
            })
            .await?;
        match reply {
            ServerMsg::Welcome {
                protocol_version,
                server,
                limits,
                ..
            } => {
                connection.info = ServerInfo {
                    protocol_version,
                    server,
                    limits,
                };
                Ok(connection)
            }
            other => Err(ClientError::unexpected(other)),
        }
    }

    /// What the server announced in `welcome`.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// Send the request `build` makes with a fresh id and wait for its reply. An `error`
    /// reply becomes [`ClientError::Server`].
    pub async fn request(
        &self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<ServerMsg, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().expect("pending lock").as_mut() {
            Some(waiting) => waiting.insert(id, tx),
            None => return Err(ClientError::Closed),
        };
        let bytes = wire::encode_client(&build(id));
        #[cfg(feature = "conformance")]
        elementals_protocol::conformance::assert_client_frame(&bytes);
        let frame = Message::Binary(bytes.into());
        if self.outgoing.send(frame).await.is_err() {
            self.forget(id);
            return Err(ClientError::Closed);
        }
        match tokio::time::timeout(self.request_timeout, rx).await {
            Ok(Ok(ServerMsg::Error { code, message, .. })) => {
                Err(ClientError::Server { code, message })
            }
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(ClientError::Closed),
            Err(_) => {
                self.forget(id);
                Err(ClientError::Timeout(self.request_timeout))
            }
        }
    }

    /// Send raw bytes as one binary frame, with no reply expected: for tests of how a
    /// server treats malformed input. Any `error` it answers arrives as an event.
    pub async fn send_raw(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.outgoing
            .send(Message::Binary(bytes.into()))
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// The next push or game event; `None` once the connection has closed and every
    /// queued event has been read.
    pub async fn next_event(&self) -> Option<ServerMsg> {
        self.events.lock().await.recv().await
    }

    /// An event that is already queued, without waiting.
    pub fn try_next_event(&self) -> Option<ServerMsg> {
        self.events.try_lock().ok()?.try_recv().ok()
    }

    /// Whether the reader has seen the connection end.
    pub fn is_closed(&self) -> bool {
        self.pending.lock().expect("pending lock").is_none()
    }

    fn forget(&self, id: RequestId) {
        if let Some(waiting) = self.pending.lock().expect("pending lock").as_mut() {
            waiting.remove(&id);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer sees its queue close and sends a close frame; the reader would wait for
        // the server to hang up, which is of no use to anyone any more.
        self.reader.abort();
    }
}

async fn read_frames<S>(mut stream: S, pending: Pending, events: mpsc::Sender<ServerMsg>)
where
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    'frames: while let Some(frame) = stream.next().await {
        let bytes = match frame {
            Ok(Message::Binary(bytes)) => bytes,
            Ok(Message::Text(_)) => {
                tracing::warn!("ignoring a text frame: the protocol is binary");
                continue;
            }
            // Pings are answered by tungstenite; a close is followed by the stream's end.
            Ok(_) => continue,
            Err(err) => {
                tracing::debug!(%err, "connection ended");
                break;
            }
        };
        // One message, or a batch of them (asked for in `hello`).
        let msgs = wire::decode_server_frame(&bytes);
        // Tests check every frame the library takes in (the ones it ignores, in part or
        // whole, are theirs).
        #[cfg(feature = "conformance")]
        if msgs.iter().all(Result::is_ok) {
            elementals_protocol::conformance::assert_batching_server_frame(&bytes);
        }
        for msg in msgs {
            let msg = match msg {
                Ok(msg) => msg,
                Err(err) => {
                    // Perhaps a newer server's message; one bad message should not end the
                    // session.
                    tracing::warn!(%err, "ignoring an undecodable message");
                    continue;
                }
            };
            if let Some(id) = msg.reply_id() {
                let waiter = pending
                    .lock()
                    .expect("pending lock")
                    .as_mut()
                    .and_then(|waiting| waiting.remove(&id));
                match waiter {
                    // The waiter may have timed out and gone; then the reply is moot.
                    Some(waiter) => drop(waiter.send(msg)),
                    None => tracing::debug!(id, "reply to no waiting request"),
                }
                continue;
            }
            if events.send(msg).await.is_err() {
                break 'frames;
            }
        }
    }
    // Dropping the waiters' senders wakes every request with `Closed`.
    pending.lock().expect("pending lock").take();
}

async fn write_frames<S>(mut sink: S, mut outgoing: mpsc::Receiver<Message>)
where
    S: futures::Sink<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    while let Some(frame) = outgoing.recv().await {
        if let Err(err) = sink.send(frame).await {
            tracing::debug!(%err, "write failed");
            return;
        }
    }
    let _ = sink.send(Message::Close(None)).await;
}
