//! Seeks in cluster mode: listed from Redis (every node's), accepted from any node and
//! taken off the list there by one acceptor only; each node keeps its own members' seeks
//! too, and forgets those accepted elsewhere at its next tick.

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::ErrorCode;

use super::cluster::{seating_elsewhere, unreachable_redis};
use super::offers::seek_gone;
use super::Lobby;
use crate::lobby::shared::Taken;
use crate::lobby::{LobbyError, Member};

impl Lobby {
    /// Accepts a seek made on any node: taken off the cluster's list by one acceptor only.
    pub(super) async fn accept_shared_seek(
        &mut self,
        member: Member,
        seek_id: u64,
    ) -> super::Result<()> {
        let shared = self.shared_pools();
        let (seek, maker) = shared
            .get_seek(seek_id)
            .await
            .map_err(|e| unreachable_redis(&e))?
            .ok_or_else(|| LobbyError::new(ErrorCode::UnknownSeek, "no such open seek"))?;
        if maker.account == member.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "you cannot accept your own seek",
            ));
        }
        if seek.rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot accept rated seeks",
            ));
        }
        self.ready_for_new_game(member.account)?;
        let alive = shared
            .node_alive(crate::bus::redis::node_of(maker.conn_id))
            .await
            .map_err(|e| unreachable_redis(&e))?;
        if !alive || !self.maker_free(&maker) {
            // Its maker cannot play it: off the list.
            shared
                .take_seek(seek_id)
                .await
                .map_err(|e| unreachable_redis(&e))?;
            self.seeks.remove(&seek_id);
            return Err(seek_gone());
        }
        // Taken, and both players marked seating, in one step: a pool's pairing on any
        // node takes neither of them now, nor has it just taken either.
        let (acceptor, maker_account) = (member.account, maker.account);
        let taken = self
            .take_unless_held_by_over(|over| {
                shared.accept_seek(seek_id, acceptor, maker_account, over)
            })
            .await?;
        let game = match taken {
            Taken::Taken(game) => {
                self.seeks.remove(&seek_id);
                game
            }
            Taken::NotOpen => {
                self.seeks.remove(&seek_id);
                return Err(seek_gone());
            }
            Taken::MakerSeating => return Err(seek_gone()),
            Taken::AcceptorSeating(_) => return Err(seating_elsewhere()),
        };
        let _ = self
            .bus
            .send_msg(maker.conn_id, &ServerMsg::SeekRemoved { seek_id });
        let (variant, tc) = (seek.variant, seek.time_control);
        self.start_game(game, maker, member, variant, tc, seek.rated)
    }

    /// A seek of this node's that the cluster's list lost (swept while this node was cut
    /// off from Redis, or with a Redis restarted empty) rather than one accepted (its
    /// maker is then seated or being seated): listed again. Returns whether it was.
    async fn relist_if_lost(&mut self, seek_id: u64) -> bool {
        let Some(open) = self.seeks.get(&seek_id) else {
            return false;
        };
        let (seek, member) = (open.seek.clone(), open.member.clone());
        let shared = self.shared_pools();
        if self.services.registry.is_seated(member.account) {
            return false;
        }
        // Redis out of reach: kept, and looked at again at the next tick.
        let relisted = match shared.is_seating(member.account).await {
            Ok(true) => return false,
            Ok(false) => shared.put_seek(&seek, &member).await,
            Err(error) => Err(error),
        };
        match relisted {
            Ok(()) => tracing::info!(seek_id, "a seek the cluster's list lost is listed again"),
            Err(error) => tracing::error!(%error, "listing a lost seek again"),
        }
        true
    }

    /// Forgets this node's seeks accepted on another node, and withdraws those whose
    /// maker has started a game meanwhile (as starting a game here does).
    pub(super) async fn reconcile_seeks(&mut self) {
        let shared = self.shared_pools();
        let ids: Vec<u64> = self.seeks.keys().copied().collect();
        match shared.listed(&ids).await {
            Ok(listed) => {
                for (id, listed) in ids.iter().zip(listed) {
                    if !listed && !self.relist_if_lost(*id).await {
                        self.seeks.remove(id);
                    }
                }
            }
            Err(error) => tracing::error!(%error, "looking up the cluster's seeks"),
        }
        let registry = self.services.registry.clone();
        self.drop_seeks(|s| registry.is_seated(s.member.account));
        self.flush_leaves().await;
    }
}
