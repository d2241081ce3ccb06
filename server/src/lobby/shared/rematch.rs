//! A rematch's seating in the cluster: both players marked seating and taken out of every
//! pool in one script, as a pairing takes its two, so that no pool on any node pairs
//! either of them as the rematch seats them.

use elementals_protocol::messages::GameId;

use super::offers::Taken;
use super::{SharedError, SharedPools, SEATING};
use crate::record::AccountId;

/// KEYS: the acceptor's seating mark, the other player's, the cluster's set of pools.
/// ARGV: their accounts, the marks' life in ms, the rematch's game (the marks' value), the
/// finished game (a mark of it holds nobody: that game is over), the pools' key prefix.
/// Returns 1 seated, 2 the acceptor marked, 3 the other player marked.
///
/// A player waits in one pool at most, but which one only their node knows: the script
/// looks in each pool that has members (`SMEMBERS` of their set, one `ZREM` each). A
/// rematch is rare beside pairings, and pools with members are few (a preset and variant
/// each).
pub(super) const SEAT: &str = r#"
local over = ARGV[5]
local function busy(mark)
  local v = redis.call('GET', mark)
  return v and v ~= over
end
if busy(KEYS[1]) then return 2 end
if busy(KEYS[2]) then return 3 end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3])
for _, p in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local z = ARGV[6] .. p
  for i = 1, 2 do
    if redis.call('ZREM', z, ARGV[i]) == 1 then
      redis.call('HDEL', z .. ':m', ARGV[i] .. ':t', ARGV[i] .. ':e', ARGV[i] .. ':n')
    end
  end
end
return 1
"#;

impl SharedPools {
    /// Seats `acceptor` and `other` in a rematch of `finished`, whatever pool either
    /// waits in (see `SEAT`): `Taken` with the rematch's id, or which of them another
    /// pairing or acceptance is seating.
    pub async fn seat_rematch(
        &self,
        acceptor: AccountId,
        other: AccountId,
        finished: GameId,
    ) -> Result<Taken, SharedError> {
        let game = GameId::new_random_from(rand::random());
        let mut con = self.con();
        let mut call = self.rematch.prepare_invoke();
        call.key(format!("{}{acceptor}", self.seating_prefix()))
            .key(format!("{}{other}", self.seating_prefix()))
            .key(self.pools_set())
            .arg(acceptor)
            .arg(other)
            .arg(SEATING.as_millis() as u64)
            .arg(game.to_string())
            .arg(finished.to_string())
            .arg(self.pools_prefix());
        let got: i64 = self.timed(call.invoke_async(&mut con)).await?;
        match got {
            1 => Ok(Taken::Taken(game)),
            2 => Ok(Taken::AcceptorSeating),
            3 => Ok(Taken::MakerSeating),
            _ => Err(SharedError::Malformed),
        }
    }
}
