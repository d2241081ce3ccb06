//! Every message of the protocol, in both directions.
//!
//! Each message is a MessagePack map with string keys and a `type` field naming it
//! (serde's internally tagged enums, encoded with `rmp_serde::to_vec_named`). Requests
//! from a client carry an `id` that the direct reply (`ok`, `error` or a typed reply)
//! echoes. Game events carry the game's `seq` number, counted from 1 per game, the same
//! for players and spectators, so a client that missed some can ask for a snapshot.
//!
//! - `client_msg`: [`ClientMsg`].
//! - `server_msg`: [`ServerMsg`] and the [`Limits`] of `welcome`.
//! - `snapshot`: [`GameSnapshot`] and the parts of a game in it.
//! - `lobby`: accounts, live games, seeks and challenges as listed.
//! - `game_id`, `seat_pair`: [`GameId`] and [`SeatPair`].

mod client_msg;
mod game_id;
mod lobby;
mod seat_pair;
mod server_msg;
mod snapshot;

pub use client_msg::ClientMsg;
pub use game_id::GameId;
pub use lobby::{Account, Challenge, LiveGame, MyGame, Owed, OwedAction, PoolCount, Seek};
pub use seat_pair::SeatPair;
pub use server_msg::{Limits, ServerMsg};
pub use snapshot::{
    Clocks, EndReason, GameInfo, GameResult, GameSnapshot, Phase, PlayerInfo, RoundRecord,
};

/// A request id chosen by the client, echoed in the reply.
pub type RequestId = u32;
