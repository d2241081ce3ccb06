//! Bytes that are not MessagePack, MessagePack bombs, and MessagePack that is no valid
//! message: each answered with its code (and the request's id where it can be read), the
//! connection kept, nothing changed.

use super::*;

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
            batch: false,
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
