//! The wire format as a contract: every message round-trips, every frame is a map with
//! string keys and a snake_case `type`, malformed input is refused with the right code and
//! never panics, and PROTOCOL.md documents every message, field and error code.
//!
//! - `examples`: one example of every message, and each message's `type`.
//! - `conforms`: every example conforms to the published schema.
//! - `helpers`: building and reading raw frames.
//! - `round_trip`: every message round-trips; the shape and encoding of frames.
//! - `structure`: what the structure walk refuses (truncation, lengths, depth, size, keys).
//! - `fields`: what the typed decoding refuses, and the request id read past a refusal.
//! - `panics`: no input panics (proptest).
//! - `protocol_md`: PROTOCOL.md documents every message, field, code and limit.
//! - `replies`: the request id each reply answers (`ServerMsg::reply_id`).

mod conforms;
mod examples;
mod fields;
mod helpers;
mod panics;
mod protocol_md;
mod replies;
mod round_trip;
mod structure;
