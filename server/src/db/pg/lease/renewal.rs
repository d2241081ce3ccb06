//! A node's renewal of its leases (its row in `node_leases`, then a read of the games'
//! rows it holds, to find those lost) and their giving up at shutdown.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use elementals_protocol::messages::GameId;
use postgres::GenericClient;

use postgres::error::SqlState;

use super::{Leases, NODE_NUMBERS};
use crate::db::pg::Cache;
use crate::db::{DbError, DbResult};

/// The statement of `renew_node`: `$1` the node, `$2` the lease in milliseconds, `$3` how
/// long since the node last heard Redis, in milliseconds (null: not known yet).
pub(in crate::db::pg) const RENEW_NODE: &str =
    "INSERT INTO node_leases AS n (node_id, epoch, expires_at, redis_at)
     VALUES ($1, 0, now() + $2::float8 * interval '1 millisecond',
             now() - $3::float8 * interval '1 millisecond')
     ON CONFLICT (node_id) DO UPDATE
         SET epoch = n.epoch + (n.expires_at < now())::int,
             expires_at = excluded.expires_at,
             redis_at = excluded.redis_at
     RETURNING number";

/// Renews this node's row in `node_leases`, or makes it (epoch 0), with when the node last
/// heard Redis (`heard_ago`; not known yet at its start, before it listens); a row that has expired
/// starts a new epoch, leaving every game row of the old one lapsed. Made when the node
/// opens the database, before it takes any game. A row that no longer has the number
/// this node took (it was forgotten while the node was away, and made again now) means
/// another node may run under that number: this node stops (`Leases::number_lost`).
pub(in crate::db::pg) fn renew_node(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
    heard_ago: Option<Duration>,
) -> DbResult<()> {
    let upsert = cache.get(c, RENEW_NODE)?;
    // The lease's length in milliseconds, as `interval * float8` takes it.
    let lease_ms = leases.lease.as_millis() as f64;
    let unheard_ms = heard_ago.map(|ago| ago.as_millis() as f64);
    let number: Option<i32> = c
        .query_one(&upsert, &[&leases.node_id, &lease_ms, &unheard_ms])?
        .get(0);
    let held = leases.number();
    if held != 0 && number != Some(i32::from(held)) {
        tracing::error!(
            node = held,
            "this node's number is no longer its own (its row was forgotten while it was away): stopping"
        );
        leases.lose_number();
    }
    Ok(())
}

/// The statement of `take_number`: `$1` the node, `$2` the highest number. A row keeps
/// the number it has (a node restarted under the same `--node-id`); otherwise it takes
/// the lowest that no row holds. Two nodes that pick the same one at once: the unique
/// index refuses the second, which picks again.
const TAKE_NUMBER: &str = "UPDATE node_leases SET number = COALESCE(number, (
         SELECT n FROM generate_series(1, $2::int) AS n
         WHERE NOT EXISTS (SELECT 1 FROM node_leases o WHERE o.number = n)
         ORDER BY n LIMIT 1))
     WHERE node_id = $1
     RETURNING number";

/// Takes this node's number in the cluster (`NODE_NUMBERS` of them) for its row, made
/// already (`renew_node`), and keeps it in `leases`.
pub(in crate::db::pg) fn take_number(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
) -> DbResult<u16> {
    let take = cache.get(c, TAKE_NUMBER)?;
    let highest = i32::from(NODE_NUMBERS);
    for _ in 0..TAKE_NUMBER_TRIES {
        let number: Option<i32> = match c.query_one(&take, &[&leases.node_id, &highest]) {
            Ok(row) => row.get(0),
            Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => continue,
            Err(error) => return Err(error.into()),
        };
        let number = number
            .and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| DbError::Postgres("every node number of the cluster is taken".into()))?;
        leases.set_number(number);
        return Ok(number);
    }
    Err(DbError::Postgres(
        "no node number could be taken: other nodes took each one tried first".into(),
    ))
}

/// How often `take_number` picks again after another node took the number it picked.
const TAKE_NUMBER_TRIES: usize = 20;

/// The database's clock now, in Unix milliseconds, and when on this process's monotonic
/// clock (the middle of the round trip).
pub(in crate::db::pg) fn read_database_clock(
    c: &mut impl GenericClient,
) -> DbResult<(std::time::Instant, u64)> {
    let sent = std::time::Instant::now();
    let ms: f64 = c
        .query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8",
            &[],
        )?
        .get(0);
    let answered = std::time::Instant::now();
    Ok((sent + (answered - sent) / 2, ms.max(0.0) as u64))
}

/// Whether a node other than `node` holds a live lease (at this node's start: the
/// cluster is running, not coming back from being down).
pub(in crate::db::pg) fn others_alive(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    node: &str,
) -> DbResult<bool> {
    let select = cache.get(
        c,
        "SELECT EXISTS (SELECT 1 FROM node_leases WHERE node_id <> $1 AND expires_at > now())",
    )?;
    Ok(c.query_one(&select, &[&node])?.get(0))
}

/// The statement of `others_hear_redis`: `$1` the node, `$2` how long ago, in milliseconds.
pub(in crate::db::pg) const OTHERS_HEAR_REDIS: &str = "SELECT EXISTS (
         SELECT 1 FROM node_leases
         WHERE node_id <> $1 AND expires_at > now()
           AND redis_at > now() - $2::float8 * interval '1 millisecond')";

