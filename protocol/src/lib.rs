//! Elementals protocol: the plain data, pure functions and wire format shared by the
//! server and every client.
//!
//! Nothing here does I/O or depends on an async runtime, so any client (a bot, the load
//! test, a port to another language reading PROTOCOL.md) can use it as is.
//!
//! - [`rules`]: variants, who beats whom, the board and a round.
//! - [`rating`]: the rating formula.
//! - [`commitment`]: the commit–reveal hash.
//! - [`time_control`]: clocks' settings and the presets.
//! - [`messages`]: every message in both directions.
//! - [`error`]: stable machine-readable error codes.
//! - [`wire`]: bounded MessagePack encoding and decoding.
//! - [`strategy`]: how a bot picks (random, greedy, minimax), for the client library's bots
//!   and the server's computer opponents alike.
//! - [`record`]: a finished game's record (`GameRecord`), as stored, served and signed.
//! - [`transcript`]: the envelope of a finished game's signed transcript.
//! - [`schema`]: the messages' JSON Schema and the AsyncAPI document, from the types.
//! - `conformance` (feature `conformance`, for tests): checks a frame against the schema.

#![forbid(unsafe_code)]

pub mod commitment;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod error;
pub mod messages;
mod names;
pub mod rating;
pub mod record;
pub mod rules;
pub mod schema;
pub mod strategy;
pub mod time_control;
pub mod transcript;
pub mod wire;

pub use error::ErrorCode;
pub use messages::{ClientMsg, ServerMsg};
pub use rules::{Board, Element, Outcome, Seat, Variant};
pub use time_control::TimeControl;

/// The protocol version this crate speaks. A client states it in `hello`.
pub const PROTOCOL_VERSION: u32 = 1;
