//! The pools of a cluster (issue 26), shared by every node's lobby in Redis.
//!
//! A pool is a sorted set by rating (members: account ids) beside a hash holding, per
//! member, when it joined (`<id>:t`, ms of Redis's clock, the one clock every node shares)
//! and what the node that pairs it needs to start the game (`<id>:e`: its account, its
//! connection, which names its node, and its `PlayerInfo`, as JSON), and its node
//! (`<id>:n`: a member whose node has died is swept by the first live node to see it
//! dead, `sweep`, or dropped by a pairing that meets it before).
//! Joining, pairing and leaving are each one Lua script or transaction, so a member is
//! taken by one pairing only, whichever node runs it. Pairing keeps `pairing::Pool`'s rules: the nearest
//! neighbour on each side (of those not marked seating: `pair.rs`), compatible when the distance is within the wider of the two
//! windows (`pairing::window`) at that moment, the nearer at equal distance the lower id.
//!
//! Each node's lobby pairs its own waiting members (one script call each per tick,
//! longest-waiting first) and a newcomer on arrival; the node that pairs starts the game
//! and reaches the other player through the bus.
//!
//! Open seeks and challenges are here too (`offers`); a dead node's entries are swept
//! (`sweep`).

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{Script, Value};
use elementals_protocol::rules::Variant;

use crate::bus::redis::Keys;
use crate::record::AccountId;

/// How long a lobby waits for Redis before it answers `internal`.
pub const REDIS_WAIT: Duration = Duration::from_secs(3);

/// How long a player stays marked seating once a pairing, the acceptance of a seek or
/// challenge, or a rematch has taken them (`{cluster}:seating:{account}`, its value the
/// game's id): no other pairing or acceptance takes them meanwhile. Far past the time
/// every node takes to hear of the game (one PUBLISH), after which it is seated in every
/// node's registry. A mark may go sooner once its game is over, the player free again:
/// their own node lifts it when they queue again (`pair`) or accept a seek or challenge,
/// and a rematch of that game counts it as no mark.
pub const SEATING: Duration = Duration::from_secs(2);

/// Every pool's size, forgetting pools that are empty. KEYS: the cluster's set of pools.
/// ARGV: the pools' key prefix. Returns {pool, size, ...}.
const COUNT: &str = r#"
local out = {}
for _, p in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local n = redis.call('ZCARD', ARGV[1] .. p)
  if n == 0 then redis.call('SREM', KEYS[1], p) else
    out[#out + 1] = p
    out[#out + 1] = n
  end
end
return out
"#;

/// A pool, as every node names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedKey {
    pub variant: Variant,
    pub preset: String,
    pub rated: bool,
}

impl SharedKey {
    fn name(&self) -> String {
        let v = &self.variant;
        let rated = if self.rated { "r" } else { "u" };
        format!(
            "{}-{}-{}:{}:{rated}",
            v.number, v.range, v.distance, self.preset
        )
    }

    fn parse(name: &str) -> Option<SharedKey> {
        let mut parts = name.split(':');
        let mut numbers = parts.next()?.split('-').map(|n| n.parse::<u16>().ok());
        let variant = Variant {
            number: numbers.next()??,
            range: numbers.next()??,
            distance: numbers.next()??,
        };
        let preset = parts.next()?.to_owned();
        let rated = match parts.next()? {
            "r" => true,
            "u" => false,
            _ => return None,
        };
        Some(SharedKey {
            variant,
            preset,
            rated,
        })
    }
}

/// Why Redis did not answer.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("Redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("Redis did not answer in time")]
    Timeout,
    #[error("Redis answered what the lobby cannot read")]
    Malformed,
}

/// The cluster's pools, reached from one node's lobby.
#[derive(Clone)]
pub struct SharedPools {
    conn: conn::Conn,
    prefix: String,
    /// This node's number: the high bits of the seek and challenge ids it gives, so that
    /// ids are unique in the cluster.
    node: u16,
    pair: Script,
    count: Script,
    find_name: Script,
    seat: Script,
    sweep: Script,
}

