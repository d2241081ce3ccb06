//! Below the WebSocket client: raw HTTP requests for `/ws` that are not upgrades, and raw
//! frames split across reads.

use super::*;

/// The status line and headers of the answer to a raw HTTP request for `/ws`.
async fn upgrade_answer(server: &TestServer, headers: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\n{headers}Connection: close\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    answer
        .split_once("\r\n\r\n")
        .map_or(answer.clone(), |(head, _)| head.to_string())
}

#[tokio::test]
async fn requests_that_are_not_websocket_upgrades_are_refused_before_any_websocket() {
    let server = start_server().await;
    let (status, _) = server.http_get("/ws").await;
    assert_eq!(status, 400, "a plain GET");
    let answer = upgrade_answer(
        &server,
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n",
    )
    .await;
    assert!(answer.starts_with("http/1.1 400"), "{answer}");
    assert!(answer.contains("sec-websocket-version: 13"), "{answer}");
    let answer = upgrade_answer(
        &server,
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n",
    )
    .await;
    assert!(answer.starts_with("http/1.1 400"), "no key: {answer}");
    // A real client still gets in, and its offered subprotocol is echoed.
    let request = ws_request(&server, &[("sec-websocket-protocol", "elementals.v1")]);
    let (_, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        "elementals.v1"
    );
    until_metric(&server, "elementals_connections", 1).await;
}

/// One client frame as a client sends it: binary, final, masked (with a zero key, which
/// leaves the payload as it is); `payload`, a message that conforms, under 126 bytes.
fn masked_frame(payload: &[u8]) -> Vec<u8> {
    conform(Sender::Client, payload);
    assert!(payload.len() < 126);
    let mut frame = vec![0x82, 0x80 | payload.len() as u8, 0, 0, 0, 0];
    frame.extend_from_slice(payload);
    frame
}

/// The next server frame from a raw socket: binary, unmasked, under 126 bytes.
async fn raw_server_frame(stream: &mut tokio::net::TcpStream) -> ServerMsg {
    use tokio::io::AsyncReadExt;
    let mut head = [0; 2];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(head[0], 0x82, "a final binary frame");
    assert!(head[1] < 126, "a short unmasked frame");
    let mut payload = vec![0; head[1] as usize];
    stream.read_exact(&mut payload).await.unwrap();
    conform(Sender::Server, &payload);
    wire::decode_server(&payload).unwrap()
}

#[tokio::test]
async fn a_frame_whose_rest_arrives_after_a_read_emptied_the_socket_is_answered() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start_server().await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        answer.push(stream.read_u8().await.unwrap());
    }
    assert!(answer.starts_with(b"HTTP/1.1 101"), "{answer:?}");

    // One write: a whole `ping` and the first half of another. The server reads both at
    // once, less than its buffer holds, so its reader takes the socket for empty and
    // waits for the next arrival; it answers the first meanwhile (before `hello`, with
    // `hello_required`, which is an answer all the same).
    let first = masked_frame(&wire::encode_client(&ClientMsg::Ping { id: 1 }));
    let second = masked_frame(&wire::encode_client(&ClientMsg::Ping { id: 2 }));
    let (head, rest) = second.split_at(second.len() / 2);
    stream
        .write_all(&[&first[..], head].concat())
        .await
        .unwrap();
    let reply = raw_server_frame(&mut stream).await;
    assert_eq!(reply.reply_id(), Some(1), "{reply:?}");

    // The rest arrives later, and wakes the reader.
    stream.write_all(rest).await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(10), raw_server_frame(&mut stream))
        .await
        .expect("the second frame's rest woke the server's reader");
    assert_eq!(reply.reply_id(), Some(2), "{reply:?}");
}
