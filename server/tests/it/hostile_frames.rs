//! Hostile frames over a real WebSocket: oversized messages (whole or in fragments), text
//! frames, bytes that are not MessagePack, MessagePack bombs, unknown types and fields and
//! wrong field types. Each is answered with its documented error code and changes nothing;
//! the connection is kept unless the protocol says it closes.

mod not_messages;
mod raw;

use crate::common::*;
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

/// The harness's conformance hook fails the test that sees a frame the schema does not
/// describe, in either direction: the hostile frames above are sent with `send_raw` and
/// `send_frame` because they are meant not to conform.
#[test]
#[should_panic(expected = "a server frame does not conform to the schema")]
fn a_server_frame_that_does_not_conform_fails_its_test() {
    conform(
        Sender::Server,
        &mp(json!({"type": "pong", "id": 1, "extra": true})),
    );
}

#[test]
#[should_panic(expected = "a client frame does not conform to the schema")]
fn a_client_frame_that_does_not_conform_fails_its_test() {
    conform(Sender::Client, &mp(json!({"type": "ping", "id": "one"})));
}
