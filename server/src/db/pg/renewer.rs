//! Cluster mode: this process's leases are renewed on a connection and a thread of their
//! own, so that a renewal (an `UPDATE` of its node's row, then a read of every lease the
//! node holds, to find those lost) never waits in line with the step log's batches, nor
//! they behind it. Nor do the two wait on each other in the database: a renewal locks no
//! game's row (`lease.rs`).
//!
//! The read goes in chunks of `CHUNK` leases a statement, so that no one statement's
//! arrays grow with the node's games.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::Duration;

use tokio::sync::mpsc;

use super::conn::Conn;
use super::lease::{self, Leases, Renewed};
use crate::db::writer::Reply;
use crate::db::{DbError, DbResult};

/// Leases read by one statement.
const CHUNK: usize = 1_000;

/// What the renewer's thread is asked.
pub(crate) enum Renewal {
    /// Renew every lease held (the node cut off from Redis for this long, if it is);
    /// answered with the games whose lease is lost, or that all were given up.
    Renew {
        cut_off_for: Option<Duration>,
        reply: Reply<Renewed>,
    },
    /// At shutdown, once the games have stopped and their steps are committed: every
    /// lease held lapses now, for other nodes to claim at once, and the thread stops.
    /// After any renewal under way, which would otherwise push the leases out again.
    GiveUp(Reply<()>),
}

/// Connects, then starts the renewer's thread.
pub(super) fn spawn(url: Arc<str>, leases: Arc<Leases>) -> DbResult<mpsc::Sender<Renewal>> {
    // The node's row is made (or renewed) before the node takes any game, so that each
    // game's row names an epoch of a row that exists; with it the node takes its number.
    let conn = super::on_thread("db-connect", {
        let url = Arc::clone(&url);
        let leases = Arc::clone(&leases);
        move || {
            let mut conn = Conn::open(url, "lease renewal", super::conn::BOUNDED)?;
            let (client, cache) = conn.get()?;
            let others = lease::others_alive(client, cache, &leases.node_id)?;
            leases.others_up_at_start.store(others, Ordering::Relaxed);
            let _ = leases
                .database_clock
                .set(lease::read_database_clock(client)?);
            lease::renew_node(client, cache, &leases, None)?;
            lease::take_number(client, cache, &leases)?;
            Ok(conn)
        }
    })?;
    let (renewals, queue) = mpsc::channel(4);
    std::thread::Builder::new()
        .name("lease-renewal".into())
        .spawn(move || run(conn, &leases, queue))
        .map_err(|e| DbError::Postgres(format!("cannot start the lease renewal thread: {e}")))?;
    Ok(renewals)
}

fn run(mut conn: Conn, leases: &Leases, mut queue: mpsc::Receiver<Renewal>) {
    let mut orphans = lease::Orphans::default();
    while let Some(request) = queue.blocking_recv() {
        match request {
            Renewal::Renew { cut_off_for, reply } => {
                // Leases are held for writing: a step log stuck in one batch for half a
                // lease (its own connection stalled, say, while this one works) renews
                // none, and its games lapse to a node that can write them.
                if leases.appending.longer_than(leases.lease / 2) {
                    let stuck = "the step log is stuck in a write: no lease is renewed";
                    let _ = reply.send(Err(DbError::Unavailable(stuck.into())));
                    continue;
                }
                let renewed = conn.get().and_then(|(client, cache)| {
                    lease::renew(client, cache, leases, CHUNK, cut_off_for, &mut orphans)
                });
                let _ = reply.send(conn.settle(renewed));
            }
            Renewal::GiveUp(reply) => {
                // Should this fail, the leases lapse on their own.
                let given = conn
                    .get()
                    .and_then(|(client, cache)| lease::give_up(client, cache, leases));
                match given {
                    Ok(games) => tracing::info!(games, "this node's game leases lapse now"),
                    Err(error) => {
                        tracing::warn!(%error, "cannot give up the game leases; they lapse on their own")
                    }
                }
                let _ = reply.send(Ok(()));
                break;
            }
        }
    }
    let _ = conn.close();
}
