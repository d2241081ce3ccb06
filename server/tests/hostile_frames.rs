//! Hostile frames over a real WebSocket: oversized messages (whole or in fragments), text
//! frames, bytes that are not MessagePack, MessagePack bombs, unknown types and fields and
//! wrong field types. Each is answered with its documented error code and changes nothing;
//! the connection is kept unless the protocol says it closes.

mod common;

use common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::wire::{self, MAX_CLIENT_MESSAGE_BYTES};
use elementals_protocol::ErrorCode;
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

/// MessagePack for a JSON-shaped value (maps with string keys, as a client library writes).
fn mp(value: serde_json::Value) -> Vec<u8> {
    rmp_serde::to_vec_named(&value).unwrap()
}

/// A `ping` padded with an unknown string field to exactly `size` bytes.
fn padded_ping(size: usize) -> Vec<u8> {
    let bare = mp(json!({"type": "ping", "id": 1, "pad": ""})).len();
    // The pad's header grows from 1 byte (fixstr) to 3 (str16) past 31 bytes.
    let pad = size - bare - 2;
    let bytes = mp(json!({"type": "ping", "id": 1, "pad": "x".repeat(pad)}));
    assert_eq!(bytes.len(), size);
    bytes
}

/// Reads up to the close frame; returns the error codes that came before it and the code.
async fn errors_then_close(client: &mut TestClient) -> (Vec<ErrorCode>, Option<u16>) {
    let mut errors = Vec::new();
    loop {
        match client.next_frame().await {
            Some(Message::Binary(bytes)) => {
                if let Ok(ServerMsg::Error { code, .. }) = wire::decode_server(&bytes) {
                    errors.push(code);
                }
            }
            Some(Message::Close(frame)) => return (errors, frame.map(|f| f.code.into())),
            Some(_) => {}
            None => return (errors, None),
        }
    }
}

/// The connection still answers, and is still before `hello`.
async fn still_waiting_for_hello(client: &mut TestClient) {
    assert_error(
        &client.request(ClientMsg::Ping { id: 900 }).await,
        ErrorCode::HelloRequired,
    );
}

#[tokio::test]
async fn a_message_over_the_size_cap_is_refused_and_closed_1009() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    client
        .send_raw(padded_ping(MAX_CLIENT_MESSAGE_BYTES + 1))
        .await;
    let (errors, code) = errors_then_close(&mut client).await;
    assert_eq!(errors, vec![ErrorCode::MessageTooLarge]);
    assert_eq!(code, Some(1009));
}

#[tokio::test]
async fn a_message_of_exactly_the_cap_is_read() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    // Read and decoded, so refused for its unknown field, not for its size.
    client.send_raw(padded_ping(MAX_CLIENT_MESSAGE_BYTES)).await;
    match client.recv().await {
        ServerMsg::Error { id, code, .. } => {
            assert_eq!((id, code), (Some(1), ErrorCode::UnknownField));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        client.request(ClientMsg::Ping { id: 7 }).await,
        ServerMsg::Pong { id: 7 }
    ));
}

#[tokio::test]
async fn small_fragments_adding_up_over_the_cap_are_closed_1009() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    let chunk = vec![0x90u8; 1000];
    let fragments = MAX_CLIENT_MESSAGE_BYTES / chunk.len() + 2;
    client
        .send_frame(Message::Frame(Frame::message(
            chunk.clone(),
            OpCode::Data(Data::Binary),
            false,
        )))
        .await;
    for i in 1..fragments {
        let last = i + 1 == fragments;
        let frame = Frame::message(chunk.clone(), OpCode::Data(Data::Continue), last);
        // The server may close before the last fragments are written.
        if !client.try_send_frame(Message::Frame(frame)).await {
            break;
        }
    }
    let (errors, code) = errors_then_close(&mut client).await;
    assert_eq!(errors, vec![ErrorCode::MessageTooLarge]);
    assert_eq!(code, Some(1009));
}

