//! The wire format: bounded, total encoding and decoding of MessagePack frames.
//!
//! Decoding untrusted bytes happens in two steps. First [`check_structure`] walks the
//! bytes without allocating: it enforces the size cap and the nesting-depth cap, checks
//! every declared length against the bytes actually present (so a claimed 4 GiB string
//! in a 20-byte frame is refused before anything is allocated), requires the top level
//! to be a map, every map key to be a string and the top-level `type` to be a string,
//! and refuses trailing bytes. Only then does serde decode the frame.

use serde::Serialize;

use crate::error::ErrorCode;
use crate::messages::{ClientMsg, RequestId, ServerMsg};
use crate::names::Message;

mod walk;

pub use walk::check_structure;
use walk::{array_elements, top_level_keys, walk};

/// Largest frame a server accepts from a client.
pub const MAX_CLIENT_MESSAGE_BYTES: usize = 16 * 1024;
/// Largest frame a client should accept from a server (snapshots of long games).
pub const MAX_SERVER_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting of maps and arrays accepted in any frame.
pub const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("message of {size} bytes exceeds the limit of {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("truncated MessagePack")]
    Truncated,
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
    #[error("byte 0x{0:02x} is not valid MessagePack here")]
    InvalidMarker(u8),
    #[error("a message must be a MessagePack map with a string `type` key")]
    NotAMap,
    #[error("unknown message type: {0}")]
    UnknownType(String),
    #[error("unknown field: {0}")]
    UnknownField(String),
    #[error("invalid message: {0}")]
    Invalid(String),
}

impl DecodeError {
    /// The error code a server answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::TooLarge { .. } => ErrorCode::MessageTooLarge,
            DecodeError::UnknownType(_) => ErrorCode::UnknownType,
            DecodeError::UnknownField(_) => ErrorCode::UnknownField,
            _ => ErrorCode::BadMessage,
        }
    }
}

/// Encode any message as a MessagePack map with string keys.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // Room for the commonest messages (a round's events are 60–200 bytes), so that they
    // are written without growing the buffer.
    let mut bytes = Vec::with_capacity(ENCODE_CAPACITY);
    // Our message types contain nothing serde could fail on (no maps with non-string keys,
    // no unsized sequences), so failure here is a bug in this crate, not bad input.
    rmp_serde::encode::write_named(&mut bytes, msg).expect("protocol messages always encode");
    bytes
}

/// The buffer `encode` starts with.
const ENCODE_CAPACITY: usize = 256;

pub fn decode_client(bytes: &[u8]) -> Result<ClientMsg, DecodeError> {
    decode_message(bytes, MAX_CLIENT_MESSAGE_BYTES).map_err(|refused| refused.error)
}

pub fn decode_server(bytes: &[u8]) -> Result<ServerMsg, DecodeError> {
    decode_message(bytes, MAX_SERVER_MESSAGE_BYTES).map_err(|refused| refused.error)
}

/// The messages of one server frame: the message it is, or, for a connection that asked
/// for batches in `hello`, each message of the array it holds, in order (PROTOCOL.md,
/// "Batches"). An element that does not decode is that element's error; the others still
/// decode. A frame that is neither a map nor a well-formed array is one error.
pub fn decode_server_frame(bytes: &[u8]) -> Vec<Result<ServerMsg, DecodeError>> {
    match bytes.first() {
        Some(0x90..=0x9f | 0xdc | 0xdd) => {}
        _ => return vec![decode_server(bytes)],
    }
    if bytes.len() > MAX_SERVER_MESSAGE_BYTES {
        return vec![Err(DecodeError::TooLarge {
            size: bytes.len(),
            limit: MAX_SERVER_MESSAGE_BYTES,
        })];
    }
    match array_elements(bytes) {
        Ok(elements) => elements.into_iter().map(decode_server).collect(),
        Err(error) => vec![Err(error)],
    }
}

/// A client frame that is not a valid message: why, and the request id to answer it
/// with, if the frame has one that can be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct Refused {
    /// The frame's top-level `id`, if the frame is a well-formed map (string keys, within
    /// the size and depth caps, nothing after it) holding exactly one `id`, a u32.
    pub id: Option<RequestId>,
    pub error: DecodeError,
}

/// [`decode_client`], telling a refusal's request id where it can be read, so that the
/// `error` answering it reaches the request that is waiting for it.
pub fn decode_request(bytes: &[u8]) -> Result<ClientMsg, Refused> {
    decode_message(bytes, MAX_CLIENT_MESSAGE_BYTES)
}

/// Check the structure, then decode with serde's derive. A refusal is sorted by what the
/// walk found (the `type`, the top-level keys) and the names the derive declares
/// (`names.rs`): serde's errors carry only text past the deserializer's boundary.
fn decode_message<T: Message>(bytes: &[u8], limit: usize) -> Result<T, Refused> {
    let refused = |error| Refused { id: None, error };
    let walked = walk(bytes, limit).map_err(refused)?;
    let id = walked.id.read();
    let refused = |error| Refused { id, error };
    let walked = walked.checked().map_err(refused)?;
    let tag = walked.tag.ok_or(refused(DecodeError::NotAMap))?;
    rmp_serde::from_slice(bytes).map_err(|err| refused(classify::<T>(bytes, tag, err)))
}

/// Why serde refused a frame the walk passed, whose first top-level `type` is `tag`.
fn classify<T: Message>(bytes: &[u8], tag: &[u8], err: rmp_serde::decode::Error) -> DecodeError {
    let names = T::names();
    let Ok(name) = std::str::from_utf8(tag) else {
        return DecodeError::Invalid(err.to_string());
    };
    if !names.has_type(name) {
        return DecodeError::UnknownType(name.to_owned());
    }
    let unknown = top_level_keys(bytes)
        .filter_map(|key| std::str::from_utf8(key).ok())
        .find(|key| names.is_unknown_field(name, key));
    match unknown {
        Some(field) => DecodeError::UnknownField(field.to_owned()),
        None => DecodeError::Invalid(err.to_string()),
    }
}

/// Encode a server message (what a server sends).
pub fn encode_server(msg: &ServerMsg) -> Vec<u8> {
    encode(msg)
}

/// Encode a client message (what a client sends).
pub fn encode_client(msg: &ClientMsg) -> Vec<u8> {
    encode(msg)
}
