//! The WebSocket layer: the upgrade handshake, reading client frames, and framing what
//! the server sends.
//!
//! Reading is tungstenite's (unmasking, fragments, control frames, size limits), over the
//! socket's reading half only (tokio's `OwnedReadHalf`). Writing is ours: a server's frames
//! are never masked, so a frame is a header of 2 to 10 bytes in front of the payload (RFC
//! 6455 §5.2), the same bytes for every recipient. That is what lets a game frame a delivery
//! once for ten thousand spectators (`outbox::Framed`); each connection's outbox, which
//! holds its socket's writing half, writes its part of the same bytes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// The subprotocol the server accepts and echoes when a client offers it.
pub const PROTOCOL: &str = "elementals.v1";

/// Frame opcodes the server sends.
pub mod opcode {
    pub const BINARY: u8 = 0x2;
    pub const CLOSE: u8 = 0x8;
    pub const PING: u8 = 0x9;
    pub const PONG: u8 = 0xA;
}

/// The header of one unfragmented, unmasked frame.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    bytes: [u8; 10],
    len: u8,
}

impl Header {
    pub fn new(opcode: u8, payload_len: usize) -> Header {
        let mut bytes = [0u8; 10];
        bytes[0] = 0x80 | opcode; // FIN: every frame the server sends is a whole message
        let len = if payload_len < 126 {
            bytes[1] = payload_len as u8;
            2
        } else if let Ok(len) = u16::try_from(payload_len) {
            bytes[1] = 126;
            bytes[2..4].copy_from_slice(&len.to_be_bytes());
            4
        } else {
            bytes[1] = 127;
            bytes[2..10].copy_from_slice(&(payload_len as u64).to_be_bytes());
            10
        };
        Header { bytes, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Appends one whole frame to `buf`.
pub fn frame_into(buf: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    buf.extend_from_slice(Header::new(opcode, payload.len()).as_bytes());
    buf.extend_from_slice(payload);
}

/// A close frame's payload: the code, then the reason (at most 123 bytes, so that the
/// payload fits a control frame's 125).
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(&reason.as_bytes()[..end]);
    payload
}

/// Why an upgrade request was refused, as the response to send.
fn refuse(status: StatusCode, why: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(why));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Checks an HTTP/1.1 upgrade request (RFC 6455 §4.2.1) and builds the `101 Switching
/// Protocols` answer, echoing `PROTOCOL` when the client offers it. A request that is not
/// a WebSocket upgrade gets the 4xx to send instead.
#[allow(
    clippy::result_large_err,
    reason = "one per upgrade request, handed straight back to axum"
)]
pub fn accept(method: &Method, headers: &HeaderMap) -> Result<Response<Body>, Response<Body>> {
    if method != Method::GET {
        return Err(refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "a WebSocket upgrade is a GET",
        ));
    }
    if !has_token(headers, header::CONNECTION, "upgrade") {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "Connection header did not include 'upgrade'",
        ));
    }
    if !has_token(headers, header::UPGRADE, "websocket") {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "Upgrade header did not include 'websocket'",
        ));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        let mut refused = refuse(
            StatusCode::BAD_REQUEST,
            "unsupported WebSocket version: send Sec-WebSocket-Version: 13",
        );
        refused.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return Err(refused);
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "Sec-WebSocket-Key header missing",
        ));
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = response.headers_mut();
    out.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    out.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    out.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a valid header value"),
    );
    if has_token(headers, header::SEC_WEBSOCKET_PROTOCOL, PROTOCOL) {
        out.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(PROTOCOL),
        );
    }
    Ok(response)
}

/// Whether any of the header's comma-separated values is `token` (ASCII case-insensitive).
fn has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value
                .split(',')
                .any(|part| part.trim().eq_ignore_ascii_case(token))
        })
    })
}

/// A client's frames, read by tungstenite.
pub type Frames = WebSocketStream<ReadSide>;

/// An upgraded connection: the frames it reads, and the socket's writing half, for the
/// connection's outbox alone (`Outbox::attach`).
pub struct Socket {
    pub frames: Frames,
    pub write: OwnedWriteHalf,
}

impl Socket {
    /// The WebSocket on `tcp`, whose first bytes (read with the upgrade request) are
    /// `read`.
    pub async fn new(tcp: TcpStream, read: Vec<u8>, config: WebSocketConfig) -> Socket {
        let (read_half, write) = tcp.into_split();
        let frames = WebSocketStream::from_partially_read(
            ReadSide(read_half),
            read,
            Role::Server,
            Some(config),
        )
        .await;
        Socket { frames, write }
    }
}

/// The reading half of a connection's socket, for tungstenite.
///
/// Tungstenite answers pings and closes by itself, through its stream's writing side;
/// here that side takes the bytes and drops them. The connection answers a ping and a
/// close through its outbox instead (`connection.rs`), so every byte the server sends goes
/// through the outbox, in order. Reading is tokio's own (`OwnedReadHalf`), which clears the
/// socket's readiness after a read that fills less than its room, so no `EAGAIN` read
/// follows it.
pub struct ReadSide(OwnedReadHalf);

