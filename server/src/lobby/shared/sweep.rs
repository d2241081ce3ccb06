//! A dead node's pool members, seeks and challenges leave the cluster's Redis as soon as a
//! live node finds it dead (its owner key expired), rather than when a pairing or an
//! acceptance meets them: `lobby_counts` and `list_seeks` stop counting them, and the
//! players it challenged hear the challenge is cancelled.
//!
//! Every node's lobby runs `SWEEP` at each tick. The script adds the node's own number to
//! the set of nodes with lobby state (`NAME:lobby-nodes`: a Redis emptied meanwhile has it
//! back within a tick) and looks up each number in it; the common case is a handful of
//! `EXISTS`. A number whose owner key has gone is taken out of the set and its entries
//! swept in the same script: the sweep is atomic, and done once, by whichever node runs
//! it first.

use ::redis::Value;
use serde::Deserialize;

use super::{SharedError, SharedPools};
use crate::bus::ConnId;

/// KEYS: the set of nodes with lobby state, the set of pools, the seeks hash, the
/// challenges hash. ARGV: this node's number (never swept by itself: its owner key may be
/// briefly missing after Redis restarted empty), the owner keys' prefix, the pools' key
/// prefix, the number of bits below a seek's or challenge's node number. Returns {members
/// swept, seeks swept, the swept challenges' entries...}.
pub(super) const SWEEP: &str = r#"
local nodes, pools, seeks, challenges = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
redis.call('SADD', nodes, ARGV[1])
local dead, any = {}, false
for _, n in ipairs(redis.call('SMEMBERS', nodes)) do
  if n ~= ARGV[1] and n ~= '0' and redis.call('EXISTS', ARGV[2] .. n) == 0 then
    dead[n] = true
    any = true
    redis.call('SREM', nodes, n)
  end
end
if not any then return {0, 0} end
local members = 0
for _, p in ipairs(redis.call('SMEMBERS', pools)) do
  local z = ARGV[3] .. p
  local h = z .. ':m'
  local fields = redis.call('HGETALL', h)
  for i = 1, #fields, 2 do
    local id = string.match(fields[i], '^(.*):n$')
    if id and dead[fields[i + 1]] then
      members = members + redis.call('ZREM', z, id)
      redis.call('HDEL', h, id .. ':t', id .. ':e', id .. ':n')
    end
  end
end
local shift = 2 ^ tonumber(ARGV[4])
local function made_on_dead(id)
  return dead[string.format('%d', math.floor(tonumber(id) / shift))]
end
local swept_seeks = 0
for _, id in ipairs(redis.call('HKEYS', seeks)) do
  if made_on_dead(id) then
    redis.call('HDEL', seeks, id)
    swept_seeks = swept_seeks + 1
  end
end
local out = {members, swept_seeks}
for _, id in ipairs(redis.call('HKEYS', challenges)) do
  if made_on_dead(id) then
    out[#out + 1] = redis.call('HGET', challenges, id)
    redis.call('HDEL', challenges, id)
  end
end
return out
"#;

/// The bits below the node's number in a seek's or challenge's id (`SharedPools::first_id`).
pub(super) const ID_NODE_SHIFT: u32 = 36;

/// What one sweep took away.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub members: u32,
    pub seeks: u32,
    /// The swept challenges: their ids, and where their challenged players were told.
    pub challenges: Vec<(u64, ConnId)>,
}

/// The part of a stored challenge the sweeping node needs.
#[derive(Deserialize)]
struct Stored {
    challenge: Id,
    to_conn: ConnId,
}

#[derive(Deserialize)]
struct Id {
    challenge_id: u64,
}

impl SharedPools {
    /// Sweeps the entries of every node found dead since the last sweep (see the module).
    pub async fn sweep_dead(&self) -> Result<Swept, SharedError> {
        let mut con = self.con();
        let mut call = self.sweep.prepare_invoke();
        call.key(format!("{}:lobby-nodes", self.prefix))
            .key(self.pools_set())
            .key(self.seeks_hash())
            .key(self.challenges_hash())
            .arg(self.node)
            .arg(self.owner_prefix())
            .arg(self.pools_prefix())
            .arg(ID_NODE_SHIFT);
        let got: Vec<Value> = self.timed(call.invoke_async(&mut con)).await?;
        let int = |v: Option<&Value>| match v {
            Some(Value::Int(n)) => u32::try_from(*n).ok(),
            _ => None,
        };
        let mut swept = Swept {
            members: int(got.first()).ok_or(SharedError::Malformed)?,
            seeks: int(got.get(1)).ok_or(SharedError::Malformed)?,
            challenges: Vec::new(),
        };
        for entry in got.iter().skip(2) {
            // An entry this version cannot read is swept all the same, unannounced.
            if let Value::BulkString(bytes) = entry {
                if let Ok(stored) = serde_json::from_slice::<Stored>(bytes) {
                    let id = stored.challenge.challenge_id;
                    swept.challenges.push((id, stored.to_conn));
                }
            }
        }
        Ok(swept)
    }
}
