//! Checks a frame against the protocol's schema ([`crate::schema::messages`]): the one hook
//! the tests' clients run on every frame they send and every frame a server sends them, so
//! that the schema third-party clients build on is the protocol the server speaks.
//!
//! The frame's MessagePack is read as it is (`rmpv`), not through the Rust types, and
//! rendered as JSON: a bin becomes a base64 string that only a schema marked
//! `"x-msgpack": "bin"` accepts, and such a schema accepts nothing else. The check is
//! stricter than the published schema in one way: an object may hold no field its schema
//! does not name (the published server messages stay open so that clients ignore new
//! fields), so a field the types send and the schema misses fails too.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use base64::Engine as _;
use jsonschema::{Keyword, ValidationError, Validator};
use rmpv::Value as Pack;
use serde_json::{json, Map, Number, Value};

use crate::schema;

/// Why a frame does not conform: the frame as JSON and what the schema found.
#[derive(Debug, Clone, PartialEq)]
pub struct Nonconforming {
    pub direction: &'static str,
    /// The frame rendered as JSON, or `None` if it is not MessagePack JSON can render.
    pub frame: Option<Value>,
    pub errors: Vec<String>,
}

impl fmt::Display for Nonconforming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {} frame does not conform to the schema",
            self.direction
        )?;
        if let Some(frame) = &self.frame {
            write!(f, "\n  frame: {frame}")?;
        }
        for error in &self.errors {
            write!(f, "\n  - {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Nonconforming {}

/// Checks a frame a client sends.
pub fn client_frame(bytes: &[u8]) -> Result<(), Nonconforming> {
    static CLIENT: OnceLock<Validator> = OnceLock::new();
    check(
        CLIENT.get_or_init(|| validator("ClientMsg")),
        "client",
        bytes,
    )
}

/// Checks a frame a server sends.
pub fn server_frame(bytes: &[u8]) -> Result<(), Nonconforming> {
    static SERVER: OnceLock<Validator> = OnceLock::new();
    check(
        SERVER.get_or_init(|| validator("ServerMsg")),
        "server",
        bytes,
    )
}

/// Checks a frame a server sends to a client that asked for batches in `hello`: one
/// message, or a batch (an array of two or more, [`schema::BATCH`]).
pub fn batching_server_frame(bytes: &[u8]) -> Result<(), Nonconforming> {
    static BATCH: OnceLock<Validator> = OnceLock::new();
    match bytes.first() {
        Some(0x90..=0x9f | 0xdc | 0xdd) => check(
            BATCH.get_or_init(|| validator(schema::BATCH)),
            "server",
            bytes,
        ),
        _ => server_frame(bytes),
    }
}

/// [`client_frame`], failing the test that sent a frame that does not conform.
#[track_caller]
pub fn assert_client_frame(bytes: &[u8]) {
    if let Err(nonconforming) = client_frame(bytes) {
        panic!("{nonconforming}");
    }
}

/// [`server_frame`], failing the test that received a frame that does not conform.
#[track_caller]
pub fn assert_server_frame(bytes: &[u8]) {
    if let Err(nonconforming) = server_frame(bytes) {
        panic!("{nonconforming}");
    }
}

/// [`batching_server_frame`], failing the test that received a frame that does not conform.
#[track_caller]
pub fn assert_batching_server_frame(bytes: &[u8]) {
    if let Err(nonconforming) = batching_server_frame(bytes) {
        panic!("{nonconforming}");
    }
}

fn check(
    validator: &Validator,
    direction: &'static str,
    bytes: &[u8],
) -> Result<(), Nonconforming> {
    let refuse = |frame: Option<Value>, errors: Vec<String>| Nonconforming {
        direction,
        frame,
        errors,
    };
    let pack = read(bytes).map_err(|e| refuse(None, vec![e]))?;
    let frame = to_json(&pack).map_err(|e| refuse(None, vec![e]))?;
    let mut bins = HashMap::new();
    mark_bins(&pack, &frame, &mut bins);
    BINS.with(|cell| *cell.borrow_mut() = bins);
    let mut errors: Vec<String> = validator
        .iter_errors(&frame)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    let bins = BINS.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
    if errors.is_empty() && bins.values().any(|claimed| !claimed) {
        errors.push("a bin where the schema has no bytes".into());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(refuse(Some(frame), errors))
    }
}

/// One MessagePack value, and nothing after it.
fn read(bytes: &[u8]) -> Result<Pack, String> {
    let mut rest = bytes;
    let pack = rmpv::decode::read_value(&mut rest).map_err(|e| format!("not MessagePack: {e}"))?;
    if !rest.is_empty() {
        return Err(format!("{} bytes after the message", rest.len()));
    }
    Ok(pack)
}

fn to_json(pack: &Pack) -> Result<Value, String> {
    Ok(match pack {
        Pack::Nil => Value::Null,
        Pack::Boolean(b) => Value::Bool(*b),
        Pack::Integer(i) => match (i.as_u64(), i.as_i64()) {
            (Some(u), _) => Value::from(u),
            (None, Some(i)) => Value::from(i),
            (None, None) => unreachable!("a MessagePack int fits u64 or i64"),
        },
        Pack::F32(f) => finite(f64::from(*f))?,
        Pack::F64(f) => finite(*f)?,
        Pack::String(s) => Value::String(s.as_str().ok_or("a str that is not UTF-8")?.to_owned()),
        Pack::Binary(bytes) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        Pack::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Pack::Map(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                let key = key.as_str().ok_or("a map key that is not a str")?;
                if map.insert(key.to_owned(), to_json(value)?).is_some() {
                    return Err(format!("the key `{key}` twice in one map"));
                }
            }
            Value::Object(map)
        }
        Pack::Ext(kind, _) => return Err(format!("an ext value (type {kind})")),
    })
}

fn finite(f: f64) -> Result<Value, String> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("the float {f}, which JSON cannot hold"))
}