#[tokio::test]
async fn fragments_under_the_cap_make_one_message() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    let ping = wire::encode(&ClientMsg::Ping { id: 42 });
    let (a, rest) = ping.split_at(3);
    let (b, c) = rest.split_at(2);
    for (i, part) in [a, b, c].into_iter().enumerate() {
        let opcode = if i == 0 {
            OpCode::Data(Data::Binary)
        } else {
            OpCode::Data(Data::Continue)
        };
        let frame = Frame::message(part.to_vec(), opcode, i == 2);
        client.send_frame(Message::Frame(frame)).await;
    }
    assert!(matches!(client.recv().await, ServerMsg::Pong { id: 42 }));
}

#[tokio::test]
async fn a_text_frame_is_refused_and_closed_1003() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    client
        .send_frame(Message::text(r#"{"type":"ping","id":1}"#))
        .await;
    let (errors, code) = errors_then_close(&mut client).await;
    assert_eq!(errors, vec![ErrorCode::BadMessage]);
    assert_eq!(code, Some(1003));
}

/// Frames that are not MessagePack, or are MessagePack bombs: each `bad_message`, with a
/// nil `id` (nothing in them can be read as one).
fn not_messagepack() -> Vec<(&'static str, Vec<u8>)> {
    let mut deep = vec![0x81, 0xa1, b'x'];
    deep.extend(std::iter::repeat_n(0x91, 10_000));
    deep.push(0xc0);
    let mut trailing = wire::encode(&ClientMsg::Ping { id: 1 });
    trailing.push(0x00);
    let mut two_messages = wire::encode(&ClientMsg::Ping { id: 1 });
    two_messages.extend(wire::encode(&ClientMsg::Ping { id: 2 }));
    vec![
        ("an empty frame", vec![]),
        ("the never-used marker 0xc1", vec![0xc1]),
        ("text", b"hello, world".to_vec()),
        ("JSON", br#"{"type":"ping","id":1}"#.to_vec()),
        ("a truncated map", vec![0x82, 0xa4, b't', b'y', b'p', b'e']),
        (
            "a str declared 4 GiB long",
            vec![
                0x81, 0xa4, b't', b'y', b'p', b'e', 0xdb, 0xff, 0xff, 0xff, 0xff, b'p',
            ],
        ),
        (
            "a bin declared 4 GiB long",
            vec![0x81, 0xa1, b'x', 0xc6, 0xff, 0xff, 0xff, 0xff, 0x00],
        ),
        (
            "an array declared 4 billion long",
            vec![0x81, 0xa1, b'x', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0],
        ),
        (
            "a map declared 4 billion entries long",
            vec![0xdf, 0xff, 0xff, 0xff, 0xff, 0xa4, b't', b'y', b'p', b'e'],
        ),
        ("10,000 levels of nesting", deep),
        ("a trailing byte", trailing),
        ("two messages in one frame", two_messages),
        ("an array, not a map", mp(json!(["ping", 1]))),
        (
            "an integer key",
            vec![0x81, 0x01, 0xa4, b'p', b'i', b'n', b'g'],
        ),
    ]
}

/// Well-formed MessagePack that is not a valid message, the code each gets and the `id`
/// its error answers (the frame's own, where it is one u32).
fn invalid_messages() -> Vec<(&'static str, Vec<u8>, ErrorCode, Option<u32>)> {
    use ErrorCode::{BadMessage, UnknownField, UnknownType};
    let game = "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab";
    vec![
        (
            "an unknown type",
            mp(json!({"type": "teleport", "id": 1})),
            UnknownType,
            Some(1),
        ),
        (
            "a server message",
            mp(json!({"type": "pong", "id": 1})),
            UnknownType,
            Some(1),
        ),
        (
            "an unknown field",
            mp(json!({"type": "ping", "id": 1, "admin": true})),
            UnknownField,
            Some(1),
        ),
        (
            "a missing field",
            mp(json!({"type": "ping"})),
            BadMessage,
            None,
        ),
        (
            "an integer type",
            mp(json!({"type": 1, "id": 1})),
            BadMessage,
            Some(1),
        ),
        ("no type", mp(json!({"id": 1})), BadMessage, Some(1)),
        (
            "a string id",
            mp(json!({"type": "ping", "id": "1"})),
            BadMessage,
            None,
        ),
        (
            "a negative id",
            mp(json!({"type": "ping", "id": -1})),
            BadMessage,
            None,
        ),
        (
            "an id over u32",
            mp(json!({"type": "ping", "id": 1u64 << 32})),
            BadMessage,
            None,
        ),
        (
            "a float id",
            mp(json!({"type": "ping", "id": 1.5})),
            BadMessage,
            None,
        ),
        (
            "a nil id",
            mp(json!({"type": "ping", "id": null})),
            BadMessage,
            None,
        ),
        (
            "a string protocol version",
            mp(json!({"type": "hello", "id": 1, "protocol_version": "1"})),
            BadMessage,
            Some(1),
        ),
        (
            "a commitment as hex text",
            mp(
                json!({"type": "commit", "id": 1, "game_id": game, "round": 1,
                      "commitment": "00".repeat(32)}),
            ),
            BadMessage,
            Some(1),
        ),
        (
            "a commitment as an array of integers",
            mp(
                json!({"type": "commit", "id": 1, "game_id": game, "round": 1,
                      "commitment": vec![0; 32]}),
            ),
            BadMessage,
            Some(1),
        ),
        (
            "a pick over u16",
            mp(
                json!({"type": "reveal", "id": 1, "game_id": game, "round": 1,
                      "pick": 70_000, "nonce": vec![0; 32]}),
            ),
            BadMessage,
            Some(1),
        ),
        (
            "a game id that is not a UUID",
            mp(json!({"type": "resign", "id": 1, "game_id": "game-1"})),
            BadMessage,
            Some(1),
        ),
        (
            "a variant as a string",
            mp(json!({"type": "join_pool", "id": 1, "variant": "classic",
                      "time_control": "blitz"})),
            BadMessage,
            Some(1),
        ),
        (
            "a time control as a number",
            mp(json!({"type": "join_pool", "id": 1, "time_control": 180,
                      "variant": {"number": 5, "range": 2, "distance": 3}})),
            BadMessage,
            Some(1),
        ),
    ]
}

#[tokio::test]
async fn bytes_that_are_not_messagepack_and_bombs_are_answered_and_the_connection_kept() {
    let server = start_server().await;
    // Before hello, so that "nothing changed" is visible: hello is still required after.
    let mut client = TestClient::connect_raw(&server).await;
    for (what, bytes) in not_messagepack() {
        client.send_raw(bytes).await;
        match client.recv().await {
            ServerMsg::Error { id, code, .. } => {
                assert_eq!((id, code), (None, ErrorCode::BadMessage), "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    still_waiting_for_hello(&mut client).await;
}

#[tokio::test]
async fn unknown_types_fields_and_wrong_field_types_get_their_codes() {
    let server = start_server().await;
    let mut client = TestClient::connect_raw(&server).await;
    for (what, bytes, expected, expected_id) in invalid_messages() {
        client.send_raw(bytes).await;
        match client.recv().await {
            ServerMsg::Error { id, code, .. } => {
                assert_eq!((id, code), (expected_id, expected), "{what}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    still_waiting_for_hello(&mut client).await;
    // And the session goes on normally from there.
    let r = client
        .request(ClientMsg::Hello {
            id: 901,
            protocol_version: 1,
            client: None,
        })
        .await;
    assert!(matches!(r, ServerMsg::Welcome { .. }), "{r:?}");
    client.register("frames1").await;
}

/// A client that waits for the answer to its request id gets it, even when the request
/// is refused before it is understood: the four refusals a client author meets.
#[tokio::test]
async fn a_refused_request_is_answered_with_its_readable_id() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    client.register("readid1").await;
    let cases = [
        (
            "an unknown type",
            mp(json!({"type": "teleport", "id": 41})),
            ErrorCode::UnknownType,
        ),
        (
            "an unknown field",
            mp(json!({"id": 42, "type": "list_games", "page": 2})),
            ErrorCode::UnknownField,
        ),
        (
            "a missing field",
            mp(json!({"type": "watch", "id": 43})),
            ErrorCode::BadMessage,
        ),
        (
            "a field of the wrong type",
            mp(json!({"type": "sync", "game_id": 7, "id": 44})),
            ErrorCode::BadMessage,
        ),
    ];
    for (n, (what, bytes, expected)) in cases.into_iter().enumerate() {
        client.send_raw(bytes).await;
        // The next frame is the answer, with the request's id.
        match client.recv().await {
            ServerMsg::Error { id, code, .. } => {
                assert_eq!((id, code), (Some(41 + n as u32), expected), "{what}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // The session goes on.
    client.assert_open().await;
}

#[tokio::test]
async fn malformed_moves_in_a_game_change_nothing() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "mal01", "mal02").await;
    let g = game.game_id.to_string();
    let hostile = [
        mp(json!({"type": "commit", "id": 1, "game_id": g, "round": 1,
                  "commitment": "00".repeat(32)})),
        mp(json!({"type": "commit", "id": 1, "game_id": g, "round": -1,
                  "commitment": vec![0; 32]})),
        mp(json!({"type": "commit", "id": 1, "game_id": g, "round": 1})),
        mp(
            json!({"type": "commit", "id": 1, "game_id": g, "round": 1, "seat": "two",
                  "commitment": vec![0; 32]}),
        ),
        mp(json!({"type": "resign", "id": 1, "game_id": g, "seat": "two"})),
    ];
    for bytes in hostile {
        one.send_raw(bytes).await;
        // Game events may come first; the refusal follows.
        one.expect("a refusal", |m| {
            matches!(m, ServerMsg::Error { id: Some(1), code, .. } if *code == ErrorCode::BadMessage || *code == ErrorCode::UnknownField)
        })
        .await;
    }
    let id = one.id();
    match one
        .request(ClientMsg::Sync {
            id,
            game_id: game.game_id,
        })
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => {
            assert_eq!(snapshot.round, 1);
            assert!(!snapshot.committed.one && !snapshot.committed.two);
            assert!(snapshot.result.is_none());
        }
        other => panic!("{other:?}"),
    }
    // The game goes on as if nothing had been sent.
    play_round(&mut one, &mut two, game.game_id, 1, (1, 2)).await;
}

#[tokio::test]
async fn a_client_ping_gets_its_pong_in_order_and_a_close_gets_a_close_then_the_end() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    client
        .send_frame(Message::Ping("are you there".into()))
        .await;
    let id = client.id();
    client.send(&ClientMsg::Ping { id }).await;
    assert_eq!(
        client.next_frame().await,
        Some(Message::Pong("are you there".into()))
    );
    match client.next_frame().await {
        Some(Message::Binary(bytes)) => {
            assert!(
                matches!(wire::decode_server(&bytes), Ok(ServerMsg::Pong { id: got }) if got == id)
            )
        }
        other => panic!("expected the pong message, got {other:?}"),
    }
    client.send_frame(Message::Close(None)).await;
    assert!(matches!(client.next_frame().await, Some(Message::Close(_))));
    assert_eq!(
        client.next_frame().await,
        None,
        "then the server ends the connection"
    );
}

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
/// leaves the payload as it is); `payload` under 126 bytes.
fn masked_frame(payload: &[u8]) -> Vec<u8> {
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