/// How much later than a cut-off node another must have heard Redis for the cut to be the
/// node's own: past a heartbeat (each node hears its own every second) and the moment
/// a node takes to find its link silent or closed.
pub(in crate::db::pg) const HEARD_LATER: Duration = Duration::from_secs(2);

/// Whether a node other than this one, alive, has heard Redis later than `HEARD_LATER`
/// after this one last did (`cut_off_for` ago): then Redis is up and this node's link to
/// it is not, and its games are better run by the others.
fn others_hear_redis(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
    cut_off_for: Duration,
) -> DbResult<bool> {
    let Some(since) = cut_off_for.checked_sub(HEARD_LATER) else {
        return Ok(false);
    };
    let select = cache.get(c, OTHERS_HEAR_REDIS)?;
    let since_ms = since.as_millis() as f64;
    Ok(c.query_one(&select, &[&leases.node_id, &since_ms])?.get(0))
}

/// Leases naming this node at its epoch that it does not know it holds: a claim's, a
/// wake's or a new game's commit applied while its answer was lost, or a game started as
/// the node stopped its games. Nobody runs those games, and while the node's row is renewed
/// nobody may claim them. Found by a scan every `ORPHAN_SCAN_EVERY` renewals; one seen at
/// two scans in a row (its token unchanged) is released, its row left at no epoch (lapsed),
/// so that the next claim, this node's or another's, takes the game and replays its log.
/// Two scans, because a new game's or a claim's lease is held a moment after its commit.
#[derive(Debug, Default)]
pub(in crate::db::pg) struct Orphans {
    renewals: u32,
    /// Seen at the last scan: each game's token.
    suspects: HashMap<String, i64>,
}

/// Renewals from one orphan scan to the next (20 s at the default lease).
pub(crate) const ORPHAN_SCAN_EVERY: u32 = 10;

/// The statement of the orphan scan: `$1` the node. Its leases at its epoch, one range
/// of the index on (node_id, epoch).
pub(in crate::db::pg) const OWN_LEASES: &str = "SELECT l.game_id, l.token
     FROM game_leases l JOIN node_leases n ON n.node_id = l.node_id AND l.epoch = n.epoch
     WHERE l.node_id = $1";

/// The statement that releases an orphan: `$1` the game, `$2` the node, `$3` the token.
pub(in crate::db::pg) const RELEASE_ORPHAN: &str =
    "UPDATE game_leases SET epoch = -1 WHERE game_id = $1 AND node_id = $2 AND token = $3";

impl Orphans {
    /// Every `ORPHAN_SCAN_EVERY` renewals: scans for orphans, and releases those seen
    /// twice; how many.
    fn scan(
        &mut self,
        c: &mut impl GenericClient,
        cache: &mut Cache,
        leases: &Leases,
    ) -> DbResult<usize> {
        self.renewals += 1;
        if !self.renewals.is_multiple_of(ORPHAN_SCAN_EVERY) {
            return Ok(0);
        }
        let select = cache.get(c, OWN_LEASES)?;
        let mut now = HashMap::new();
        for row in c.query(&select, &[&leases.node_id])? {
            let (id, token): (String, i64) = (row.get(0), row.get(1));
            let known = id
                .parse::<GameId>()
                .map_or(true, |game_id| leases.knows(&game_id));
            if !known {
                now.insert(id, token);
            }
        }
        let release = cache.get(c, RELEASE_ORPHAN)?;
        let mut released = 0;
        for (id, token) in &now {
            if self.suspects.get(id) != Some(token) {
                continue;
            }
            if c.execute(&release, &[id, &leases.node_id, token])? == 1 {
                tracing::warn!(game_id = %id, "a lease of this node that it did not know it held is released, for a claim to take");
                released += 1;
            }
        }
        self.suspects = now;
        Ok(released)
    }
}

/// What a renewal found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Renewed {
    /// Games whose lease is lost (claimed by another node, or left in an older epoch).
    pub lost: Vec<GameId>,
    /// The node, cut off from Redis while another node hears it, gave all its leases
    /// up (its row lapsed now): every game here is to stop, for the others to claim.
    pub given_back: bool,
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
///
/// A node cut off from Redis (`cut_off_for`) while another node hears it gives its leases
/// up instead (`Renewed::given_back`): players on other nodes cannot reach its games, and
/// its clocks would run on them.
pub(in crate::db::pg) fn renew(
    c: &mut impl GenericClient,
    cache: &mut Cache,
    leases: &Leases,
    chunk: usize,
    cut_off_for: Option<Duration>,
    orphans: &mut Orphans,
) -> DbResult<Renewed> {
    let (ids, tokens) = leases.columns();
    renew_node(c, cache, leases, Some(cut_off_for.unwrap_or_default()))?;
    orphans.scan(c, cache, leases)?;
    if let Some(cut_off_for) = cut_off_for {
        if others_hear_redis(c, cache, leases, cut_off_for)? {
            let update = cache.get(c, GIVE_UP)?;
            c.execute(&update, &[&leases.node_id])?;
            return Ok(Renewed {
                lost: Vec::new(),
                given_back: true,
            });
        }
    }
    if ids.is_empty() {
        return Ok(Renewed::default());
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
    Ok(Renewed {
        lost,
        given_back: false,
    })
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
