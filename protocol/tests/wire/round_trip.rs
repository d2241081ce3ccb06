//! Every message round-trips, and every frame has the documented shape and encoding.

use std::collections::BTreeSet;

use elementals_protocol::wire::{self, decode_client, decode_server, MAX_CLIENT_MESSAGE_BYTES};
use elementals_protocol::{ClientMsg, ServerMsg};
use rmpv::Value;

use crate::examples::{client_examples, client_type, server_examples, server_type};
use crate::helpers::{collect_keys, declared_types, entries, get, map, value_of, variant_name};

#[test]
fn examples_cover_every_declared_message_type() {
    let client: BTreeSet<String> = client_examples()
        .iter()
        .map(|m| client_type(m).to_owned())
        .collect();
    assert_eq!(client, declared_types::<ClientMsg>());
    let server: BTreeSet<String> = server_examples()
        .iter()
        .map(|m| server_type(m).to_owned())
        .collect();
    assert_eq!(server, declared_types::<ServerMsg>());
}

#[test]
fn every_client_message_round_trips() {
    for msg in client_examples() {
        let bytes = wire::encode(&msg);
        assert_eq!(bytes, wire::encode_client(&msg));
        assert!(bytes.len() <= MAX_CLIENT_MESSAGE_BYTES);
        assert_eq!(decode_client(&bytes), Ok(msg.clone()), "{msg:?}");
    }
}

#[test]
fn every_server_message_round_trips() {
    for msg in server_examples() {
        let bytes = wire::encode(&msg);
        assert_eq!(bytes, wire::encode_server(&msg));
        assert_eq!(decode_server(&bytes), Ok(msg.clone()), "{msg:?}");
    }
}

#[test]
fn every_frame_is_a_map_with_string_keys_and_a_snake_case_type_first() {
    let client = client_examples()
        .into_iter()
        .map(|m| (wire::encode(&m), client_type(&m), format!("{m:?}")));
    let server = server_examples()
        .into_iter()
        .map(|m| (wire::encode(&m), server_type(&m), format!("{m:?}")));
    for (bytes, name, debug) in client.chain(server) {
        let value = value_of(&bytes);
        let first = &entries(&value)[0];
        assert_eq!(first.0.as_str(), Some("type"), "{debug}");
        assert_eq!(first.1.as_str(), Some(name), "{debug}");
        assert_eq!(name, variant_name(&debug));
        collect_keys(&value, &mut BTreeSet::new());
    }
}

#[test]
fn field_encodings_are_as_documented() {
    let commit = value_of(&wire::encode(&client_examples()[18]));
    assert_eq!(get(&commit, "type").as_str(), Some("commit"));
    assert!(matches!(get(&commit, "commitment"), Value::Binary(b) if b.len() == 32));
    assert_eq!(
        get(&commit, "game_id").as_str(),
        Some("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab")
    );
    // Without an escrow, `pick` and `nonce` are left out (the bytes are today's); with one,
    // they are a u16 and bin like a reveal's.
    let keys = |v: &Value| -> Vec<String> {
        entries(v)
            .iter()
            .filter_map(|(k, _)| k.as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        keys(&commit),
        ["type", "id", "game_id", "round", "commitment"]
    );
    let escrowed = value_of(&wire::encode(&client_examples()[19]));
    assert_eq!(get(&escrowed, "type").as_str(), Some("commit"));
    assert_eq!(get(&escrowed, "pick").as_u64(), Some(3));
    assert!(matches!(get(&escrowed, "nonce"), Value::Binary(b) if b.len() == 32));
    let reveal = value_of(&wire::encode(&client_examples()[20]));
    assert!(matches!(get(&reveal, "nonce"), Value::Binary(b) if b.len() == 32));
    assert_eq!(get(&reveal, "pick").as_u64(), Some(5));

    let notice = value_of(&wire::encode(&server_examples().pop().unwrap()));
    assert_eq!(get(&notice, "code").as_str(), Some("superseded"));
    let rating = server_examples()
        .into_iter()
        .find(|m| server_type(m) == "rating_update")
        .unwrap();
    let rating = value_of(&wire::encode(&rating));
    let one = get(get(&rating, "ratings"), "one");
    assert!(matches!(get(one, "before"), Value::F64(r) if *r == 1.3));
    assert!(matches!(get(one, "after"), Value::F64(r) if *r == 1.8));

    // Absent options are nil, not missing; seats are "one" / "two"; enums are strings.
    let error = value_of(&wire::encode(&server_examples()[4]));
    assert_eq!(get(&error, "id"), &Value::Nil);
    assert_eq!(get(&error, "code").as_str(), Some("bad_message"));
    let snap = value_of(&wire::encode(&server_examples()[11]));
    assert_eq!(get(&snap, "seat"), &Value::Nil);
    let inner = get(&snap, "snapshot");
    assert_eq!(get(inner, "phase").as_str(), Some("reveal"));
    assert_eq!(get(inner, "draw_offer").as_str(), Some("one"));
    assert_eq!(get(inner, "result"), &Value::Nil);
    let players = get(get(inner, "game"), "players");
    assert_eq!(get(get(players, "two"), "name").as_str(), Some("bob"));
}

#[test]
fn client_fields_may_come_in_any_order_and_defaults_apply() {
    let hello = map(vec![
        ("protocol_version", Value::from(1)),
        ("id", Value::from(1)),
        ("type", Value::from("hello")),
    ]);
    assert_eq!(
        decode_client(&hello),
        Ok(ClientMsg::Hello {
            id: 1,
            protocol_version: 1,
            client: None,
            batch: false
        })
    );
    let join = map(vec![
        ("type", Value::from("join_pool")),
        ("id", Value::from(8)),
        (
            "variant",
            Value::Map(vec![
                ("number".into(), 5.into()),
                ("range".into(), 2.into()),
                ("distance".into(), 3.into()),
            ]),
        ),
        ("time_control", Value::from("rapid")),
    ]);
    assert!(matches!(
        decode_client(&join),
        Ok(ClientMsg::JoinPool { rated: true, .. })
    ));
}
