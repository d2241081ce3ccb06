//! Open seeks and challenges in the cluster's Redis (hashes by id, JSON), and who is
//! online by name (the presence the bus keeps): what a lobby needs to list and accept
//! another node's seeks and to challenge a player on another node.

use elementals_protocol::messages::{Challenge, GameId, Seek};
use serde::{Deserialize, Serialize};

use super::seat::Taken;
use super::{SharedError, SharedPools};
use crate::bus::redis::{node_of, Keys};
use crate::bus::ConnId;
use crate::lobby::Member;
use crate::record::AccountId;

/// An open seek as every node lists it, with its maker's account and connection.
#[derive(Debug, Serialize, Deserialize)]
struct SeekEntry {
    seek: Seek,
    account: AccountId,
    conn: ConnId,
}

/// An open challenge, for the node of either player.
#[derive(Debug, Serialize, Deserialize)]
struct ChallengeEntry {
    challenge: Challenge,
    from: AccountId,
    from_conn: ConnId,
    to: AccountId,
    to_conn: ConnId,
}

/// A challenge as stored for the cluster: what `Challenge` says, and where both players
/// are.
#[derive(Debug, Clone)]
pub struct SharedChallenge {
    pub challenge: Challenge,
    pub from: Member,
    pub to: AccountId,
    pub to_conn: ConnId,
}

/// The entry of a user online by name, if their node is alive. KEYS: the names hash.
/// ARGV: the lower-cased name, the node owner keys' prefix.
pub(super) const FIND_NAME: &str = r#"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
local node = string.match(v, '^(%d+):')
if not node or redis.call('EXISTS', ARGV[2] .. node) == 0 then return false end
return v
"#;

impl SharedPools {
    /// Takes open offer `id` of `hash` for `acceptor`, against `maker`: both marked seating
    /// and out of every pool in the same step, unless either is marked already (a pool's
    /// pairing, or another acceptance, took them a moment ago; see `seat.rs`) but for
    /// marks of game `over`, which the acceptor's node has heard end.
    async fn take_for(
        &self,
        (hash, id): (String, u64),
        acceptor: AccountId,
        maker: AccountId,
        over: Option<GameId>,
    ) -> Result<Taken, SharedError> {
        self.seat(Some((hash, id)), (acceptor, maker), over).await
    }

    /// Takes seek `seek_id`, made by `maker`, for `acceptor` (see `take_for`).
    pub async fn accept_seek(
        &self,
        seek_id: u64,
        acceptor: AccountId,
        maker: AccountId,
        over: Option<GameId>,
    ) -> Result<Taken, SharedError> {
        self.take_for((self.seeks_hash(), seek_id), acceptor, maker, over)
            .await
    }

    /// Takes challenge `id`, made by `maker`, for the challenged `acceptor` (see `take_for`).
    pub async fn accept_challenge(
        &self,
        id: u64,
        acceptor: AccountId,
        maker: AccountId,
        over: Option<GameId>,
    ) -> Result<Taken, SharedError> {
        self.take_for((self.challenges_hash(), id), acceptor, maker, over)
            .await
    }

    pub(super) fn seeks_hash(&self) -> String {
        format!("{}:seeks", self.prefix)
    }

    /// Lists `seek`, made by `member` on this node, for every node.
    pub async fn put_seek(&self, seek: &Seek, member: &Member) -> Result<(), SharedError> {
        let entry = serde_json::to_string(&SeekEntry {
            seek: seek.clone(),
            account: member.account,
            conn: member.conn_id,
        })
        .map_err(|_| SharedError::Malformed)?;
        let mut con = self.con();
        self.timed(
            ::redis::cmd("HSET")
                .arg(self.seeks_hash())
                .arg(seek.seek_id)
                .arg(entry)
                .query_async::<()>(&mut con),
        )
        .await
    }

    /// Open seek `seek_id`, whichever node it was made on, with its maker.
    pub async fn get_seek(&self, seek_id: u64) -> Result<Option<(Seek, Member)>, SharedError> {
        let mut con = self.con();
        let entry: Option<Vec<u8>> = self
            .timed(
                ::redis::cmd("HGET")
                    .arg(self.seeks_hash())
                    .arg(seek_id)
                    .query_async(&mut con),
            )
            .await?;
        let Some(entry) = entry else {
            return Ok(None);
        };
        let e: SeekEntry = serde_json::from_slice(&entry).map_err(|_| SharedError::Malformed)?;
        let member = Member {
            account: e.account,
            info: e.seek.by.clone(),
            conn_id: e.conn,
        };
        Ok(Some((e.seek, member)))
    }

    /// Takes seek `seek_id` off the list: true for the one caller that took it.
    pub async fn take_seek(&self, seek_id: u64) -> Result<bool, SharedError> {
        let mut con = self.con();
        let taken: u32 = self
            .timed(
                ::redis::cmd("HDEL")
                    .arg(self.seeks_hash())
                    .arg(seek_id)
                    .query_async(&mut con),
            )
            .await?;
        Ok(taken == 1)
    }

