//! What the structure walk refuses before serde sees a frame: truncation, lying lengths,
//! depth, trailing bytes, a top level that is not a map with a string `type`, non-string
//! keys, reserved markers and oversize frames.

use elementals_protocol::wire::{
    self, check_structure, decode_client, decode_server, DecodeError, MAX_CLIENT_MESSAGE_BYTES,
    MAX_DEPTH, MAX_SERVER_MESSAGE_BYTES,
};
use elementals_protocol::{ClientMsg, ErrorCode};
use rmpv::Value;

use crate::examples::{client_examples, server_examples};
use crate::helpers::{assert_refused, map, ping_with};

#[test]
fn empty_frame_is_truncated() {
    assert_refused(&[], DecodeError::Truncated);
    assert_eq!(DecodeError::Truncated.code(), ErrorCode::BadMessage);
}

#[test]
fn every_proper_prefix_of_every_message_is_truncated() {
    let client = client_examples()
        .iter()
        .map(wire::encode)
        .collect::<Vec<_>>();
    for bytes in &client {
        for len in 0..bytes.len() {
            assert_refused(&bytes[..len], DecodeError::Truncated);
        }
    }
    for msg in server_examples() {
        let bytes = wire::encode(&msg);
        for len in 0..bytes.len() {
            assert_eq!(
                decode_server(&bytes[..len]),
                Err(DecodeError::Truncated),
                "{msg:?} cut at {len}"
            );
        }
    }
}

#[test]
fn lengths_of_four_gib_in_a_tiny_frame_are_refused_before_allocating() {
    let lies: [&[u8]; 6] = [
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'x'],       // str32
        &[0xc6, 0xff, 0xff, 0xff, 0xff, 0x00],       // bin32
        &[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01],       // array32
        &[0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'k'], // map32
        &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00], // ext32
        &[0xdc, 0xff, 0xff, 0x01],                   // array16
    ];
    for lie in lies {
        let mut frame = ping_with("id", Value::from(1));
        frame[0] = 0x83;
        frame.extend([0xa1, b'x']);
        frame.extend(lie);
        assert_refused(&frame, DecodeError::Truncated);
    }
    assert_refused(&[0xdf, 0xff, 0xff, 0xff, 0xff], DecodeError::Truncated);
    assert_refused(&[0xde, 0xff, 0xff, 0xa1, b'k'], DecodeError::Truncated);
}

/// `{"a": [[[...nil...]]]}`: a map holding `levels - 1` nested arrays, so `levels`
/// containers in all; the innermost array holds a nil.
fn nested_arrays(levels: usize) -> Vec<u8> {
    let mut frame = vec![0x81, 0xa1, b'a'];
    frame.extend(std::iter::repeat_n(0x91, levels - 1));
    frame.push(0xc0);
    frame
}

/// `{"a": {"a": ... nil}}`: `levels` nested maps.
fn nested_maps(levels: usize) -> Vec<u8> {
    let mut frame = [0x81, 0xa1, b'a'].repeat(levels);
    frame.push(0xc0);
    frame
}

#[test]
fn ten_thousand_levels_are_too_deep_or_too_large() {
    let arrays = nested_arrays(10_000);
    assert!(arrays.len() <= MAX_CLIENT_MESSAGE_BYTES);
    assert_refused(&arrays, DecodeError::TooDeep);
    assert_eq!(decode_server(&arrays), Err(DecodeError::TooDeep));

    let maps = nested_maps(10_000);
    assert!(maps.len() > MAX_CLIENT_MESSAGE_BYTES);
    assert_refused(
        &maps,
        DecodeError::TooLarge {
            size: maps.len(),
            limit: MAX_CLIENT_MESSAGE_BYTES,
        },
    );
    assert_eq!(decode_server(&maps), Err(DecodeError::TooDeep));
}

#[test]
fn depth_limit_counts_the_top_level_map_as_one() {
    // The nil inside `MAX_DEPTH - 1` containers sits at depth MAX_DEPTH: accepted.
    for frame in [nested_arrays(MAX_DEPTH - 1), nested_maps(MAX_DEPTH - 1)] {
        assert_eq!(check_structure(&frame, MAX_CLIENT_MESSAGE_BYTES), Ok(()));
        // It is structurally fine, so serde decides: no `type`.
        assert_refused(&frame, DecodeError::NotAMap);
    }
    for frame in [nested_arrays(MAX_DEPTH), nested_maps(MAX_DEPTH)] {
        assert_refused(&frame, DecodeError::TooDeep);
    }
    // A deep nest in a real message, well within the size limit.
    let mut value = Value::from(1);
    for _ in 0..MAX_DEPTH {
        value = Value::Array(vec![value]);
    }
    assert_refused(&ping_with("extra", value), DecodeError::TooDeep);
}

