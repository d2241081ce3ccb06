//! The Elementals game server as a library: `main.rs` only parses options and calls
//! [`run`], so tests start the real server on `127.0.0.1:0`.

pub mod accept;
pub mod admission;
pub mod alarms;
pub mod alloc;
pub mod api;
pub mod api_docs;
#[cfg(test)]
mod architecture_md;
pub mod auth;
pub mod bots;
pub mod bus;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod db;
pub mod game;
pub mod http;
#[cfg(test)]
mod layers;
pub mod limits;
pub mod lobby;
pub mod metrics;
pub mod msg;
pub mod outbox;
pub mod peers;
pub mod pruning;
pub mod record;
pub mod registry;
#[cfg(test)]
mod security_md;
pub mod server;
pub mod session;
pub mod state;
pub mod transcript;
pub mod web;
pub mod ws;

pub use config::Config;
pub use server::{run, ServerError};
