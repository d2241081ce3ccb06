//! `my_games` and `your_move` across nodes: a player seated in a game another node runs
//! asks that node what the game waits for now (`NodeMsg::AskOwed`), and its answer
//! (`ToldOwed`) comes back on this node's channel. A player following its moves here
//! (it asked `my_games`) is followed there too (`Follow`): when this node hears the game
//! open (or move) there, and when it asks. The game's node answers from its registry, which the game
//! updates before it publishes the events that change it: a player who has heard an event
//! and then asks is answered as the event left the game, wherever either is.
//!
//! Asked only on demand, so a game's steps cost the cluster nothing more. An ask not
//! answered within `ASK_TIMEOUT` (the game's node is dying; the game is claimed elsewhere
//! a lease later) is answered `None`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use dashmap::DashMap;
use elementals_protocol::messages::GameId;
use tokio::sync::oneshot;

use super::wire::{self, NodeMsg, WireOwed};
use super::RedisBus;
use crate::msg::{ConnId, OwedNow};
use crate::peers::Here;
use crate::record::AccountId;

/// How long an ask waits for the game's node: far past a live node's answer (one round
/// trip through Redis), short enough for a player waiting on `my_games`.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// The asks waiting for their answers, and where this node's own answers come from.
#[derive(Debug, Default)]
pub(super) struct Asks {
    waiting: DashMap<u64, oneshot::Sender<Option<OwedNow>>>,
    next: AtomicU64,
    /// The node's registry (it holds the bus, so not an `Arc`), set once it exists.
    registry: OnceLock<Weak<dyn Here>>,
}

impl Asks {
    pub(super) fn answer_from(&self, registry: &Arc<dyn Here>) {
        let _ = self.registry.set(Arc::downgrade(registry));
    }

    /// The node's registry, once it exists and while it does.
    pub(super) fn registry(&self) -> Option<Arc<dyn Here>> {
        self.registry.get().and_then(Weak::upgrade)
    }
}

impl RedisBus {
    /// What game `game`, which node `node` runs, waits for now; `None` if that node does
    /// not run it or does not answer within `ASK_TIMEOUT`.
    pub async fn ask_owed(&self, node: u16, game: GameId) -> Option<OwedNow> {
        let ask = self.asks.next.fetch_add(1, Relaxed);
        let (tx, rx) = oneshot::channel();
        self.asks.waiting.insert(ask, tx);
        let from = self.node;
        self.link
            .node(node, &NodeMsg::AskOwed { game, from, ask }, None);
        let told = tokio::time::timeout(ASK_TIMEOUT, rx).await;
        self.asks.waiting.remove(&ask);
        told.ok()?.ok()?
    }

    /// Answers node `from`'s ask `ask` about this node's game `game`.
    pub(super) fn tell_owed(&self, game: GameId, from: u16, ask: u64) {
        let owed = self
            .asks
            .registry()
            .and_then(|registry| registry.owed_of(&game))
            .map(|o| (o.round, o.phase, o.owed));
        self.link.node(from, &NodeMsg::ToldOwed { ask, owed }, None);
    }

    /// `account`'s connection `conn` of this node follows its moves in game `game`, which
    /// node `node` runs (`Registry::follow_here`).
    pub fn follow(
        &self,
        node: u16,
        game: GameId,
        account: AccountId,
        conn: ConnId,
        tell_owed: bool,
    ) {
        let msg = NodeMsg::Follow {
            game,
            account,
            conn,
            tell_owed,
        };
        self.link.node(node, &msg, None);
    }

    /// Game `game` opened on (or moved to) another node: its players who follow their
    /// moves here are followed there, and told what they owe now.
    pub(super) fn follow_there(&self, game: GameId, entry: &wire::DirEntry) {
        if entry.node == self.node {
            return;
        }
        let Some(registry) = self.asks.registry() else {
            return;
        };
        for account in [entry.seats.one, entry.seats.two] {
            if let Some(conn) = registry.follower_here(account) {
                self.follow(entry.node, game, account, conn, true);
            }
        }
    }

    /// The answer to this node's ask `ask` (dropped if it has stopped waiting).
    pub(super) fn told_owed(&self, ask: u64, owed: Option<WireOwed>) {
        if let Some((_, waiting)) = self.asks.waiting.remove(&ask) {
            let owed = owed.map(|(round, phase, owed)| OwedNow { round, phase, owed });
            let _ = waiting.send(owed);
        }
    }
}
