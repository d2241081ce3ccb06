//! Two players taken for a game that no pool paired: a seek or challenge accepted, or a
//! rematch; or one player alone, for a game against the computer. One script marks both seating and takes both out of every pool, as a pairing
//! takes its two, so that no pool on any node pairs either of them as the game seats
//! them (a pooled player may have a challenge accepted, or offer a rematch, on any node).

use ::redis::Value;
use elementals_protocol::messages::GameId;

use super::{SharedError, SharedPools, SEATING};
use crate::record::AccountId;

/// KEYS: the acceptor's seating mark, the other player's, the cluster's set of pools, the
/// offers' hash (a seek or challenge only). ARGV: their accounts, the marks' life in ms,
/// the new game (the marks' value), a finished game whose marks hold nobody (a rematch's,
/// or the acceptor's last game, which their node has heard end; "" for none), the pools'
/// key prefix, the offer's id ("" for a rematch: the offer is taken off its hash).
/// Returns {1} taken, {0} the offer not open, {2, game} the acceptor marked (by that
/// game's mark), {3} the other player marked.
///
/// A player waits in one pool at most, but which one only their node knows: the script
/// looks in each pool that has members (`SMEMBERS` of their set, one `ZREM` each). Such
/// games are rare beside pairings, and pools with members are few (a preset and variant
/// each).
pub(super) const SEAT: &str = r#"
local offer = ARGV[7]
if offer ~= '' and redis.call('HEXISTS', KEYS[4], offer) == 0 then return {0} end
local over = ARGV[5]
local function busy(mark)
  local v = redis.call('GET', mark)
  return v and v ~= over
end
if busy(KEYS[1]) then return {2, redis.call('GET', KEYS[1])} end
if busy(KEYS[2]) then return {3} end
if offer ~= '' then redis.call('HDEL', KEYS[4], offer) end
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
return {1}
"#;

/// What taking two players found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Taken for this game (the marks' value), theirs to start.
    Taken(GameId),
    /// The seek or challenge is not open any more (accepted, withdrawn, or never made).
    NotOpen,
    /// The acceptor is being seated in another game (this one, if their mark names it).
    AcceptorSeating(Option<GameId>),
    /// The maker (of the seek or challenge, or the rematch's first offer) is being seated
    /// in another game.
    MakerSeating,
}

impl SharedPools {
    /// Takes `acceptor` and `maker` for a new game (see `SEAT`): with offer `(hash, id)`
    /// taken off its hash, or for a rematch; marks of game `finished`, which is over, hold
    /// neither.
    pub(super) async fn seat(
        &self,
        offer: Option<(String, u64)>,
        (acceptor, maker): (AccountId, AccountId),
        finished: Option<GameId>,
    ) -> Result<Taken, SharedError> {
        let game = GameId::new_random_from(rand::random());
        let mut con = self.con();
        let mut call = self.seat.prepare_invoke();
        call.key(format!("{}{acceptor}", self.seating_prefix()))
            .key(format!("{}{maker}", self.seating_prefix()))
            .key(self.pools_set());
        let offer_id = match offer {
            Some((hash, id)) => {
                call.key(hash);
                id.to_string()
            }
            None => String::new(),
        };
        call.arg(acceptor)
            .arg(maker)
            .arg(SEATING.as_millis() as u64)
            .arg(game.to_string())
            .arg(finished.map(|g| g.to_string()).unwrap_or_default())
            .arg(self.pools_prefix())
            .arg(offer_id);
        let got: Vec<Value> = self.timed(call.invoke_async(&mut con)).await?;
        match got.first() {
            Some(Value::Int(0)) => Ok(Taken::NotOpen),
            Some(Value::Int(1)) => Ok(Taken::Taken(game)),
            Some(Value::Int(2)) => {
                let held = match got.get(1) {
                    Some(Value::BulkString(b)) => std::str::from_utf8(b).ok(),
                    _ => None,
                };
                Ok(Taken::AcceptorSeating(held.and_then(|g| g.parse().ok())))
            }
            Some(Value::Int(3)) => Ok(Taken::MakerSeating),
            _ => Err(SharedError::Malformed),
        }
    }

    /// Takes `account` alone for a new game (against the computer), whatever pool it
    /// waits in: `Taken` with the game's id, or `AcceptorSeating` if another game is
    /// seating them (`finished`'s mark, of a game over, holds nobody). `SEAT` with the
    /// player as both of its two: marked once, taken out of every pool once.
    pub async fn take_alone(
        &self,
        account: AccountId,
        finished: Option<GameId>,
    ) -> Result<Taken, SharedError> {
        self.seat(None, (account, account), finished).await
    }

    /// Seats `acceptor` and `other` in a rematch of `finished`, whatever pool either waits
    /// in: `Taken` with the rematch's id, or which of them another game is seating.
    pub async fn seat_rematch(
        &self,
        acceptor: AccountId,
        other: AccountId,
        finished: GameId,
    ) -> Result<Taken, SharedError> {
        self.seat(None, (acceptor, other), Some(finished)).await
    }
}
