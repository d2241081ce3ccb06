//! Joining and pairing in a pool of the cluster's (one Lua script), and what a member's
//! node stores there for the node that pairs it.

use std::time::Duration;

use ::redis::Value;
use elementals_protocol::messages::{GameId, PlayerInfo};
use serde::{Deserialize, Serialize};

use super::{SharedError, SharedKey, SharedPools, SEATING};
use crate::bus::redis::node_of;
use crate::bus::ConnId;
use crate::lobby::pairing::{BASE_WINDOW, MAX_WINDOW, WIDEN_PER_S};
use crate::lobby::Member;
use crate::record::AccountId;

/// Adds a member (if `ARGV[2]` holds its entry) and pairs it with its closest compatible
/// neighbour. KEYS: the pool's sorted set, its hash, the cluster's set of pools. ARGV:
/// id, entry ("" to pair a member already waiting), rating, base window, widening per
/// second, widest window, the pool's name, the member's node, the prefix of the nodes'
/// owner keys (a neighbour whose node's key has expired is dropped), the prefix of the
/// seating marks, their life in ms, the game a pairing now starts (the marks' value), a
/// game the member's node has heard end ("" for none: the member's own mark, if of that
/// game, is lifted), how many members on each side a pairing looks at (`SCANNED`).
/// Returns {0} when the member is not waiting (taken, or gone), {1, waiting, waited_ms}
/// when it waits on, {1, waiting, waited_ms, game} when a mark of that game holds it,
/// {2, other id, other's entry} when paired (both have left the pool and are marked
/// seating), {3} when it already waits there.
///
/// A marked member (a seek or challenge it took part in was just accepted, or it joined
/// before its last game's mark lapsed) is not paired: its node withdraws it, lifts the
/// mark of a game it has heard end, or it is paired once the mark lapses. A neighbour so
/// marked, or of a dead node, is passed over for the next on its side, up to `SCANNED`
/// of them: the nearest unmarked one, as if the marked were not there.
pub(super) const PAIR: &str = r#"
local z, h, pools = KEYS[1], KEYS[2], KEYS[3]
local id, entry = ARGV[1], ARGV[2]
local base, widen, widest = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local seating, hold, game, over = ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local scanned = tonumber(ARGV[14])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if entry ~= '' then
  if redis.call('ZSCORE', z, id) then return {3} end
  redis.call('ZADD', z, ARGV[3], id)
  redis.call('HSET', h, id .. ':t', now, id .. ':e', entry, id .. ':n', ARGV[8])
  redis.call('SADD', pools, ARGV[7])
end
local rank = redis.call('ZRANK', z, id)
if not rank then return {0} end
if over ~= '' and redis.call('GET', seating .. id) == over then
  redis.call('DEL', seating .. id)
end
local function window(since)
  local w = base + widen * math.max(0, now - since) / 1000
  if w > widest then w = widest end
  return w
end
local function forget(m)
  redis.call('ZREM', z, m)
  redis.call('HDEL', h, m .. ':t', m .. ':e', m .. ':n')
end
local me = tonumber(redis.call('ZSCORE', z, id))
local since = tonumber(redis.call('HGET', h, id .. ':t')) or now
local held = redis.call('GET', seating .. id)
if held then return {1, redis.call('ZCARD', z), now - since, held} end
local mine = window(since)
local best, bestd
-- Whether `other` settles its side: the nearest member there neither marked nor of a
-- dead node (taken if compatible), or one past every window.
local dead = {}
local function settles(other, score)
  local d = math.abs(tonumber(score) - me)
  if d > widest then return true end
  local node = redis.call('HGET', h, other .. ':n')
  if node and redis.call('EXISTS', ARGV[9] .. node) == 0 then
    -- Its node has died: it waits no more (forgotten once the ranks are read).
    dead[#dead + 1] = other
    return false
  end
  if redis.call('EXISTS', seating .. other) == 1 then return false end
  local theirs = window(tonumber(redis.call('HGET', h, other .. ':t')) or now)
  if d <= math.max(mine, theirs)
    and (not best or d < bestd or (d == bestd and tonumber(other) < tonumber(best))) then
    best, bestd = other, d
  end
  return true
end
-- One side, from rank `first` towards rank `last`: the nearest alone (it settles the side
-- but for a marked or dead member), then the rest in one read.
local function side(first, last, step)
  local got = redis.call('ZRANGE', z, first, first, 'WITHSCORES')
  if #got == 0 or settles(got[1], got[2]) or first == last then return end
  local rest = redis.call('ZRANGE', z, math.min(first + step, last),
    math.max(first + step, last), 'WITHSCORES')
  local from, to = 1, #rest - 1
  if step < 0 then from, to = #rest - 1, 1 end
  for i = from, to, 2 * step do
    if settles(rest[i], rest[i + 1]) then return end
  end
end
if rank > 0 then side(rank - 1, math.max(rank - scanned, 0), -1) end
side(rank + 1, rank + scanned, 1)
for _, m in ipairs(dead) do forget(m) end
if not best then return {1, redis.call('ZCARD', z), now - since} end
local found = redis.call('HGET', h, best .. ':e')
forget(id)
forget(best)
redis.call('SET', seating .. id, game, 'PX', hold)
redis.call('SET', seating .. best, game, 'PX', hold)
return {2, best, found}
"#;

/// How many members on each side of a member a pairing looks at for the nearest one not
/// marked seating: a few suffice, and the script stays a few dozen calls.
///
/// Marked members in a pool are few and brief. Every script that marks a player takes
/// them out of every pool in the same step; a player is in a pool marked only if they
/// joined after that step, within the mark's 2 s: as their last game ended at once (their
/// node lifts the mark at its next tick once it hears the end), or as a join that raced
/// the step and put them back (their node withdraws them at its next tick, seated:
/// `withdraw_seated`). And every mark lapses 2 s after it is set, never renewed. So more
/// than `SCANNED` marked members in a row beside a member that could be paired past them
/// hold it for 2 s at most: not paired on joining, it is paired by its node's tick.
const SCANNED: u32 = 8;

/// What a member's node stores for the node that pairs it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    account: AccountId,
    conn: ConnId,
    info: PlayerInfo,
}