    /// Takes seeks `ids` off the list (withdrawn by this node).
    pub async fn drop_seeks(&self, ids: &[u64]) -> Result<(), SharedError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut con = self.con();
        self.timed(
            ::redis::cmd("HDEL")
                .arg(self.seeks_hash())
                .arg(ids)
                .query_async::<()>(&mut con),
        )
        .await
    }

    /// Which of seeks `ids` are still listed (the others were accepted on another node).
    pub async fn listed(&self, ids: &[u64]) -> Result<Vec<bool>, SharedError> {
        self.present(self.seeks_hash(), ids).await
    }

    async fn present(&self, hash: String, ids: &[u64]) -> Result<Vec<bool>, SharedError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut con = self.con();
        // HMGET answers one value per field, even for one field.
        let got: Vec<Option<Vec<u8>>> = self
            .timed(
                ::redis::cmd("HMGET")
                    .arg(hash)
                    .arg(ids)
                    .query_async(&mut con),
            )
            .await?;
        Ok(got.iter().map(Option::is_some).collect())
    }

    /// The user online as `name` on any live node: their account, connection and name as
    /// signed up.
    pub async fn find_online(
        &self,
        name: &str,
    ) -> Result<Option<(AccountId, ConnId, String)>, SharedError> {
        let mut con = self.con();
        let mut call = self.find_name.prepare_invoke();
        call.key(Keys::names(&self.prefix))
            .arg(name.to_lowercase())
            .arg(self.owner_prefix());
        let entry: Option<String> = self.timed(call.invoke_async(&mut con)).await?;
        let Some(entry) = entry else {
            return Ok(None);
        };
        let mut parts = entry.splitn(4, ':').skip(1);
        let account = parts.next().and_then(|a| a.parse::<AccountId>().ok());
        let conn = parts.next().and_then(|c| c.parse::<ConnId>().ok());
        match (account, conn, parts.next()) {
            (Some(account), Some(conn), Some(name)) => Ok(Some((account, conn, name.to_owned()))),
            _ => Err(SharedError::Malformed),
        }
    }

    pub(super) fn challenges_hash(&self) -> String {
        format!("{}:challenges", self.prefix)
    }

    /// Stores challenge `c`, made on this node, for the challenged player's node.
    pub async fn put_challenge(&self, c: &SharedChallenge) -> Result<(), SharedError> {
        let entry = serde_json::to_string(&ChallengeEntry {
            challenge: c.challenge.clone(),
            from: c.from.account,
            from_conn: c.from.conn_id,
            to: c.to,
            to_conn: c.to_conn,
        })
        .map_err(|_| SharedError::Malformed)?;
        let mut con = self.con();
        self.timed(
            ::redis::cmd("HSET")
                .arg(self.challenges_hash())
                .arg(c.challenge.challenge_id)
                .arg(entry)
                .query_async::<()>(&mut con),
        )
        .await
    }

    /// Open challenge `id`, whichever node it was made on.
    pub async fn get_challenge(&self, id: u64) -> Result<Option<SharedChallenge>, SharedError> {
        let mut con = self.con();
        let entry: Option<Vec<u8>> = self
            .timed(
                ::redis::cmd("HGET")
                    .arg(self.challenges_hash())
                    .arg(id)
                    .query_async(&mut con),
            )
            .await?;
        let Some(entry) = entry else {
            return Ok(None);
        };
        let e: ChallengeEntry =
            serde_json::from_slice(&entry).map_err(|_| SharedError::Malformed)?;
        Ok(Some(SharedChallenge {
            from: Member {
                account: e.from,
                info: e.challenge.from.clone(),
                conn_id: e.from_conn,
            },
            challenge: e.challenge,
            to: e.to,
            to_conn: e.to_conn,
        }))
    }

    /// Takes challenge `id` off the store: true for the one caller that took it.
    pub async fn take_challenge(&self, id: u64) -> Result<bool, SharedError> {
        let mut con = self.con();
        let taken: u32 = self
            .timed(
                ::redis::cmd("HDEL")
                    .arg(self.challenges_hash())
                    .arg(id)
                    .query_async(&mut con),
            )
            .await?;
        Ok(taken == 1)
    }

    /// Takes challenges `ids` off the store (withdrawn by this node).
    pub async fn drop_challenges(&self, ids: &[u64]) -> Result<(), SharedError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut con = self.con();
        self.timed(
            ::redis::cmd("HDEL")
                .arg(self.challenges_hash())
                .arg(ids)
                .query_async::<()>(&mut con),
        )
        .await
    }

    /// Which of challenges `ids` are still open (the others were answered on another
    /// node).
    pub async fn open_challenges(&self, ids: &[u64]) -> Result<Vec<bool>, SharedError> {
        self.present(self.challenges_hash(), ids).await
    }

    /// Every node's open seeks, oldest id first per node.
    pub async fn seeks(&self) -> Result<Vec<Seek>, SharedError> {
        let mut con = self.con();
        let entries: Vec<Vec<u8>> = self
            .timed(
                ::redis::cmd("HVALS")
                    .arg(self.seeks_hash())
                    .query_async(&mut con),
            )
            .await?;
        let entries: Vec<SeekEntry> = entries
            .iter()
            .filter_map(|e| serde_json::from_slice::<SeekEntry>(e).ok())
            .collect();
        // A dead node's seeks are listed no more (one look per node).
        let mut alive = std::collections::HashMap::new();
        let mut seeks = Vec::with_capacity(entries.len());
        let mut dead = Vec::new();
        for e in entries {
            let node = node_of(e.conn);
            let up = match alive.get(&node) {
                Some(up) => *up,
                None => *alive.entry(node).or_insert(self.node_alive(node).await?),
            };
            if up {
                seeks.push(e.seek);
            } else {
                dead.push(e.seek.seek_id);
            }
        }
        self.drop_seeks(&dead).await?;
        seeks.sort_by_key(|s| s.seek_id);
        Ok(seeks)
    }
}
