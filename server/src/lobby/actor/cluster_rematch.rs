//! Rematches in cluster mode: the node that ran the game handles its offers, whichever
//! node they are made on (`bus/redis/rematch.rs` sends them there), and finds an opponent
//! connected to another node by name, as a challenge does.

use elementals_protocol::messages::GameId;

use super::cluster::unreachable_redis;
use super::offers::opponent_offline;
use super::{Lobby, Result};
use crate::bus::ReplyTo;
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
        let opponent = found.ok_or_else(opponent_offline)?;
        self.rematch(member, game_id, seat, &now, opponent)
    }
}
