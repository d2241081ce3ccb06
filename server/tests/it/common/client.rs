//! The typed test client: a real WebSocket, requests answered by id, pushes kept for later.

use super::*;

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
    /// The client asked for batches in `hello`: a frame may hold an array of messages.
    batch: bool,
    /// The rest of the last batch read, not yet read.
    unread: VecDeque<ServerMsg>,
    /// How many messages each binary frame held, in the order they came.
    pub frame_sizes: Vec<usize>,
}

impl TestClient {
    /// Connect and say hello.
    pub async fn connect(server: &TestServer) -> TestClient {
        Self::connect_at(server.addr).await
    }

    /// Connect to a server at `addr` (one started as a child process, say) and say hello.
    pub async fn connect_at(addr: SocketAddr) -> TestClient {
        Self::connect_asking(addr, false).await
    }

    /// Connect and say hello asking for batches (PROTOCOL.md, "Batches").
    pub async fn connect_batched(server: &TestServer) -> TestClient {
        Self::connect_asking(server.addr, true).await
    }

    async fn connect_asking(addr: SocketAddr, batch: bool) -> TestClient {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap();
        let mut client = TestClient::over(ws);
        client.batch = batch;
        let id = client.id();
        match client
            .request(ClientMsg::Hello {
                id,
                protocol_version: 1,
                client: Some("test".into()),
                batch,
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
            batch: false,
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
        TestClient::over(ws)
    }

    fn over(ws: WebSocketStream<MaybeTlsStream<TcpStream>>) -> TestClient {
        TestClient {
            ws,
            next_id: 0,
            pending: VecDeque::new(),
            token: None,
            batch: false,
            unread: VecDeque::new(),
            frame_sizes: Vec::new(),
        }
    }

    /// Connect with a prepared upgrade request (see [`ws_request`]) and say nothing yet;
    /// a refused upgrade gives its HTTP status.
    pub async fn connect_with(request: ClientRequest) -> Result<TestClient, u16> {
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => Ok(TestClient::over(ws)),
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

    /// Send a frame as it is, unchecked (see `send_raw`); false if the connection is
    /// already gone.
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
        let frame = tokio::time::timeout(WAIT, self.ws.next())
            .await
            .expect("a frame arrives in time")
            .and_then(Result::ok);
        if let Some(Message::Binary(bytes)) = &frame {
            conform(self.server(), bytes);
        }
        frame
    }

    /// What the server's frames to this client are: one message each, or, once it asked
    /// for batches, a message or an array of them.
    fn server(&self) -> Sender {
        if self.batch {
            Sender::ServerBatching
        } else {
            Sender::Server
        }
    }

    pub fn id(&mut self) -> RequestId {
        self.next_id += 1;
        self.next_id
    }

    pub async fn send(&mut self, msg: &ClientMsg) {
        let bytes = wire::encode(msg);
        conform(Sender::Client, &bytes);
        self.send_raw(bytes).await;
    }

    /// Send bytes as they are, unchecked: the hostile tests' frames are meant not to conform.
    pub async fn send_raw(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::Binary(bytes.into())).await.unwrap();
    }

    /// Send a frame as it is, unchecked (see `send_raw`).
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
        self.recv_wire_within(WAIT).await
    }

    /// The next message from the wire, failing if none comes within `within`. A client
    /// that did not ask for batches decodes each frame as one message, so a batch sent to
    /// it fails the test.
    async fn recv_wire_within(&mut self, within: Duration) -> ServerMsg {
        if let Some(msg) = self.unread.pop_front() {
            return msg;
        }
        loop {
            let frame = tokio::time::timeout(within, self.ws.next())
                .await
                .expect("a message arrives in time")
                .expect("connection open")
                .expect("frame ok");
            match frame {
                Message::Binary(b) if self.batch => {
                    conform(self.server(), &b);
                    let msgs = wire::decode_server_frame(&b);
                    self.frame_sizes.push(msgs.len());
                    let mut msgs = msgs
                        .into_iter()
                        .map(|m| m.expect("batched messages decode"));
                    let first = msgs.next().expect("a frame holds a message");
                    self.unread.extend(msgs);
                    return first;
                }
                Message::Binary(b) => {
                    conform(Sender::Server, &b);
                    self.frame_sizes.push(1);
                    return wire::decode_server(&b).expect("server frames decode");
                }
                Message::Ping(_) | Message::Pong(_) => continue,
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    /// The next close frame's code, skipping any messages before it (each still checked).
    pub async fn closed_with(&mut self) -> Option<u16> {
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("closes in time");
            match frame {
                Some(Ok(Message::Close(Some(c)))) => return Some(c.code.into()),
                Some(Ok(Message::Close(None))) | None | Some(Err(_)) => return None,
                Some(Ok(Message::Binary(bytes))) => conform(self.server(), &bytes),
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

    /// `expect`, for an event that may take longer than `WAIT` to come (a takeover that
    /// waits for a dead node's lease to lapse): each message may take up to `within`.
    pub async fn expect_within(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&ServerMsg) -> bool,
    ) -> ServerMsg {
        loop {
            let msg = match self.pending.pop_front() {
                Some(msg) => msg,
                None => tokio::time::timeout(within, self.recv_wire_within(within))
                    .await
                    .unwrap_or_else(|_| panic!("timed out waiting for {what}")),
            };
            if pred(&msg) {
                return msg;
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// Who sent a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    Client,
    /// A server, to a client that did not ask for batches: one message a frame.
    Server,
    /// A server, to a client that asked for batches in `hello`: one message, or an array
    /// of two or more (PROTOCOL.md, "Batches").
    ServerBatching,
}

/// The conformance hook: every frame a test client sends with `send` (or `request`) and
/// every frame a server sends it is checked against the protocol's schema
/// (`protocol/schema/messages.json`); a frame that does not conform fails the test.
pub fn conform(sender: Sender, bytes: &[u8]) {
    match sender {
        Sender::Client => conformance::assert_client_frame(bytes),
        Sender::Server => conformance::assert_server_frame(bytes),
        Sender::ServerBatching => conformance::assert_batching_server_frame(bytes),
    }
}