impl AsyncRead for ReadSide {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for ReadSide {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    #[test]
    fn headers_use_the_shortest_length_encoding() {
        assert_eq!(Header::new(opcode::BINARY, 0).as_bytes(), [0x82, 0]);
        assert_eq!(Header::new(opcode::BINARY, 125).as_bytes(), [0x82, 125]);
        assert_eq!(
            Header::new(opcode::PING, 126).as_bytes(),
            [0x89, 126, 0, 126]
        );
        assert_eq!(
            Header::new(opcode::BINARY, 65_535).as_bytes(),
            [0x82, 126, 0xff, 0xff]
        );
        assert_eq!(
            Header::new(opcode::BINARY, 65_536).as_bytes(),
            [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]
        );
    }

    #[test]
    fn a_close_reason_is_cut_to_fit_a_control_frame_on_a_character_boundary() {
        let payload = close_payload(1000, &"é".repeat(100));
        assert_eq!(&payload[..2], &1000u16.to_be_bytes());
        assert!(payload.len() <= 125);
        assert!(std::str::from_utf8(&payload[2..]).is_ok());
    }

    #[test]
    fn the_handshake_answer_follows_rfc_6455() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONNECTION, "keep-alive, Upgrade".parse().unwrap());
        headers.insert(header::UPGRADE, "websocket".parse().unwrap());
        headers.insert(header::SEC_WEBSOCKET_VERSION, "13".parse().unwrap());
        // The example key and answer of RFC 6455 §1.3.
        headers.insert(
            header::SEC_WEBSOCKET_KEY,
            "dGhlIHNhbXBsZSBub25jZQ==".parse().unwrap(),
        );
        let answer = accept(&Method::GET, &headers).unwrap();
        assert_eq!(answer.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(
            answer.headers()[header::SEC_WEBSOCKET_ACCEPT],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert!(!answer
            .headers()
            .contains_key(header::SEC_WEBSOCKET_PROTOCOL));

        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "chat, elementals.v1".parse().unwrap(),
        );
        let answer = accept(&Method::GET, &headers).unwrap();
        assert_eq!(
            answer.headers()[header::SEC_WEBSOCKET_PROTOCOL],
            "elementals.v1"
        );

        assert_eq!(
            accept(&Method::POST, &headers).unwrap_err().status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        headers.insert(header::SEC_WEBSOCKET_VERSION, "8".parse().unwrap());
        let refused = accept(&Method::GET, &headers).unwrap_err();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        assert_eq!(refused.headers()[header::SEC_WEBSOCKET_VERSION], "13");
        headers.insert(header::SEC_WEBSOCKET_VERSION, "13".parse().unwrap());
        headers.remove(header::SEC_WEBSOCKET_KEY);
        assert_eq!(
            accept(&Method::GET, &headers).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
        headers.insert(header::UPGRADE, "h2c".parse().unwrap());
        assert_eq!(
            accept(&Method::GET, &headers).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }

    /// Frames framed here, written raw, read by a tungstenite client; and the client's
    /// frames (bytes it sent before the server started reading included) read here.
    #[tokio::test]
    async fn frames_written_here_are_what_a_client_reads_and_the_reverse() {
        use futures::SinkExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, server) = tokio::join!(client, listener.accept());
        let mut client =
            WebSocketStream::from_raw_socket(client.unwrap(), Role::Client, None).await;
        let (server, _) = server.unwrap();

        let mut out = Vec::new();
        let big = vec![7u8; 70_000];
        frame_into(&mut out, opcode::BINARY, b"small");
        frame_into(&mut out, opcode::BINARY, &big);
        frame_into(&mut out, opcode::PING, b"p");
        frame_into(&mut out, opcode::CLOSE, &close_payload(4000, "superseded"));
        let reading = tokio::spawn(async move {
            let mut got = Vec::new();
            while got.len() < 4 {
                got.push(client.next().await.unwrap().unwrap());
            }
            got
        });
        let mut written = 0;
        while written < out.len() {
            server.writable().await.unwrap();
            match server.try_write(&out[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        let got = reading.await.unwrap();
        assert_eq!(got[0], Message::Binary("small".into()));
        assert_eq!(got[1], Message::Binary(big.into()));
        assert_eq!(got[2], Message::Ping("p".into()));
        match &got[3] {
            Message::Close(Some(frame)) => {
                assert_eq!(u16::from(frame.code), 4000);
                assert_eq!(frame.reason, "superseded");
            }
            other => panic!("expected a close, got {other:?}"),
        }

        // The other way: what a client sends, read through `ReadSide`, the first frame's
        // bytes handed over as already read (as hyper hands over what it read past the
        // upgrade request).
        let connecting = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, server) = tokio::join!(connecting, listener.accept());
        let mut client =
            WebSocketStream::from_raw_socket(client.unwrap(), Role::Client, None).await;
        let (tcp, _) = server.unwrap();
        client.send(Message::Binary("first".into())).await.unwrap();
        client.send(Message::Binary("second".into())).await.unwrap();
        // A client's frame is masked: 2 header bytes, a 4-byte mask, the payload.
        let mut first = vec![0u8; 2 + 4 + 5];
        let mut read = 0;
        while read < first.len() {
            tcp.readable().await.unwrap();
            match tcp.try_read(&mut first[read..]) {
                Ok(n) => read += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        let mut socket = Socket::new(tcp, first, WebSocketConfig::default()).await;
        for expected in ["first", "second"] {
            assert_eq!(
                socket.frames.next().await.unwrap().unwrap(),
                Message::Binary(expected.into())
            );
        }
    }
}