/// Where in the JSON rendering the frame had bins: the nodes' addresses, none yet claimed
/// by a bin's schema. The rendering is not changed while it is checked, so they hold.
fn mark_bins(pack: &Pack, json: &Value, bins: &mut HashMap<usize, bool>) {
    match (pack, json) {
        (Pack::Binary(_), _) => {
            bins.insert(address(json), false);
        }
        (Pack::Array(items), Value::Array(rendered)) => {
            for (item, json) in items.iter().zip(rendered) {
                mark_bins(item, json, bins);
            }
        }
        (Pack::Map(entries), Value::Object(rendered)) => {
            for (key, value) in entries {
                if let Some(json) = key.as_str().and_then(|key| rendered.get(key)) {
                    mark_bins(value, json, bins);
                }
            }
        }
        _ => {}
    }
}

fn address(node: &Value) -> usize {
    node as *const Value as usize
}

thread_local! {
    /// The bins of the frame being checked on this thread (checks are synchronous).
    static BINS: RefCell<HashMap<usize, bool>> = RefCell::new(HashMap::new());
}

/// `"x-msgpack": "bin"`: the value was a bin in the frame.
struct BinOnly;

impl<'i> Keyword<'i> for BinOnly {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom(
                "bytes must be a MessagePack bin, not a str or anything else",
            ))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        BINS.with(|cell| match cell.borrow_mut().get_mut(&address(instance)) {
            Some(claimed) => {
                *claimed = true;
                true
            }
            None => false,
        })
    }
}

/// The validator of one direction's union, with every object closed.
fn validator(union: &str) -> Validator {
    let mut document = schema::messages();
    close_objects(&mut document["$defs"]);
    document["anyOf"] = json!([{"$ref": format!("#/$defs/{union}")}]);
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .with_keyword("x-msgpack", |_, value: &Value, _| {
            if value == "bin" {
                Ok(Box::new(BinOnly))
            } else {
                Err(ValidationError::custom(format!(
                    "x-msgpack names no type this check knows: {value}"
                )))
            }
        })
        .build(&document)
        .expect("the protocol's schema compiles")
}

