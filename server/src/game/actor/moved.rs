//! Cluster mode: a game whose lease another node has claimed stops here. Its log refused
//! a step (`DbError::LeaseLost`), so nothing after the last step it acknowledged was
//! written or published; the node holding the lease replays the log and runs the game from
//! there. Here the game leaves the registry, records nothing, and its players are told
//! (`notice {code: "game_moved"}`, then close 1012): they reconnect and `resume`, like
//! after a restart. Spectators get the notice on the game's topic and watch again.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::rules::Seat;
use elementals_protocol::wire;

use super::supervisor::lock;
use super::{spectators_left, Actor};
use crate::bus;
use crate::msg::close;

impl Actor {
    pub(super) async fn move_away(self) {
        let game_id = self.game_id;
        tracing::warn!(%game_id, "the game's lease is another node's: the game stops here");
        let services = &self.services;
        services
            .registry
            .remove_game(game_id, self.finished.players);
        services.metrics.live_games.fetch_sub(1, Relaxed);
        services.metrics.games_moved.fetch_add(1, Relaxed);
        let notice = ServerMsg::Notice {
            code: "game_moved".into(),
            message: "the game goes on on another server; reconnect and resume with your token"
                .into(),
        };
        let frame = Bytes::from(wire::encode(&notice));
        let frames = std::slice::from_ref(&frame);
        {
            let mut shared = lock(&self.shared);
            // Nothing is left for the supervisor to end.
            shared.finished = true;
            shared.players.send(&*self.bus, frames, None);
            for seat in [Seat::One, Seat::Two] {
                if let Some(conn) = shared.players.conn(seat) {
                    self.bus.close(conn, close::RESTART, "game moved");
                }
            }
        }
        self.bus.publish(game_id, frames);
        bus::deliver_all(&*self.bus, game_id, || frame.clone());
        spectators_left(services, self.bus.close_topic(game_id));
        services.db.forget_moved(game_id).await;
    }
}
