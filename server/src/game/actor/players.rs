//! The players' side of a game's fan-out: their connections, addressed by identity on the
//! bus (`bus::Bus`); the game holds no socket and no outbox. Spectators are the game's
//! topic's (`Bus::publish`).
//!
//! Every frame is encoded once by the caller, and each batch framed once (`Framed`) for
//! both players (the reply to a move goes to its player in the same item). Nothing here
//! waits: the bus sends each player's frames to its connection's outbox, and a
//! player whose queue is full has its connection killed (it gets a snapshot when it comes
//! back).

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::Seat;

use crate::bus::{Bus, ConnId};
use crate::outbox::Framed;

/// A reply to a player's move, to go to its seat with the events the move caused.
#[derive(Debug)]
pub(in crate::game) struct Answer {
    pub seat: Seat,
    /// The connection that made the move: the reply goes only if it is still the seat's.
    pub conn_id: ConnId,
    pub frame: Bytes,
}

/// The seats' connections.
#[derive(Debug, Default)]
pub(in crate::game) struct Players {
    conns: SeatPair<Option<ConnId>>,
}

impl Players {
    /// Installs (or, with `None`, removes) a seat's connection.
    pub fn set(&mut self, seat: Seat, conn: Option<ConnId>) {
        *self.conns.get_mut(seat) = conn;
    }

    pub fn conn(&self, seat: Seat) -> Option<ConnId> {
        *self.conns.get(seat)
    }

    /// Queues `frames` to both players now, framed once. `answer`'s reply goes first, to
    /// its seat alone, if that seat's connection is the one it answers; returns whether it
    /// went.
    pub fn send(&self, bus: &dyn Bus, frames: &[Bytes], answer: Option<Answer>) -> bool {
        let answer = answer.filter(|a| self.conn(a.seat) == Some(a.conn_id));
        if self.conns.one.is_none() && self.conns.two.is_none() {
            return false;
        }
        let all = answer.iter().map(|a| a.frame.clone());
        let framed = Arc::new(Framed::new(all.chain(frames.iter().cloned()).collect()));
        for seat in [Seat::One, Seat::Two] {
            if let Some(player) = self.conn(seat) {
                let from = match &answer {
                    Some(a) if a.seat != seat => 1,
                    _ => 0,
                };
                bus.send_framed_or_kill(player, &framed, from);
            }
        }
        answer.is_some()
    }
}
