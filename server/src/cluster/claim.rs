//! The lobby starts where its lease is claimed. The games a node claims come back as after a restart (`game::restore_logs`): replayed
//! from their logs, the round under way voided, the clocks held until both players are
//! back; the computer's seats in them are taken again by its bots.

use std::collections::HashSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use elementals_protocol::messages::GameId;

use crate::bots::Bots;
use crate::game::{restore_logs, GameServices};
use crate::lobby::{LobbyStarter, LOBBY_LEASE};
use crate::record::GameLog;

/// Restores what the node claims.
pub(super) struct Claimer {
    pub services: GameServices,
    pub bots: Arc<Bots>,
    pub lobby: LobbyStarter,
}

impl Claimer {
    /// The lobby's lease is this node's (token `generation`): the lobby runs here until
    /// the lease is lost, which sounds its alarm as a game's.
    pub(super) fn start_lobby(&self, generation: i64) {
        let Some(alarms) = &self.services.lease_alarms else {
            return;
        };
        tracing::info!(
            generation,
            "the lobby's lease claimed: the lobby starts here"
        );
        self.lobby.start(generation, alarms.arm(LOBBY_LEASE));
    }

    pub(super) async fn restore_claimed(&self, logs: Vec<GameLog>) {
        let ids: HashSet<GameId> = logs.iter().map(|l| l.game_id).collect();
        let restored = restore_logs(logs, &self.services).await;
        let registry = &self.services.registry;
        let bots = self
            .bots
            .resume_games_where(registry, |id| ids.contains(id));
        self.services
            .metrics
            .games_claimed
            .fetch_add(ids.len() as u64, Relaxed);
        tracing::info!(
            claimed = ids.len(),
            resumed = restored.resumed,
            recorded = restored.recorded,
            aborted = restored.aborted,
            bots,
            "games claimed from a node whose lease lapsed"
        );
    }

    /// Sounds the alarms of the games whose leases are lost (`None`: all of them).
    pub(super) fn stop_lost(&self, lost: Option<&[GameId]>) {
        let Some(alarms) = &self.services.lease_alarms else {
            return;
        };
        let stopped = match lost {
            Some(lost) => alarms.sound(lost),
            None => alarms.sound_all(),
        };
        tracing::warn!(stopped, "games stopped here: their leases are lost");
    }
}
