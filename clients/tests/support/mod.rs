//! A scripted stand-in for the server: it accepts WebSocket connections, answers `hello`,
//! and hands each connection to the test, which then plays the server's part message by
//! message. It lets the client be tested before (and independently of) the real server.
//! Every frame it reads and every message it sends is checked against the protocol's schema.

#![allow(dead_code)]

use elementals_client::protocol::messages::Limits;
use elementals_client::protocol::wire;
use elementals_client::protocol::{ClientMsg, ServerMsg, PROTOCOL_VERSION};
use elementals_protocol::conformance;
use futures::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub struct MockServer {
    pub url: String,
    conns: mpsc::Receiver<MockConn>,
}

/// One accepted, greeted connection, seen from the server's side.
pub struct MockConn {
    ws: WebSocketStream<TcpStream>,
    /// The client asked for batches in its `hello`.
    pub batch: bool,
}

pub async fn start() -> MockServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    // A test opens one or two connections.
    let (tx, conns) = mpsc::channel(4);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
                let mut conn = MockConn { ws, batch: false };
                match conn.recv().await {
                    ClientMsg::Hello {
                        id,
                        protocol_version,
                        batch,
                        ..
                    } => {
                        assert_eq!(protocol_version, PROTOCOL_VERSION);
                        conn.batch = batch;
                        conn.send(&welcome(id)).await;
                    }
                    other => panic!("expected hello, got {other:?}"),
                }
                let _ = tx.send(conn).await;
            });
        }
    });
    MockServer { url, conns }
}

pub fn welcome(id: u32) -> ServerMsg {
    ServerMsg::Welcome {
        id,
        protocol_version: PROTOCOL_VERSION,
        server: "mock".into(),
        limits: Limits {
            max_message_bytes: 16 * 1024,
            max_messages_per_s: 50,
            heartbeat_ms: 15_000,
            idle_timeout_ms: 60_000,
            max_rounds: 1_000,
            first_commit_ms: 30_000,
        },
    }
}

impl MockServer {
    /// The next connection, once its `hello` is answered.
    pub async fn accept(&mut self) -> MockConn {
        self.conns.recv().await.expect("mock server stopped")
    }
}

impl MockConn {
    /// The next frame of any kind.
    pub async fn frame(&mut self) -> Option<Message> {
        self.ws.next().await.map(|f| f.expect("mock read"))
    }

    /// The next client message, skipping control frames.
    pub async fn recv(&mut self) -> ClientMsg {
        loop {
            match self.frame().await {
                Some(Message::Binary(bytes)) => {
                    conformance::assert_client_frame(&bytes);
                    return wire::decode_client(&bytes).unwrap();
                }
                Some(Message::Ping(_) | Message::Pong(_)) => continue,
                other => panic!("expected a client message, got {other:?}"),
            }
        }
    }

    pub async fn send(&mut self, msg: &ServerMsg) {
        let bytes = wire::encode_server(msg);
        conformance::assert_server_frame(&bytes);
        self.ws.send(Message::Binary(bytes.into())).await.unwrap();
    }

    /// Several messages as one frame, the MessagePack array of them (PROTOCOL.md, "Batches").
    pub async fn send_batch(&mut self, msgs: &[ServerMsg]) {
        assert!(msgs.len() < 16, "a fixarray");
        let mut bytes = vec![0x90 | msgs.len() as u8];
        for msg in msgs {
            bytes.extend_from_slice(&wire::encode_server(msg));
        }
        conformance::assert_batching_server_frame(&bytes);
        self.ws.send(Message::Binary(bytes.into())).await.unwrap();
    }

    /// Send a frame as it is, unchecked: the tests' malformed frames are meant not to conform.
    pub async fn send_frame(&mut self, frame: Message) {
        self.ws.send(frame).await.unwrap();
    }

    /// Close the socket from the server's side.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}
