//! Building raw frames and reading them back, and the asserts on refusals.

use std::collections::BTreeSet;

use elementals_protocol::wire::{decode_client, DecodeError};
use elementals_protocol::ErrorCode;
use rmpv::Value;

/// Every variant name serde knows for `T`, read from the "expected one of" list of the
/// error for an unknown `type`: the protocol's own list, not one kept by hand.
pub(crate) fn declared_types<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String>
{
    let frame = map(vec![("type", Value::from("no_such_type"))]);
    let err = rmp_serde::from_slice::<T>(&frame).unwrap_err().to_string();
    let list = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected error text: {err}"));
    list.split(", ")
        .map(|name| name.trim_matches('`').to_owned())
        .collect()
}

/// Encode a map with string keys from (key, value) pairs, in order.
pub(crate) fn map(entries: Vec<(&str, Value)>) -> Vec<u8> {
    let value = Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    );
    bytes_of(&value)
}

pub(crate) fn bytes_of(value: &Value) -> Vec<u8> {
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, value).unwrap();
    bytes
}

pub(crate) fn value_of(bytes: &[u8]) -> Value {
    let mut rd = bytes;
    let value = rmpv::decode::read_value(&mut rd).unwrap();
    assert!(rd.is_empty(), "one value per frame");
    value
}

/// The entries of a map value, panicking on anything else.
pub(crate) fn entries(value: &Value) -> &[(Value, Value)] {
    match value {
        Value::Map(entries) => entries,
        other => panic!("expected a map, got {other}"),
    }
}

pub(crate) fn get<'a>(value: &'a Value, key: &str) -> &'a Value {
    entries(value)
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no key {key} in {value}"))
}

/// Every key of every map inside `value`, checking each is a string.
pub(crate) fn collect_keys(value: &Value, keys: &mut BTreeSet<String>) {
    match value {
        Value::Map(entries) => {
            for (k, v) in entries {
                let key = k.as_str().unwrap_or_else(|| panic!("non-string key {k}"));
                keys.insert(key.to_owned());
                collect_keys(v, keys);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, keys)),
        _ => {}
    }
}

/// CamelCase to snake_case, for comparing a variant's Debug name with its `type`.
pub(crate) fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn variant_name(debug: &str) -> String {
    let end = debug
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(debug.len());
    snake_case(&debug[..end])
}

/// A client frame built from a valid `ping` with one field replaced or added.
pub(crate) fn ping_with(key: &str, value: Value) -> Vec<u8> {
    map(vec![("type", Value::from("ping")), (key, value)])
}

pub(crate) fn assert_refused(bytes: &[u8], expected: DecodeError) {
    let err = decode_client(bytes).unwrap_err();
    assert_eq!(err, expected, "frame {}", hex::encode(bytes));
}

pub(crate) fn assert_bad_message(bytes: &[u8]) -> DecodeError {
    let err = decode_client(bytes).unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadMessage, "{err:?}");
    err
}
