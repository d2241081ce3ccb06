//! The Elementals client library: a typed async client for the WebSocket protocol, a
//! mirror of a game's state, strategies, and a driver that plays whole games with them.
//! The `elementals` binary (bots, a terminal player, a spectator view, the leaderboard)
//! and the load test are built on it.
//!
//! - [`Connection`]: the socket, its reader and writer tasks, replies routed to requests
//!   by id, everything else on a bounded events channel.
//! - [`Client`]: one typed method per request (`register`, `join_pool`, `commit`, ...).
//! - [`GameState`]: applies a game's numbered events and notices gaps.
//! - [`Strategy`] and [`Random`], [`Greedy`], [`Minimax`], [`Sequence`]: how to pick.
//! - [`Player`]: commit–reveal every round until `game_over` and the rating update, in one
//!   game or in several at once on one connection (correspondence games beside a live one).
//! - [`NonceStore`]: unrevealed commits kept on disk, a file a game, so a restarted player
//!   still reveals in each.
//! - [`render`]: boards, clocks and results as text.
//! - [`http`]: the JSON API (the leaderboard) over HTTP or HTTPS.
//! - [`transcript`]: checking a finished game's signed transcript offline.
//! - [`ServerUrl`]: one address gives both the WebSocket and the HTTP endpoint, plain or TLS.
//! - [`TlsRoots`]: what `wss://` and `https://` trust: webpki's roots and any added.
//!
//! The library never panics on what the server sends: a frame it cannot decode is
//! logged and skipped, and a refusal is a [`ClientError::Server`] with its code.

#![forbid(unsafe_code)]

mod client;
mod connection;
mod error;
pub mod http;
mod nonces;
mod player;
pub mod render;
mod state;
mod tls;
pub mod transcript;
mod url;

pub use client::{Client, Queued, Session};
pub use connection::{ConnectOptions, Connection, ServerInfo, DEFAULT_EVENTS_CAPACITY};
pub use elementals_protocol::strategy::minimax::{solve as solve_matrix_game, Solution};
pub use elementals_protocol::strategy::{
    by_name as strategy_by_name, square_value, GameView, Greedy, Minimax, Random, Sequence,
    Strategy,
};
pub use error::ClientError;
pub use nonces::NonceStore;
pub use player::{
    apply_or_resync, play_game, wait_for_game_start, wait_for_rating, GameStart, GameSummary,
    Played, Player, PlayerOptions, SealedPick,
};
pub use state::{message_game, Applied, GameState};
pub use tls::TlsRoots;
pub use url::ServerUrl;

/// The protocol crate, re-exported so users need not depend on it separately.
pub use elementals_protocol as protocol;
