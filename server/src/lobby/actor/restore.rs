//! `LobbyCmd::Restore`: a node says which of its connections are open and what they have
//! open in the lobby. Sent to a lobby that has just started (whose state is empty) and
//! after the node was cut off from the lobby's (which may have missed its `Gone`s, or
//! taken its connections for gone). Entries of the node's closed connections go; what the
//! lobby lacks is taken again under the same ids, the pool's wait starting over. Nothing
//! is sent to the clients: for them nothing has changed. What no longer holds is left out:
//! a player seated since or queued already, a seek or challenge here already; a
//! challenged player no longer online (the challenger hears `challenge_declined`).

use std::collections::HashSet;

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::TimeControl;

use super::{Lobby, OpenChallenge, OpenSeek, PoolKey};
use crate::bus::redis::node_of;
use crate::bus::ConnId;
use crate::lobby::{Holding, Member};
use crate::record::AccountId;

impl Lobby {
    pub(super) async fn restore(&mut self, node: u16, open: Vec<ConnId>, holdings: Vec<Holding>) {
        let open: HashSet<ConnId> = open.into_iter().collect();
        let closed = |conn: ConnId| node_of(conn) == node && !open.contains(&conn);
        let gone: Vec<(AccountId, ConnId)> = self
            .queued
            .values()
            .map(|(_, m)| m)
            .chain(self.seeks.values().map(|s| &s.member))
            .chain(self.challenges.values().map(|c| &c.from))
            .filter(|m| closed(m.conn_id))
            .map(|m| (m.account, m.conn_id))
            .collect();
        for (account, conn) in gone {
            self.gone(account, conn);
        }
        for holding in holdings {
            self.take_again(holding).await;
        }
    }

    /// Takes `holding` again, as far as the lobby lacks it and it still holds.
    async fn take_again(&mut self, holding: Holding) {
        let Holding {
            member,
            pool,
            seeks,
            challenges,
        } = holding;
        let ready =
            |lobby: &Self, tc: &TimeControl| lobby.ready_for_new_game(member.account, tc).is_ok();
        if let Some((variant, preset, rated)) = pool {
            let key = PoolKey {
                variant,
                preset,
                rated,
            };
            let queued = self.queued.contains_key(&member.account);
            if !queued && !self.has_open_seek(member.account) {
                if let (Ok(tc), Ok(())) = (TimeControl::preset(&key.preset), variant.validate()) {
                    if ready(self, &tc) {
                        self.enter_pool(member.clone(), key, tc);
                    }
                }
            }
        }
        for seek in seeks {
            let taken = self.seeks.contains_key(&seek.seek_id);
            if taken
                || self.queued.contains_key(&member.account)
                || !ready(self, &seek.time_control)
            {
                continue;
            }
            self.touch(&member);
            let member = member.clone();
            self.seeks.insert(seek.seek_id, OpenSeek { seek, member });
        }
        for challenge in challenges {
            if ready(self, &challenge.time_control) {
                self.challenge_again(&member, challenge).await;
            }
        }
    }

    async fn challenge_again(
        &mut self,
        member: &Member,
        challenge: elementals_protocol::messages::Challenge,
    ) {
        let id = challenge.challenge_id;
        if self.challenges.contains_key(&id) {
            return;
        }
        let Some((to, to_conn, _)) = self.services.registry.find_online(&challenge.to).await else {
            let declined = ServerMsg::ChallengeDeclined { challenge_id: id };
            let _ = self.bus.send_msg(member.conn_id, &declined);
            return;
        };
        self.touch(member);
        let from = member.clone();
        self.challenges.insert(
            id,
            OpenChallenge {
                challenge,
                from,
                to,
                to_conn,
            },
        );
    }
}
