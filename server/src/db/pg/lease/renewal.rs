//! A node's renewal of its leases (its row in `node_leases`, then a read of the games'
//! rows it holds, to find those lost) and their giving up at shutdown.

use std::collections::HashSet;

use elementals_protocol::messages::GameId;
use postgres::GenericClient;

use super::{Leases, LEASE};
use crate::db::pg::Cache;
use crate::db::DbResult;

/// The statement of `renew_node`: `$1` the node, `$2` the lease in milliseconds.
pub(in crate::db::pg) const RENEW_NODE: &str =
    "INSERT INTO node_leases AS n (node_id, epoch, expires_at)
     VALUES ($1, 0, now() + $2::float8 * interval '1 millisecond')
     ON CONFLICT (node_id) DO UPDATE
         SET epoch = n.epoch + (n.expires_at < now())::int,
             expires_at = excluded.expires_at";

/// Renews this node's row in `node_leases`, or makes it (epoch 0); a row that has expired
/// starts a new epoch, leaving every game row of the old one lapsed. Made when the node
/// opens the database, before it takes any game.
pub(in crate::db::pg) fn renew_node(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    node: &str,
) -> DbResult<()> {
    let upsert = cache.get(c, RENEW_NODE)?;
    c.execute(&upsert, &[&node, &lease_ms()])?;
    Ok(())
}

/// The statement of `renew`: `$1`, `$2` the games held and their tokens, `$3` the node.
/// Each lease is read by its key and compared after: with the node's id and epoch in its
/// lookup, the generic plan with no statistics read all of the node's leases at its epoch
/// by the (node_id, epoch) index and compared every chunk's game with every one of them.
pub(in crate::db::pg) const RENEW_CHECK: &str = "SELECT h.game_id
     FROM UNNEST($1::text[], $2::bigint[]) AS h(game_id, token)
     LEFT JOIN game_leases l ON l.game_id = h.game_id
     WHERE l.game_id IS NULL OR l.token <> h.token OR l.node_id <> $3
        OR l.epoch IS DISTINCT FROM (SELECT epoch FROM node_leases WHERE node_id = $3)";

/// Renews this process's leases (its node's row), then reads the rows of the games it
/// holds, `chunk` a statement: those no longer this process's (claimed by another node, its
/// token moved on, or left in an older epoch) are marked lost and returned.
pub(in crate::db::pg) fn renew(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
    chunk: usize,
) -> DbResult<Vec<GameId>> {
    let (ids, tokens) = leases.columns();
    renew_node(c, cache, &leases.node_id)?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let check = cache.get(c, RENEW_CHECK)?;
    let mut lost = Vec::new();
    for (ids, tokens) in ids.chunks(chunk.max(1)).zip(tokens.chunks(chunk.max(1))) {
        let unrenewed: HashSet<String> = c
            .query(&check, &[&ids, &tokens, &leases.node_id])?
            .iter()
            .map(|row| row.get(0))
            .collect();
        for (id, token) in ids.iter().zip(tokens) {
            if !unrenewed.contains(id) {
                continue;
            }
            let Ok(game_id) = id.parse::<GameId>() else {
                continue;
            };
            // Taken since the statement was sent (a new game's first step), claimed again
            // by this process (its token moved on), or already given up: only a token the
            // statement was about is lost.
            if leases.lose_unrenewed(game_id, *token) {
                lost.push(game_id);
            }
        }
    }
    Ok(lost)
}

/// The statement of `give_up`: `$1` the node.
pub(in crate::db::pg) const GIVE_UP: &str =
    "UPDATE node_leases SET expires_at = now() - interval '1 millisecond'
     WHERE node_id = $1";

/// The statement of `give_up` for a node that no lease names: `$1` the node.
pub(in crate::db::pg) const DROP_NODE: &str = "DELETE FROM node_leases n
     WHERE n.node_id = $1
       AND NOT EXISTS (SELECT 1 FROM game_leases l WHERE l.node_id = n.node_id)";

/// At shutdown, once the games have stopped: this node's lease lapses now, so that other
/// nodes claim its games at their next claim rather than a lease later; a node that no
/// lease names (its games all recorded or asleep) deletes its row instead, needed by
/// nobody. Returns how many games it held.
pub(in crate::db::pg) fn give_up(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
) -> DbResult<usize> {
    let drop = cache.get(c, DROP_NODE)?;
    if c.execute(&drop, &[&leases.node_id])? == 0 {
        let update = cache.get(c, GIVE_UP)?;
        c.execute(&update, &[&leases.node_id])?;
    }
    Ok(leases.columns().0.len())
}

/// The lease's length in milliseconds, as `interval * float8` takes it.
fn lease_ms() -> f64 {
    LEASE.as_millis() as f64
}
