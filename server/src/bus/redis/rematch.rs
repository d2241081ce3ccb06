//! Rematches across nodes: a finished game's rematch offers are the business of the node
//! that ran it, whose registry remembers the game (its players, the ratings its record
//! left them, the offers so far). An offer made on another node is sent to that node's
//! lobby (`NodeMsg::Rematch`), which answers it to the asker's connection through the
//! bus, tells the opponent wherever they are connected, and starts the rematch seating
//! both by their connections, as a pairing across nodes does.
//!
//! Each node remembers which node ran the games it heard end (`ClusterMsg::Ended`), the
//! last `ENDED_MEMORY` of them, as the registry remembers its own finished games.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::*;
use crate::lobby::{LobbyCmd, Member};
use crate::record::AccountId;
use wire::WireReply;

/// How many games that ended on other nodes a node remembers (as `FINISHED_MEMORY`).
const ENDED_MEMORY: usize = crate::registry::FINISHED_MEMORY;

/// Which node ran each game that ended elsewhere, oldest first.
#[derive(Debug, Default)]
pub(super) struct Ended(Mutex<(HashMap<GameId, u16>, VecDeque<GameId>)>);

impl Ended {
    pub(super) fn note(&self, game: GameId, node: u16) {
        let mut ended = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (nodes, order) = &mut *ended;
        if nodes.insert(game, node).is_none() {
            order.push_back(game);
        }
        while order.len() > ENDED_MEMORY {
            if let Some(oldest) = order.pop_front() {
                nodes.remove(&oldest);
            }
        }
    }

    fn node_of(&self, game: &GameId) -> Option<u16> {
        let ended = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ended.0.get(game).copied()
    }
}

/// A rematch offer on its way to the node that ran the game.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireRematch {
    game: GameId,
    account: AccountId,
    info: elementals_protocol::messages::PlayerInfo,
    conn: ConnId,
    reply: WireReply,
}

impl RedisBus {
    /// The node that ran `game`, if another node did and this node heard it end.
    pub fn ended_elsewhere(&self, game: &GameId) -> Option<u16> {
        self.ended.node_of(game)
    }

    /// Sends `member`'s rematch offer for `game` to the lobby of `node`, which ran it and
    /// answers it to `reply`. Should that node die first, the offer is answered here as
    /// a command to a gone node's game is.
    pub fn forward_rematch(&self, node: u16, game: GameId, member: Member, reply: ReplyTo) {
        let owed = Owed {
            game,
            node,
            reply,
            resync: false,
        };
        if reply.settle {
            self.owed.insert(reply.conn, (owed, Instant::now()));
        }
        let offer = WireRematch {
            game,
            account: member.account,
            info: member.info,
            conn: member.conn_id,
            reply: reply.into(),
        };
        self.link.node(node, &NodeMsg::Rematch(offer), Some(owed));
    }

    /// A rematch offer for one of this node's finished games, from another node: to the
    /// lobby once the game's record is settled (its ratings final), as a session here
    /// waits for it.
    pub(super) fn take_rematch(self: &Arc<Self>, offer: WireRematch) {
        let registry = self.asks.registry();
        let bus = self.clone();
        tokio::spawn(async move {
            let finished = registry.and_then(|r| r.finished_game(&offer.game));
            if let Some(finished) = finished {
                finished.wait_recorded().await;
            }
            let cmd = LobbyCmd::OfferRematch {
                member: Member {
                    account: offer.account,
                    info: offer.info,
                    conn_id: offer.conn,
                },
                game_id: offer.game,
                reply: offer.reply.into(),
            };
            bus.local.to_lobby(cmd).await;
        });
    }
}