/// What a pairing attempt found.
#[derive(Debug)]
pub enum Paired {
    /// The member is not in the pool: another node paired it, or it left.
    NotWaiting,
    /// It waits on, with `waiting` in its pool, for `waited`; `held` by the seating mark
    /// of that game, if one holds it.
    Waiting {
        waiting: u32,
        waited: Duration,
        held: Option<GameId>,
    },
    /// Paired with this member, who has left the pool with it, for this game (both are
    /// marked seating in it).
    With(Member, GameId),
    /// The account already waits in this pool (from another connection).
    AlreadyWaiting,
}

impl SharedPools {
    async fn run_pair(
        &self,
        key: &SharedKey,
        account: AccountId,
        (entry, rating, conn): (&str, f64, ConnId),
        over: Option<GameId>,
    ) -> Result<Paired, SharedError> {
        let game = GameId::new_random_from(rand::random());
        let mut con = self.con();
        let mut call = self.pair.prepare_invoke();
        call.key(self.zset(key))
            .key(self.hash(key))
            .key(self.pools_set())
            .arg(account)
            .arg(entry)
            .arg(rating)
            .arg(BASE_WINDOW)
            .arg(WIDEN_PER_S)
            .arg(MAX_WINDOW)
            .arg(key.name())
            .arg(node_of(conn))
            .arg(self.owner_prefix())
            .arg(self.seating_prefix())
            .arg(SEATING.as_millis() as u64)
            .arg(game.to_string())
            .arg(over.map(|g| g.to_string()).unwrap_or_default())
            .arg(SCANNED);
        let got: Vec<Value> = self.timed(call.invoke_async(&mut con)).await?;
        let int = |v: Option<&Value>| match v {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        };
        let bytes = |v: Option<&Value>| match v {
            Some(Value::BulkString(b)) => Some(b.clone()),
            _ => None,
        };
        match int(got.first()) {
            Some(0) => Ok(Paired::NotWaiting),
            Some(1) => {
                let waiting = int(got.get(1)).ok_or(SharedError::Malformed)?;
                let waited = int(got.get(2)).ok_or(SharedError::Malformed)?;
                // A mark that names no game holds it all the same, `held` or not.
                let held = bytes(got.get(3))
                    .and_then(|b| String::from_utf8(b).ok())
                    .and_then(|g| g.parse::<GameId>().ok());
                Ok(Paired::Waiting {
                    waiting: u32::try_from(waiting).unwrap_or(u32::MAX),
                    waited: Duration::from_millis(u64::try_from(waited).unwrap_or(0)),
                    held,
                })
            }
            Some(2) => {
                let entry = bytes(got.get(2)).ok_or(SharedError::Malformed)?;
                let entry: Entry =
                    serde_json::from_slice(&entry).map_err(|_| SharedError::Malformed)?;
                let other = Member {
                    account: entry.account,
                    info: entry.info,
                    conn_id: entry.conn,
                };
                Ok(Paired::With(other, game))
            }
            Some(3) => Ok(Paired::AlreadyWaiting),
            _ => Err(SharedError::Malformed),
        }
    }

    /// `member` joins pool `key` and is paired at once if it can be.
    pub async fn join(&self, key: &SharedKey, member: &Member) -> Result<Paired, SharedError> {
        let entry = serde_json::to_string(&Entry {
            account: member.account,
            conn: member.conn_id,
            info: member.info.clone(),
        })
        .map_err(|_| SharedError::Malformed)?;
        let joining = (entry.as_str(), member.info.rating, member.conn_id);
        self.run_pair(key, member.account, joining, None).await
    }

    /// Pairs `account`, waiting in `key`, if it can be now; first lifting its own seating
    /// mark if that is of game `over`, which its node has heard end.
    pub async fn pair(
        &self,
        key: &SharedKey,
        account: AccountId,
        over: Option<GameId>,
    ) -> Result<Paired, SharedError> {
        self.run_pair(key, account, ("", 0.0, 0), over).await
    }
}