impl std::fmt::Debug for SharedPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPools")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl SharedPools {
    /// Connects to `redis_url` for the cluster `cluster` (every key is prefixed by it), as
    /// node number `node`.
    pub async fn connect(
        redis_url: &str,
        cluster: &str,
        node: u16,
    ) -> Result<SharedPools, SharedError> {
        let client = ::redis::Client::open(redis_url)?;
        Ok(SharedPools {
            conn: conn::Conn::open(client).await?,
            prefix: cluster.to_owned(),
            node,
            pair: Script::new(pair::PAIR),
            count: Script::new(COUNT),
            find_name: Script::new(offers::FIND_NAME),
            seat: Script::new(seat::SEAT),
            sweep: Script::new(sweep::SWEEP),
        })
    }

    fn con(&self) -> MultiplexedConnection {
        self.conn.get()
    }

    async fn timed<T>(
        &self,
        fut: impl std::future::Future<Output = ::redis::RedisResult<T>>,
    ) -> Result<T, SharedError> {
        self.conn.timed(fut).await
    }

    /// Makes the connection to Redis again if it was lost (each lobby tick).
    pub async fn heal(&self) {
        self.conn.heal().await;
    }

    /// Whether Redis answered the last request (or its connection was made again since):
    /// what can wait is not sent to a Redis known out of reach, where each request could
    /// take `REDIS_WAIT`.
    pub fn reachable(&self) -> bool {
        !self.conn.is_broken()
    }

    /// The first id this node gives seeks and challenges (its number in the high bits).
    pub fn first_id(&self) -> u64 {
        u64::from(self.node) << sweep::ID_NODE_SHIFT
    }

    /// The nodes' owner keys, but for the node's number: a node is alive while its key is
    /// (`bus::redis::claim_number`).
    fn owner_prefix(&self) -> String {
        let owner = Keys::number_owner(&self.prefix, 0);
        owner.strip_suffix('0').unwrap_or(&owner).to_owned()
    }

    /// Whether node `node` is alive (0: a connection no node addresses, as in tests).
    pub async fn node_alive(&self, node: u16) -> Result<bool, SharedError> {
        if node == 0 {
            return Ok(true);
        }
        let mut con = self.con();
        let alive: bool = self
            .timed(
                ::redis::cmd("EXISTS")
                    .arg(format!("{}{node}", self.owner_prefix()))
                    .query_async(&mut con),
            )
            .await?;
        Ok(alive)
    }

    /// The seating marks' keys but for the account (see `SEATING`).
    fn seating_prefix(&self) -> String {
        format!("{}:seating:", self.prefix)
    }

    fn pools_prefix(&self) -> String {
        format!("{}:pool:", self.prefix)
    }

    fn pools_set(&self) -> String {
        format!("{}:pools", self.prefix)
    }

    fn zset(&self, key: &SharedKey) -> String {
        format!("{}{}", self.pools_prefix(), key.name())
    }

    fn hash(&self, key: &SharedKey) -> String {
        format!("{}:m", self.zset(key))
    }

    /// `account` leaves pool `key`; returns whether it was waiting there.
    pub async fn leave(&self, key: &SharedKey, account: AccountId) -> Result<bool, SharedError> {
        let mut con = self.con();
        let (removed, _): (u32, u32) = self
            .timed(
                ::redis::pipe()
                    .atomic()
                    .zrem(self.zset(key), account)
                    .hdel(
                        self.hash(key),
                        &[
                            format!("{account}:t"),
                            format!("{account}:e"),
                            format!("{account}:n"),
                        ],
                    )
                    .query_async(&mut con),
            )
            .await?;
        Ok(removed > 0)
    }

    /// Whether `account` waits in pool `key` (no node has paired it, nor has it left).
    pub async fn is_waiting(
        &self,
        key: &SharedKey,
        account: AccountId,
    ) -> Result<bool, SharedError> {
        let mut con = self.con();
        let score: Option<f64> = self
            .timed(
                ::redis::cmd("ZSCORE")
                    .arg(self.zset(key))
                    .arg(account)
                    .query_async(&mut con),
            )
            .await?;
        Ok(score.is_some())
    }

    /// Whether `account` is marked seating (see `SEATING`).
    pub async fn is_seating(&self, account: AccountId) -> Result<bool, SharedError> {
        let mut con = self.con();
        self.timed(
            ::redis::cmd("EXISTS")
                .arg(format!("{}{account}", self.seating_prefix()))
                .query_async(&mut con),
        )
        .await
    }

    /// Every pool of the cluster that has someone waiting, with how many.
    pub async fn counts(&self) -> Result<Vec<(SharedKey, u32)>, SharedError> {
        let mut con = self.con();
        let mut call = self.count.prepare_invoke();
        call.key(self.pools_set()).arg(self.pools_prefix());
        let got: Vec<Value> = self.timed(call.invoke_async(&mut con)).await?;
        let mut out = Vec::new();
        for pair in got.chunks(2) {
            if let [Value::BulkString(name), Value::Int(n)] = pair {
                let key = std::str::from_utf8(name)
                    .ok()
                    .and_then(SharedKey::parse)
                    .ok_or(SharedError::Malformed)?;
                out.push((key, u32::try_from(*n).unwrap_or(u32::MAX)));
            }
        }
        Ok(out)
    }
}

mod conn;
mod offers;
mod pair;
mod seat;
mod sweep;

pub use offers::SharedChallenge;
pub use pair::Paired;
pub use seat::Taken;
pub use sweep::Swept;

#[cfg(test)]
mod tests;
