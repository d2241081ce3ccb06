//! Cluster mode's game tier: a game runs on exactly one node at a time.
//!
//! Every live game has a lease in PostgreSQL (`db/pg/lease.rs`): taken with its first
//! step, renewed by its node, deleted with its record, and checked by every transaction
//! that writes the game's steps or its record (the fence). This module runs the node's side
//! of it: `lease` renews the node's leases and claims lapsed ones on a schedule, `claim`
//! restores the games it claims, as startup restores a restarted node's games. The lobby
//! has a lease too (`msg::LOBBY_LEASE`), claimed by whichever node finds it free, which
//! runs the lobby until its alarm sounds as a game's would.
//!
//! Leases are taken only in cluster mode, on PostgreSQL; a single node (SQLite, or
//! PostgreSQL without cluster mode) writes its games as before, without leases.

mod claim;
mod lease;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use lease::{LeaseStore, Schedule};

use crate::bots::Bots;
use crate::config::ClusterConfig;
use crate::game::GameServices;
use crate::lobby::LobbyStarter;

/// The node id this process holds its games' leases under: in cluster mode (`--redis`),
/// its `--node-id`.
pub fn lease_node(cluster: Option<&ClusterConfig>) -> Option<String> {
    cluster.map(|cluster| cluster.node_id.clone())
}

/// Starts the node's lease loop (renewals and claims, the lobby's too) until
/// `services.stop` fires; the lobby's lease is claimed first, before the node serves, so
/// that the first node of a cluster runs the lobby from its start.
pub async fn start(
    services: GameServices,
    bots: Arc<Bots>,
    lobby: LobbyStarter,
    lease: std::time::Duration,
) {
    let stop: CancellationToken = services.stop.clone();
    let db = services.db.clone();
    let claimer = claim::Claimer {
        services,
        bots,
        lobby,
    };
    match db.claim_lobby().await {
        Ok(Some(generation)) => claimer.start_lobby(generation),
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "cannot claim the lobby's lease; retrying"),
    }
    tokio::spawn(lease::run(db, Schedule::for_lease(lease), claimer, stop));
}
