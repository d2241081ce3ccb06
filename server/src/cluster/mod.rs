//! Cluster mode's game tier: a game runs on exactly one node at a time.
//!
//! Every live game has a lease in PostgreSQL (`db/pg/lease.rs`): taken with its first
//! step, renewed by its node, deleted with its record, and checked by every transaction
//! that writes the game's steps or its record (the fence). This module runs the node's side
//! of it: `lease` renews the node's leases and claims lapsed ones on a schedule, `claim`
//! restores the games it claims, as startup restores a restarted node's games.
//!
//! Leases are taken only in cluster mode, on PostgreSQL; a single node (SQLite, or
//! PostgreSQL without cluster mode) writes its games as before, without leases.

mod alarms;
mod claim;
mod lease;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use alarms::{Alarm, LeaseAlarms};
pub use lease::{LeaseStore, Schedule};

use crate::bots::Bots;
use crate::config::ClusterConfig;
use crate::game::GameServices;

/// The node id this process holds its games' leases under: in cluster mode (`--redis`),
/// its `--node-id`.
pub fn lease_node(cluster: Option<&ClusterConfig>) -> Option<String> {
    cluster.map(|cluster| cluster.node_id.clone())
}

/// Starts the node's lease loop (renewals and claims) until `services.stop` fires.
pub fn start(services: GameServices, bots: Arc<Bots>) -> tokio::task::JoinHandle<()> {
    let stop: CancellationToken = services.stop.clone();
    let db = services.db.clone();
    tokio::spawn(lease::run(
        db,
        Schedule::default(),
        claim::Claimer { services, bots },
        stop,
    ))
}
