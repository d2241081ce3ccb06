//! Cluster mode: claiming lapsed leases (`lease.rs` says what a lease is), every `CLAIM`
//! on each node, on the step log's thread, in the transaction that reads the claimed
//! games' logs. A claim first asks which leases have lapsed: one statement that reads
//! one range of the (node_id, epoch) index a node and no live lease. Nearly always it finds
//! none, and the claim ends there. Otherwise it takes up to `CLAIM_LIMIT` of them by their
//! keys, each checked again under its lock. At startup a node also takes back its own
//! leases and the live games logged without one. The same search forgets the rows of nodes
//! long gone (`FORGET_NODE`).

use std::time::Duration;

use postgres::Transaction;

use super::lease::Leases;
use super::Cache;
use crate::db::DbResult;

/// Most games one claim takes, so that a claim's replay is bounded.
pub(super) const CLAIM_LIMIT: usize = 5_000;

/// The lobby's lease (`msg::LOBBY_LEASE`) as `game_leases` keys it: the ordinary claims
/// (`LAPSED`, `CLAIM_OWN`) leave it to `claim_lobby`.
pub(super) const LOBBY_ID: &str = "00000000-0000-0000-0000-000000000000";

/// The statement of `claim_lobby`: `$1` the node, `$2` the lobby's key. The first node
/// makes the row.
pub(super) const MAKE_LOBBY: &str = "INSERT INTO game_leases (game_id, node_id, token, epoch)
     SELECT $2, me.node_id, 1, me.epoch FROM node_leases me
     WHERE me.node_id = $1 AND me.expires_at >= now()
     ON CONFLICT (game_id) DO NOTHING
     RETURNING token";

/// The statement of `claim_lobby`: `$1` the lobby's key. Whether its lease has lapsed
/// (read only: nearly always it has not, and nothing is locked).
pub(super) const LOBBY_LAPSED: &str = "SELECT 1 FROM game_leases l
     WHERE l.game_id = $1
       AND NOT EXISTS (SELECT 1 FROM node_leases n WHERE n.node_id = l.node_id
                       AND l.epoch >= n.epoch + (n.expires_at < now())::int)";

/// The statement of `claim_lobby`: `$1` the node, `$2` the lobby's key. Taken as a lapsed
/// game's lease is (`CLAIM_LAPSED`): checked again under its lock, and only while this
/// node's own lease is live.
pub(super) const CLAIM_LOBBY: &str = "WITH locked AS MATERIALIZED (
         SELECT game_id FROM game_leases WHERE game_id = $2
         FOR UPDATE SKIP LOCKED
     )
     UPDATE game_leases l
     SET node_id = me.node_id, token = l.token + 1, epoch = me.epoch
     FROM node_leases me
     WHERE l.game_id = $2 AND l.game_id IN (SELECT game_id FROM locked)
       AND me.node_id = $1 AND me.expires_at >= now()
       AND NOT EXISTS (SELECT 1 FROM node_leases n WHERE n.node_id = l.node_id
                       AND l.epoch >= n.epoch + (n.expires_at < now())::int)
     RETURNING l.token";

/// Takes the lobby's lease if nobody holds it (no row yet, or its node's lease lapsed):
/// its new token, which the caller holds once committed.
pub(super) fn claim_lobby(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    node: &str,
) -> DbResult<Option<i64>> {
    let make = cache.get(tx, MAKE_LOBBY)?;
    if let Some(row) = tx.query_opt(&make, &[&node, &LOBBY_ID])? {
        return Ok(Some(row.get(0)));
    }
    let lapsed = cache.get(tx, LOBBY_LAPSED)?;
    if tx.query_opt(&lapsed, &[&LOBBY_ID])?.is_none() {
        return Ok(None);
    }
    let claim = cache.get(tx, CLAIM_LOBBY)?;
    Ok(tx
        .query_opt(&claim, &[&node, &LOBBY_ID])?
        .map(|row| row.get(0)))
}

/// Which leases a claim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// Those that have lapsed.
    Lapsed,
    /// At startup: those of this node's id (left by its last run), those that have lapsed,
    /// and the live games that have none (logged without cluster mode).
    Startup,
}

/// How long after its lease lapsed a node's row is deleted by a claim, once no lease names
/// it (its games claimed, recorded or asleep): the row then matters only to the node, which
/// makes it again (at epoch 0) if it comes back. An hour is far past any pause of a node
/// that still runs (its renewals failing while its step log takes a new game's lease under
/// the row being deleted) and leaves a node that died on view for a while.
pub(super) const FORGET_NODE: Duration = Duration::from_secs(3_600);

