//! Rematches in cluster mode: the node that ran the game handles its offers, whichever
//! node they are made on (`bus/redis/rematch.rs` sends them there), and finds an opponent
//! connected to another node by name, as a challenge does. A rematch that starts takes
//! both players as a pairing does (`shared/seat.rs`).

use elementals_protocol::messages::GameId;

use super::cluster::{seating_elsewhere, unreachable_redis};
use super::offers::{opponent_in_game, opponent_offline};
use super::start::new_game_id;
use super::{Lobby, Result};
use crate::bus::ReplyTo;
use crate::lobby::shared::Taken;
use crate::lobby::Member;

impl Lobby {
    /// `offer_rematch` in cluster mode: handled here if this node ran the game, else sent
    /// to the node that did, which answers it.
    pub(super) async fn offer_rematch_shared(
        &mut self,
        member: Member,
        game_id: GameId,
        reply: ReplyTo,
    ) {
        let registry = self.services.registry.clone();
        if let Some(node) = registry.finished_elsewhere(&game_id) {
            registry.forward_rematch(node, game_id, member, reply);
            return;
        }
        let done = self.rematch_shared(member, game_id).await;
        self.answer_done(reply, done);
    }

    async fn rematch_shared(&mut self, member: Member, game_id: GameId) -> Result<()> {
        let (seat, now) = self.note_rematch_offer(&member, game_id)?;
        let opponent = *now.players.get(seat.other());
        let info = now.infos.get(seat.other()).clone();
        let found = match self.services.registry.online(opponent) {
            Some(user) => Some((user.conn_id, user.info)),
            None => self
                .shared_pools()
                .find_online(&info.name)
                .await
                .map_err(|e| unreachable_redis(&e))?
                .filter(|(account, _, _)| *account == opponent)
                .map(|(_, conn, _)| (conn, info)),
        };
        let found = found.ok_or_else(opponent_offline)?;
        if !*now.rematch_offers.get(seat.other()) {
            // An offer only: `rematch` tells the opponent.
            return self.rematch(member, (game_id, new_game_id()), seat, &now, found);
        }
        if self.services.registry.is_seated(opponent) {
            return Err(opponent_in_game());
        }
        // Both marked seating and out of every pool in one step, as a pairing takes its
        // two: no pool on any node pairs either of them as the rematch seats them, nor has
        // just paired either.
        let taken = self
            .shared_pools()
            .seat_rematch(member.account, opponent, game_id)
            .await
            .map_err(|e| unreachable_redis(&e))?;
        let rematch = match taken {
            Taken::Taken(rematch) => rematch,
            Taken::AcceptorSeating(_) => return Err(seating_elsewhere()),
            Taken::MakerSeating | Taken::NotOpen => return Err(opponent_in_game()),
        };
        self.rematch(member, (game_id, rematch), seat, &now, found)
    }
}
