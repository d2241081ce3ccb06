//! A sleeping game's lease: no node's while it sleeps (`go_dormant`), and taken with the
//! next token by the one node whose transaction wakes it (`wake`).

use elementals_protocol::messages::GameId;
use postgres::{GenericClient, Transaction};

use super::Leases;
use crate::db::pg::Cache;
use crate::db::DbResult;

/// The node id of a sleeping game's lease (no node's: `--node-id` is never empty, so no
/// row of `node_leases` has it and no claim takes it). Its row keeps its token, so that
/// whoever wakes the game fences with a higher one.
const DORMANT: &str = "";

/// The statement of `go_dormant`: `$1` the game, `$2` the node, `$3` its token, `$4` `DORMANT`.
pub(in crate::db::pg) const GO_DORMANT: &str = "UPDATE game_leases SET node_id = $4
     WHERE game_id = $1 AND node_id = $2 AND token = $3";

/// Cluster mode: game `game_id` goes to sleep, in the writer's transaction that writes its
/// wake-up row: its lease, if still this process's, becomes no node's (no claim of lapsed
/// leases takes it). `LeaseLost` if it is not this process's.
pub(in crate::db::pg) fn go_dormant(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
    game_id: &GameId,
) -> DbResult<()> {
    let lost = crate::db::DbError::LeaseLost { game_id: *game_id };
    let token = leases.token(game_id).ok_or_else(|| lost.clone())?;
    let update = cache.get(c, GO_DORMANT)?;
    let id = game_id.to_string();
    match c.execute(&update, &[&id, &leases.node_id, &token, &DORMANT])? {
        1 => Ok(()),
        _ => Err(lost),
    }
}

/// The statement of `wake`: `$1` the games, `$2` the node, `$3` `DORMANT`.
pub(in crate::db::pg) const WAKE: &str = "WITH w AS (
         SELECT game_id FROM game_wakeups WHERE game_id = ANY($1)
         FOR UPDATE SKIP LOCKED
     ), l AS (
         INSERT INTO game_leases (game_id, node_id, token, epoch)
         SELECT game_id, $2, 1, (SELECT epoch FROM node_leases WHERE node_id = $2) FROM w
         ON CONFLICT (game_id) DO UPDATE
             SET node_id = excluded.node_id, token = game_leases.token + 1,
                 epoch = excluded.epoch
             WHERE game_leases.node_id = $3
         RETURNING game_id, token
     ), d AS (
         DELETE FROM game_wakeups WHERE game_id IN (SELECT game_id FROM l)
     )
     SELECT game_id, token FROM l";

/// Cluster mode: wakes the sleeping games of `ids` that no other transaction is waking
/// (their wake-up rows locked, `SKIP LOCKED`): each one's lease becomes this node's with
/// its token one higher (token 1 for a game put to sleep without cluster mode, which has
/// none) and its wake-up row goes. Returns the ids and tokens taken; a game awake already
/// (woken by another node) or being woken elsewhere is not among them.
pub(in crate::db::pg) fn wake(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    node: &str,
    ids: &[String],
) -> DbResult<Vec<(String, i64)>> {
    let wake = cache.get(tx, WAKE)?;
    Ok(tx
        .query(&wake, &[&ids, &node, &DORMANT])?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}