/// The statement of `take`: every lapsed lease (`$1`: `FORGET_NODE` in milliseconds). A
/// lease has lapsed once its node's row has expired, or is at a later epoch than the
/// lease's: one range of the index on (node_id, epoch) a node (`OFFSET 0` keeps the
/// planner from a join that reads every live lease). The rows of nodes gone for
/// `FORGET_NODE` that no lease names go in the same statement (rows another claim is
/// deleting are skipped, not waited for): every lease that names a node whose row has
/// expired is lapsed (no lease is at a later epoch than its node), so a node with none
/// among the lapsed ones is named by none, and no more leases are read to find it.
pub(super) const LAPSED: &str = "WITH lapsed AS MATERIALIZED (
         SELECT n.node_id, l.game_id FROM node_leases n CROSS JOIN LATERAL (
             SELECT game_id FROM game_leases l
             WHERE l.node_id = n.node_id
               AND l.epoch < n.epoch + (n.expires_at < now())::int
               AND l.game_id <> '00000000-0000-0000-0000-000000000000'
             OFFSET 0) l
     ), forgotten AS (
         DELETE FROM node_leases WHERE node_id IN (
             SELECT n.node_id FROM node_leases n
             WHERE n.expires_at < now() - $1::float8 * interval '1 millisecond'
               AND NOT EXISTS (SELECT 1 FROM lapsed p WHERE p.node_id = n.node_id)
             FOR UPDATE SKIP LOCKED)
     )
     SELECT game_id FROM lapsed";

/// The statement of `take`: `$1` lapsed games, whose leases go if recorded or without a
/// log. By their ids: as one statement with `LAPSED`, the plan guessed many lapsed leases
/// and hashed every row of `game_log` and `games` for the two checks, each claim. The
/// checks look each game up by key (`OFFSET 0` keeps them from being made hashed
/// subplans, which with no statistics read every record once a claim).
pub(super) const DELETE_STALE: &str = "DELETE FROM game_leases WHERE game_id IN (
     SELECT l.game_id FROM game_leases l
     WHERE l.game_id = ANY($1::text[])
       AND EXISTS (SELECT 1 FROM node_leases n WHERE n.node_id = l.node_id
                   AND l.epoch < n.epoch + (n.expires_at < now())::int)
       AND (EXISTS (SELECT 1 FROM games g WHERE g.id = l.game_id OFFSET 0)
            OR NOT EXISTS (SELECT 1 FROM game_log s WHERE s.game_id = l.game_id OFFSET 0))
     FOR UPDATE OF l SKIP LOCKED)";

/// The statement of `take`: `$1` the node, `$2` the lapsed games to take. Each lease is
/// locked by its key, and taken only if it is still lapsed on the row's latest version
/// (another claim may have taken it since `LAPSED` read it) and only while this node's own
/// lease is live (games taken under a lapsed one would lapse again at once).
pub(super) const CLAIM_LAPSED: &str = "WITH locked AS MATERIALIZED (
         SELECT game_id FROM game_leases WHERE game_id = ANY($2::text[])
         FOR UPDATE SKIP LOCKED
     )
     UPDATE game_leases l
     SET node_id = me.node_id, token = l.token + 1, epoch = me.epoch
     FROM node_leases me
     WHERE l.game_id = ANY($2::text[]) AND l.game_id IN (SELECT game_id FROM locked)
       AND me.node_id = $1 AND me.expires_at >= now()
       AND EXISTS (SELECT 1 FROM node_leases n WHERE n.node_id = l.node_id
                   AND l.epoch < n.epoch + (n.expires_at < now())::int)
     RETURNING l.game_id, l.token";

/// The statement of `take` at startup: `$1` the node. Its row starts a new epoch, so that
/// every lease its last run left is lapsed: this claim takes back up to its limit of them
/// (`CLAIM_OWN`), and the next claims, this node's or another's, take the rest.
pub(super) const NEW_EPOCH: &str = "UPDATE node_leases SET epoch = epoch + 1 WHERE node_id = $1";

