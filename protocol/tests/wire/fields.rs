//! What the typed decoding refuses (wrong field types, unknown types and fields), the
//! request id a refusal still names, and the server's fields a client ignores.

use elementals_protocol::wire::{self, decode_client, decode_server, DecodeError};
use elementals_protocol::{ClientMsg, ErrorCode, ServerMsg};
use rmpv::Value;

use crate::helpers::{assert_bad_message, assert_refused, map, ping_with};

#[test]
fn wrong_field_types_are_bad_messages() {
    let g = Value::from("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab");
    let cases = [
        ping_with("id", Value::from("7")),
        ping_with("id", Value::from(-1)),
        ping_with("id", Value::from(u64::from(u32::MAX) + 1)),
        ping_with("id", Value::F64(7.0)),
        ping_with("id", Value::Nil),
        ping_with("id", Value::Ext(1, vec![7])),
        map(vec![("type", Value::from("ping"))]), // missing id
        map(vec![
            ("type", Value::from("watch")),
            ("id", Value::from(1)),
            ("game_id", Value::from("not-a-uuid")),
        ]),
        map(vec![
            ("type", Value::from("watch")),
            ("id", Value::from(1)),
            ("game_id", Value::Binary(vec![0; 16])),
        ]),
        map(vec![
            ("type", Value::from("commit")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("commitment", Value::from("89".repeat(32))),
        ]),
        map(vec![
            ("type", Value::from("commit")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("commitment", Value::Array(vec![Value::from(0x89); 32])),
        ]),
        map(vec![
            ("type", Value::from("reveal")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("pick", Value::from(5)),
            ("nonce", Value::from("0".repeat(32))),
        ]),
        map(vec![
            ("type", Value::from("reveal")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("pick", Value::from(70_000)),
            ("nonce", Value::Binary(vec![0; 32])),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            ("variant", Value::from("classic")),
            ("time_control", Value::from("blitz")),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            ("variant", Value::Map(vec![("number".into(), 5.into())])),
            ("time_control", Value::from("blitz")),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            (
                "variant",
                Value::Map(vec![
                    ("number".into(), 5.into()),
                    ("range".into(), 2.into()),
                    ("distance".into(), 3.into()),
                ]),
            ),
            ("time_control", Value::from("blitz")),
            ("rated", Value::from(1)),
        ]),
        map(vec![
            ("type", Value::from("ping")),
            ("id", Value::from(1)),
            ("id", Value::from(2)),
        ]),
    ];
    for frame in cases {
        let err = assert_bad_message(&frame);
        assert!(matches!(err, DecodeError::Invalid(_)), "{err:?}");
    }
}

#[test]
fn unknown_type_and_unknown_field_have_their_own_codes() {
    let frame = map(vec![("type", Value::from("fly")), ("id", Value::from(1))]);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(err, DecodeError::UnknownType("fly".into()));
    assert_eq!(err.code(), ErrorCode::UnknownType);
    // A server message type is not a client message type.
    let frame = wire::encode(&ServerMsg::Pong { id: 1 });
    assert_refused(&frame, DecodeError::UnknownType("pong".into()));

    let frame = map(vec![
        ("type", Value::from("ping")),
        ("id", Value::from(1)),
        ("colour", Value::from("red")),
    ]);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(err, DecodeError::UnknownField("colour".into()));
    assert_eq!(err.code(), ErrorCode::UnknownField);
}

/// A request refused for anything but its structure still names its `id`, which a client
/// waits on: found by the structure walk, whatever serde makes of the rest.
#[test]
fn a_readable_id_is_found_whatever_else_is_wrong() {
    let game = Value::from("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab");
    let id = |n: u64| ("id", Value::from(n));
    let cases: Vec<(&str, Vec<u8>, ErrorCode, Option<u32>)> = vec![
        (
            "an unknown type",
            map(vec![("type", Value::from("fly")), id(7)]),
            ErrorCode::UnknownType,
            Some(7),
        ),
        (
            "an unknown field, after the id",
            map(vec![
                ("type", Value::from("ping")),
                id(8),
                ("colour", 1.into()),
            ]),
            ErrorCode::UnknownField,
            Some(8),
        ),
        (
            "an unknown field, before the id",
            map(vec![
                ("colour", 1.into()),
                ("type", Value::from("ping")),
                id(9),
            ]),
            ErrorCode::UnknownField,
            Some(9),
        ),
        (
            "a missing field",
            map(vec![("type", Value::from("resign")), id(10)]),
            ErrorCode::BadMessage,
            Some(10),
        ),
        (
            "a field of the wrong type",
            map(vec![
                ("type", Value::from("commit")),
                ("game_id", game.clone()),
                ("round", Value::from("one")),
                ("commitment", Value::Binary(vec![0; 32])),
                id(11),
            ]),
            ErrorCode::BadMessage,
            Some(11),
        ),
        (
            "a bin where a string is due",
            map(vec![
                ("type", Value::from("resign")),
                id(12),
                ("game_id", Value::Binary(vec![1])),
            ]),
            ErrorCode::BadMessage,
            Some(12),
        ),
        (
            "no type",
            map(vec![id(13)]),
            ErrorCode::BadMessage,
            Some(13),
        ),
        (
            "a type that is not a string",
            map(vec![("type", Value::from(0)), id(14)]),
            ErrorCode::BadMessage,
            Some(14),
        ),
        (
            "the largest id in a u64 encoding",
            map(vec![
                ("type", Value::from("fly")),
                ("id", Value::from(u32::MAX as u64)),
            ]),
            ErrorCode::UnknownType,
            Some(u32::MAX),
        ),
        (
            "an id in a signed encoding",
            // {type: "fly", id: int 64 of 15}: encoders may write any int encoding.
            [
                &[0x82, 0xa4][..],
                b"type",
                &[0xa3],
                b"fly",
                &[0xa2],
                b"id",
                &[0xd3, 0, 0, 0, 0, 0, 0, 0, 15],
            ]
            .concat(),
            ErrorCode::UnknownType,
            Some(15),
        ),
        // Unreadable: nil.
        (
            "no id",
            map(vec![("type", Value::from("fly"))]),
            ErrorCode::UnknownType,
            None,
        ),
        (
            "an id over u32",
            map(vec![
                ("type", Value::from("ping")),
                ("id", Value::from(1u64 << 32)),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "a negative id",
            map(vec![("type", Value::from("ping")), ("id", Value::from(-1))]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "a string id",
            map(vec![
                ("type", Value::from("ping")),
                ("id", Value::from("1")),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "two ids",
            map(vec![("type", Value::from("ping")), id(1), id(2)]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "an id in a nested map only",
            map(vec![
                ("type", Value::from("join_pool")),
                ("variant", Value::Map(vec![("id".into(), 3.into())])),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "trailing bytes",
            [map(vec![("type", Value::from("ping")), id(16)]), vec![0xc0]].concat(),
            ErrorCode::BadMessage,
            None,
        ),
    ];
    for (what, frame, code, expected) in cases {
        let refused = wire::decode_request(&frame).expect_err(what);
        assert_eq!(
            (refused.error.code(), refused.id),
            (code, expected),
            "{what}"
        );
        assert_eq!(
            decode_client(&frame),
            Err(refused.error),
            "{what}: the same verdict as decode_client"
        );
    }
    // A valid request is decoded as ever.
    let ping = wire::encode(&ClientMsg::Ping { id: 5 });
    assert_eq!(wire::decode_request(&ping), Ok(ClientMsg::Ping { id: 5 }));
}

#[test]
fn servers_may_add_fields_that_clients_ignore() {
    let frame = map(vec![
        ("type", Value::from("pong")),
        ("id", Value::from(9)),
        ("server_time", Value::from(1_767_225_600_000u64)),
    ]);
    assert_eq!(decode_server(&frame), Ok(ServerMsg::Pong { id: 9 }));
}