/// Every object schema that names its properties admits no others.
fn close_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{ClientMsg, GameId, ServerMsg};
    use crate::wire;

    fn game_id() -> GameId {
        "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab".parse().unwrap()
    }

    #[test]
    fn a_commit_conforms_and_its_commitment_as_hex_text_does_not() {
        let commit = ClientMsg::Commit {
            id: 7,
            game_id: game_id(),
            round: 1,
            commitment: vec![0xab; 32],
            pick: None,
            nonce: None,
        };
        client_frame(&wire::encode(&commit)).unwrap();
        let as_text = rmp_serde::to_vec_named(&json!({
            "type": "commit", "id": 7, "game_id": game_id().to_string(), "round": 1,
            "commitment": "ab".repeat(32),
        }))
        .unwrap();
        let refused = client_frame(&as_text).unwrap_err();
        assert!(
            refused.errors.iter().any(|e| e.contains("commitment")),
            "{refused}"
        );
    }

    #[test]
    fn a_bin_where_a_str_belongs_does_not_conform() {
        #[derive(serde::Serialize)]
        struct Resume<'a> {
            #[serde(rename = "type")]
            kind: &'a str,
            id: u32,
            #[serde(with = "serde_bytes")]
            token: &'a [u8],
        }
        let bytes = rmp_serde::to_vec_named(&Resume {
            kind: "resume",
            id: 1,
            token: b"abc",
        })
        .unwrap();
        assert!(client_frame(&bytes).is_err());
    }

    #[test]
    fn unknown_fields_types_and_missing_fields_do_not_conform() {
        let frame = |value: Value| rmp_serde::to_vec_named(&value).unwrap();
        assert!(client_frame(&frame(json!({"type": "ping", "id": 1}))).is_ok());
        assert!(client_frame(&frame(json!({"type": "ping", "id": 1, "x": 2}))).is_err());
        assert!(client_frame(&frame(json!({"type": "pong", "id": 1}))).is_err());
        assert!(client_frame(&frame(json!({"type": "ping"}))).is_err());
        assert!(client_frame(&frame(json!({"type": "ping", "id": -1}))).is_err());
        assert!(server_frame(&frame(json!({"type": "pong", "id": 1}))).is_ok());
        // The check closes what the published schema leaves open.
        assert!(server_frame(&frame(json!({"type": "pong", "id": 1, "x": 2}))).is_err());
        assert!(client_frame(&[0x81]).is_err(), "truncated");
    }

    #[test]
    fn a_batch_conforms_only_where_batches_were_asked_for_and_only_of_two_or_more() {
        let batch = |msgs: &[ServerMsg]| {
            let mut bytes = vec![0x90 | msgs.len() as u8];
            for msg in msgs {
                bytes.extend_from_slice(&wire::encode(msg));
            }
            bytes
        };
        let (ok, pong) = (ServerMsg::Ok { id: 4 }, ServerMsg::Pong { id: 5 });
        let two = batch(&[ok.clone(), pong.clone()]);
        batching_server_frame(&two).unwrap();
        batching_server_frame(&wire::encode(&ok)).unwrap();
        assert!(server_frame(&two).is_err(), "not without `batch: true`");
        assert!(batching_server_frame(&batch(&[ok])).is_err(), "one alone");
        assert!(batching_server_frame(&batch(&[])).is_err(), "none");
        let ping = rmp_serde::to_vec_named(&json!({"type": "ping", "id": 1})).unwrap();
        let mut with_a_client_message = vec![0x92];
        with_a_client_message.extend_from_slice(&wire::encode(&pong));
        with_a_client_message.extend_from_slice(&ping);
        assert!(
            batching_server_frame(&with_a_client_message).is_err(),
            "a client message in it"
        );
    }

    #[test]
    fn every_server_message_the_types_write_conforms() {
        let error = ServerMsg::error(None, crate::ErrorCode::BadMessage, "no");
        server_frame(&wire::encode(&error)).unwrap();
        let ok = ServerMsg::Ok { id: 3 };
        server_frame(&wire::encode(&ok)).unwrap();
    }
}