/// The statement of `take` at startup: `$1` the node, `$2` the most it takes. The leases
/// of the node's earlier epochs, a range of the (node_id, epoch) index, are locked and
/// then updated by key.
pub(super) const CLAIM_OWN: &str = "WITH locked AS MATERIALIZED (
         SELECT l.game_id FROM game_leases l
         WHERE l.node_id = $1
           AND l.epoch < (SELECT epoch FROM node_leases WHERE node_id = $1)
           AND l.game_id <> '00000000-0000-0000-0000-000000000000'
         LIMIT $2
         FOR UPDATE SKIP LOCKED
     )
     UPDATE game_leases l SET token = l.token + 1, epoch = me.epoch
     FROM node_leases me
     WHERE me.node_id = $1 AND l.game_id = ANY(ARRAY(SELECT game_id FROM locked))
     RETURNING l.game_id, l.token";

/// The statement of `take` at startup: `$1` the node.
pub(super) const CLAIM_UNLEASED: &str = "INSERT INTO game_leases (game_id, node_id, token, epoch)
     SELECT DISTINCT g.game_id, $1, 1, (SELECT epoch FROM node_leases WHERE node_id = $1)
     FROM game_log g
     WHERE NOT EXISTS (SELECT 1 FROM game_leases l WHERE l.game_id = g.game_id)
       AND NOT EXISTS (SELECT 1 FROM games r WHERE r.id = g.game_id)
       AND NOT EXISTS (SELECT 1 FROM game_wakeups w WHERE w.game_id = g.game_id)
     ON CONFLICT (game_id) DO NOTHING
     RETURNING game_id, token";

/// Takes leases (see `Claim`), each with its token one higher, and returns the ids and
/// tokens taken: at most the limit (`CLAIM_LIMIT`) of lapsed and own leases, and at startup
/// every live game logged without a lease (those are left only by a process that ran
/// without cluster mode: there is no lease to lapse for a later claim to find them by).
/// Rows locked by another transaction (a node writing under them, or claiming them) are
/// skipped: they are looked at again by the next claim.
pub(super) fn take(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    leases: &Leases,
    which: Claim,
) -> DbResult<Vec<(String, i64)>> {
    // Once lapsed a lease stays lapsed (epochs only grow, and a node whose row has
    // expired starts a new one at its next renewal), so what `LAPSED` finds stays lapsed
    // unless another claim takes it meanwhile, which `CLAIM_LAPSED` checks under the lock.
    // Games this process lost while their actor may still run are left until it stops.
    let search = cache.get(tx, LAPSED)?;
    let lost = leases.lost_ids();
    let mut lapsed: Vec<String> = tx
        .query(&search, &[&(FORGET_NODE.as_millis() as f64)])?
        .iter()
        .map(|row| row.get::<_, String>(0))
        .filter(|id| !lost.contains(id))
        .collect();
    lapsed.sort_unstable();
    let limit = leases.claim_limit();
    lapsed.truncate(limit);
    leases.after_claim_search();
    let startup = which == Claim::Startup;
    if lapsed.is_empty() && !startup {
        return Ok(Vec::new());
    }
    // The leases of recorded games are deleted with their records; lapsed ones left by a
    // process that recorded without leases (or with no log left to replay) go now,
    // rather than be claimed.
    if !lapsed.is_empty() {
        let stale = cache.get(tx, DELETE_STALE)?;
        tx.execute(&stale, &[&lapsed])?;
    }
    let mut taken = Vec::new();
    if startup {
        // The node's own leases, left by its last run (its row renewed as it opened):
        // before the lapsed ones, which then no longer are, so that none is taken twice;
        // within the same limit.
        let epoch = cache.get(tx, NEW_EPOCH)?;
        tx.execute(&epoch, &[&leases.node_id])?;
        let own = cache.get(tx, CLAIM_OWN)?;
        let most = i64::try_from(limit).unwrap_or(i64::MAX);
        for row in tx.query(&own, &[&leases.node_id, &most])? {
            taken.push((row.get(0), row.get(1)));
        }
        lapsed.truncate(limit.saturating_sub(taken.len()));
    }
    if !lapsed.is_empty() {
        let update = cache.get(tx, CLAIM_LAPSED)?;
        for row in tx.query(&update, &[&leases.node_id, &lapsed])? {
            taken.push((row.get(0), row.get(1)));
        }
    }
    if startup {
        // After the node's own, which would otherwise take each of these twice.
        let unleased = cache.get(tx, CLAIM_UNLEASED)?;
        for row in tx.query(&unleased, &[&leases.node_id])? {
            taken.push((row.get(0), row.get(1)));
        }
    }
    Ok(taken)
}
