//! Seeks in cluster mode: listed from Redis (every node's), accepted from any node and
//! taken off the list there by one acceptor only; each node keeps its own members' seeks
//! too, and forgets those accepted elsewhere at its next tick.

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::ErrorCode;

use super::cluster::unreachable_redis;
use super::Lobby;
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
        let gone = !alive
            || self.services.registry.is_seated(maker.account)
            || self.bus.is_closed(maker.conn_id);
        let taken = shared
            .take_seek(seek_id)
            .await
            .map_err(|e| unreachable_redis(&e))?;
        self.seeks.remove(&seek_id);
        if gone || !taken {
            return Err(LobbyError::new(
                ErrorCode::UnknownSeek,
                "the seek is no longer open",
            ));
        }
        let _ = self
            .bus
            .send_msg(maker.conn_id, &ServerMsg::SeekRemoved { seek_id });
        self.start_game(maker, member, seek.variant, seek.time_control, seek.rated)
    }

    /// Forgets this node's seeks accepted on another node, and withdraws those whose
    /// maker has started a game meanwhile (as starting a game here does).
    pub(super) async fn reconcile_seeks(&mut self) {
        let shared = self.shared_pools();
        let ids: Vec<u64> = self.seeks.keys().copied().collect();
        match shared.listed(&ids).await {
            Ok(listed) => {
                for (id, listed) in ids.iter().zip(listed) {
                    if !listed {
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
