//! No input panics the decoder, and a decoded frame decodes the same way again.

use std::collections::BTreeSet;

use elementals_protocol::wire::{self, decode_client, decode_server};
use elementals_protocol::{ClientMsg, ErrorCode};
use proptest::prelude::*;
use rmpv::Value;

use crate::examples::client_examples;
use crate::helpers::{bytes_of, collect_keys, declared_types, value_of};

/// Any MessagePack value, a few levels deep.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u64..100).prop_map(Value::from),
        any::<f64>().prop_map(Value::F64),
        any::<f32>().prop_map(Value::F32),
        "[a-z_]{0,12}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        (any::<i8>(), proptest::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(t, d)| Value::Ext(t, d)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-z_]{1,16}", inner), 0..6).prop_map(|kv| {
                Value::Map(kv.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
            }),
        ]
    })
}

/// Every field name any client message uses, to aim random values at real fields.
fn client_field_names() -> Vec<String> {
    let mut keys = BTreeSet::new();
    for msg in client_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    keys.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_client(&bytes);
        let _ = decode_server(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_map_marker_never_panic(
        marker in prop_oneof![0x80u8..=0x8f, Just(0xde), Just(0xdf)],
        rest in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = vec![marker];
        bytes.extend(rest);
        let _ = decode_client(&bytes);
        let _ = decode_server(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic_and_decode_stably(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let examples = client_examples();
        let mut bytes = wire::encode(&examples[pick.index(examples.len())]);
        for (at, byte, kind) in edits {
            let i = at.index(bytes.len() + 1);
            match kind {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.push(byte),
            }
        }
        if let Ok(msg) = decode_client(&bytes) {
            // Whatever was accepted re-encodes to something accepted as the same message.
            prop_assert_eq!(decode_client(&wire::encode(&msg)), Ok(msg));
        }
    }

    #[test]
    fn random_values_in_real_fields_never_panic(
        ty in prop::sample::select(declared_types::<ClientMsg>().into_iter().collect::<Vec<_>>()),
        fields in proptest::collection::vec(
            (prop::sample::select(client_field_names()), any_value()), 0..6),
    ) {
        let mut entries = vec![(Value::from("type"), Value::from(ty))];
        entries.extend(fields.into_iter().map(|(k, v)| (Value::from(k), v)));
        let bytes = bytes_of(&Value::Map(entries));
        match decode_client(&bytes) {
            Ok(msg) => prop_assert_eq!(decode_client(&wire::encode(&msg)), Ok(msg)),
            Err(err) => prop_assert!(matches!(
                err.code(),
                ErrorCode::BadMessage | ErrorCode::UnknownField | ErrorCode::MessageTooLarge
            )),
        }
    }
}