#[test]
fn trailing_bytes_are_refused() {
    let ping = wire::encode(&ClientMsg::Ping { id: 1 });
    let mut frame = ping.clone();
    frame.push(0xc0);
    assert_refused(&frame, DecodeError::TrailingBytes(1));
    let mut twice = ping.clone();
    twice.extend(&ping);
    assert_refused(&twice, DecodeError::TrailingBytes(ping.len()));
    assert_eq!(DecodeError::TrailingBytes(1).code(), ErrorCode::BadMessage);
}

#[test]
fn top_level_must_be_a_map_with_a_string_type() {
    let not_maps: [&[u8]; 6] = [
        &[0x90],       // empty array
        &[0x91, 0x01], // array
        &[0xc0],       // nil
        &[0x07],       // integer
        &[0xa4, b'p', b'i', b'n', b'g'],
        &[0xc4, 0x01, 0x00], // bin
    ];
    for frame in not_maps {
        assert_refused(frame, DecodeError::NotAMap);
    }
    assert_refused(&[0x80], DecodeError::NotAMap);
    assert_refused(&map(vec![("id", Value::from(1))]), DecodeError::NotAMap);
    assert_eq!(DecodeError::NotAMap.code(), ErrorCode::BadMessage);
    // serde would read `type: 0` as the first variant and `type: <bin "ping">` as ping.
    for tag in [
        Value::from(0),
        Value::from(1),
        Value::Binary(b"ping".to_vec()),
    ] {
        let frame = map(vec![
            ("type", tag),
            ("id", Value::from(1)),
            ("protocol_version", Value::from(1)),
        ]);
        assert_refused(&frame, DecodeError::NotAMap);
    }
}

#[test]
fn positional_array_encoding_is_refused() {
    // `rmp_serde::to_vec` writes structs as arrays: ["ping", 7].
    for msg in client_examples() {
        let positional = rmp_serde::to_vec(&msg).unwrap();
        assert_refused(&positional, DecodeError::NotAMap);
    }
}

#[test]
fn map_keys_must_be_strings() {
    // serde would read the integer key 0 as "the first field", i.e. `id`.
    let mut frame = map(vec![("type", Value::from("ping"))]);
    frame[0] = 0x82;
    frame.extend([0x00, 0x05]);
    assert_refused(&frame, DecodeError::InvalidMarker(0x00));
    // A bin key that spells a field name.
    let mut frame = map(vec![("type", Value::from("ping"))]);
    frame[0] = 0x82;
    frame.extend([0xc4, 0x02, b'i', b'd', 0x05]);
    assert_refused(&frame, DecodeError::InvalidMarker(0xc4));
    // Nested maps too.
    let frame = map(vec![
        ("type", Value::from("join_pool")),
        ("id", Value::from(1)),
        (
            "variant",
            Value::Map(vec![
                (Value::from(0), 5.into()),
                (Value::from(1), 2.into()),
                (Value::from(2), 3.into()),
            ]),
        ),
        ("time_control", Value::from("blitz")),
    ]);
    assert_refused(&frame, DecodeError::InvalidMarker(0x00));
    // A non-minimal string encoding is still a string.
    let frame = [
        &[0x82, 0xd9, 0x04][..],
        b"type",
        &[0xda, 0x00, 0x04],
        b"ping",
        &[0xa2],
        b"id",
        &[0x07],
    ]
    .concat();
    assert_eq!(decode_client(&frame), Ok(ClientMsg::Ping { id: 7 }));
}

#[test]
fn reserved_marker_is_refused() {
    let mut frame = ping_with("id", Value::from(1));
    *frame.last_mut().unwrap() = 0xc1;
    assert_refused(&frame, DecodeError::InvalidMarker(0xc1));
}

#[test]
fn oversize_frames_are_too_large() {
    let register = ClientMsg::Register {
        id: 1,
        name: "x".repeat(MAX_CLIENT_MESSAGE_BYTES),
        password: "correct horse".into(),
    };
    let frame = wire::encode(&register);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TooLarge {
            size: frame.len(),
            limit: MAX_CLIENT_MESSAGE_BYTES
        }
    );
    assert_eq!(err.code(), ErrorCode::MessageTooLarge);
    assert_eq!(err.code().as_str(), "message_too_large");
    // The size is checked before anything else, even on garbage.
    let garbage = vec![0xc1; MAX_CLIENT_MESSAGE_BYTES + 1];
    assert!(matches!(
        decode_client(&garbage),
        Err(DecodeError::TooLarge { .. })
    ));
    // The same frame is fine for a server message's larger limit.
    assert!(frame.len() < MAX_SERVER_MESSAGE_BYTES);
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted() {
    let empty = wire::encode(&ClientMsg::Register {
        id: 1,
        name: String::new(),
        password: "p".into(),
    });
    // A str16 name: 3 header bytes instead of fixstr's 1.
    let name_len = MAX_CLIENT_MESSAGE_BYTES - empty.len() - 2;
    let msg = ClientMsg::Register {
        id: 1,
        name: "n".repeat(name_len),
        password: "p".into(),
    };
    let frame = wire::encode(&msg);
    assert_eq!(frame.len(), MAX_CLIENT_MESSAGE_BYTES);
    assert_eq!(decode_client(&frame), Ok(msg));
}
