//! The Elementals game server as a library: `main.rs` only parses options and calls
//! [`run`], so tests start the real server on `127.0.0.1:0`.

pub mod db;
pub mod game;
pub mod metrics;
pub mod outbox;
pub mod record;
pub mod registry;
