//! Leases on live games, in cluster mode: a game runs on exactly one node at a time.
//!
//! Each live game has a row in `game_leases` (migrations V6, V8): the node that runs it, a
//! token, and the node's epoch when the row was taken. Each node has a row in `node_leases`:
//! its epoch and an expiry on the database's clock, renewed every `RENEW` (`renewer.rs`):
//! one row a node, however many games it runs. A game's lease is live while its node's
//! row has not expired and is still at the row's epoch. A node whose row has expired starts
//! a new epoch at its next renewal, so the games it held before stay lapsed (it has stopped
//! them on its own clock by then) and a renewal never brings back a game nobody runs. The
//! node takes a game's row with its first step (token 1), and the row goes in the
//! transaction that records the game. Once a lease has lapsed, any node whose own lease
//! is live may claim it (`claim.rs`): it becomes the row's node, at its epoch, adds one to the
//! token, and replays the game's log.
//!
//! The fence: every transaction that writes a game's steps or its record first locks the
//! game's row and checks that it still names this node with the token this process holds
//! (`step_write.rs`, `held_for_record`); a game that fails the check is refused
//! `LeaseLost` and nothing of it is written. A claim locks the row `FOR UPDATE` before it updates it, so
//! the two are serialized by the row's lock: a claim that comes first makes the write fail
//! its check, and a write that comes first is committed before the claim reads the log it
//! replays. Only PostgreSQL decides; a node cut off from everything else can write nothing
//! once its game is claimed.
//!
//! A step batch's lock is `FOR KEY SHARE`, the weakest: it conflicts with the claim's
//! `FOR UPDATE` (and a record's delete); a renewal writes only its node's row and reads the
//! games' rows, so renewals and moves never wait on each other.
//!
//! Here: `Leases`, what this process holds, and the record's fence. The renewal's and
//! shutdown's statements are in `lease/renewal.rs`, a sleeping game's in `lease/dormant.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use elementals_protocol::messages::GameId;
use postgres::Transaction;

use super::Cache;
use crate::db::DbResult;

mod dormant;
mod renewal;

pub(super) use dormant::{go_dormant, wake};
pub use renewal::Renewed;
pub(super) use renewal::{
    give_up, others_alive, read_database_clock, renew, renew_node, take_number, Orphans,
};
// The statements whose plans `plan_tests.rs` reads.
#[cfg(test)]
pub(super) use dormant::{GO_DORMANT, WAKE};
#[cfg(test)]
pub(crate) use renewal::ORPHAN_SCAN_EVERY;
#[cfg(test)]
pub(super) use renewal::{OWN_LEASES, RENEW_CHECK, RENEW_NODE};

/// How many node numbers a cluster has: as many as a connection id has room for
/// (`bus::redis::NODE_SHIFT`). Numbers start at 1.
pub const NODE_NUMBERS: u16 = (1 << 14) - 1;

/// How long a lease lasts from its last renewal.
pub const LEASE: Duration = Duration::from_secs(6);
/// How often a node renews its leases: a node that misses two renewals in a row still
/// holds its games.
pub const RENEW: Duration = Duration::from_secs(2);
/// How often a node looks for lapsed leases: a dead node's games are claimed at most
/// `LEASE + CLAIM` after its last renewal.
pub const CLAIM: Duration = Duration::from_secs(1);

/// The leases this process holds, shared by the step log's thread (which takes and claims
/// them), the renewer's (`renewer.rs`) and the writer's (which checks them when it records
/// a game).
#[derive(Debug)]
pub(crate) struct Leases {
    pub node_id: String,
    /// Whether another node's lease was live when this one first renewed its own: the
    /// cluster was up, not coming back from being down (`Db::joined_running_cluster`).
    pub others_up_at_start: std::sync::atomic::AtomicBool,
    /// How long they last after a renewal (`LEASE` unless configured).
    pub lease: Duration,
    /// The database's clock, read as the node opened it: Unix milliseconds, and when on
    /// this process's monotonic clock (`Db::database_clock_ms`).
    pub database_clock: std::sync::OnceLock<(std::time::Instant, u64)>,
    /// This node's number in the cluster, from its row in `node_leases` (0 until taken).
    number: std::sync::atomic::AtomicU16,
    /// Turns true if the node's row is found without that number (`renew_node`).
    number_lost: tokio::sync::watch::Sender<bool>,
    /// Counts the times the step log gave every lease up (`give_up_all`).
    given_up: tokio::sync::watch::Sender<u64>,
    /// Since when the step log has been writing a batch, if it is: a node whose step log
    /// is stuck on its connection renews nothing, so that its games go to a node that can
    /// write them (`renewer.rs`).
    pub(in crate::db) appending: crate::db::journal::Busy,
    /// The node's epoch is to start again before the step log writes or claims anything
    /// more (`lapse_all`, `give_up_all`; `StepLog::new_epoch`).
    epoch_owed: std::sync::atomic::AtomicBool,
    state: Mutex<Held>,
    /// Test hook: the next claim waits between its commit and holding what it took.
    #[cfg(test)]
    pause: Mutex<Option<ClaimPause>>,
    /// Test hook: the next claim waits between finding the lapsed leases and taking them.
    #[cfg(test)]
    search_pause: Mutex<Option<ClaimPause>>,
    /// Test hook: the most games a claim takes, if not `CLAIM_LIMIT` (0).
    #[cfg(test)]
    claim_limit: std::sync::atomic::AtomicUsize,
}

/// Test hook: the claim says it has reached the point (`committed`) and waits for `go`.
#[cfg(test)]
#[derive(Debug)]
struct ClaimPause {
    committed: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<()>,
}

#[derive(Debug, Default)]
struct Held {
    /// Each game this process holds, and its token.
    tokens: HashMap<GameId, i64>,
    /// Games whose lease this process lost while their actor may still run: not claimed
    /// back until that actor has stopped (`forget`), so that a game never has two actors.
    lost: HashSet<GameId>,
    /// Games a claim under way has taken, from before its commit until it holds their new
    /// tokens: a renewal that finds one of them unrenewed (its token moved on by this very
    /// claim) does not take it for lost.
    claiming: HashSet<GameId>,
}

impl Leases {
    pub fn new(node_id: String, lease: Duration) -> Leases {
        Leases {
            node_id,
            others_up_at_start: std::sync::atomic::AtomicBool::new(false),
            lease,
            database_clock: std::sync::OnceLock::new(),
            number: std::sync::atomic::AtomicU16::new(0),
            number_lost: tokio::sync::watch::Sender::new(false),
            given_up: tokio::sync::watch::Sender::new(0),
            appending: crate::db::journal::Busy::default(),
            epoch_owed: std::sync::atomic::AtomicBool::new(false),
            state: Mutex::default(),
            #[cfg(test)]
            pause: Mutex::default(),
            #[cfg(test)]
            search_pause: Mutex::default(),
            #[cfg(test)]
            claim_limit: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// This node's number in the cluster (0 until taken).
    pub fn number(&self) -> u16 {
        self.number.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set_number(&self, number: u16) {
        self.number
            .store(number, std::sync::atomic::Ordering::Relaxed);
    }

    fn lose_number(&self) {
        self.number_lost.send_replace(true);
    }

    /// Resolves once this node's number is found to be no longer its own.
    pub async fn number_lost(&self) {
        let mut lost = self.number_lost.subscribe();
        if lost.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Held> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this process holds `game_id`'s lease, lost it while its actor may still run,
    /// or is claiming it.
    pub fn knows(&self, game_id: &GameId) -> bool {
        let state = self.state();
        state.tokens.contains_key(game_id)
            || state.lost.contains(game_id)
            || state.claiming.contains(game_id)
    }

    /// Whether this process holds `game_id`'s lease, or lost it while its actor may still
    /// run.
    pub fn has(&self, game_id: &GameId) -> bool {
        let state = self.state();
        state.tokens.contains_key(game_id) || state.lost.contains(game_id)
    }

    pub fn token(&self, game_id: &GameId) -> Option<i64> {
        self.state().tokens.get(game_id).copied()
    }

    pub fn hold(&self, game_id: GameId, token: i64) {
        self.state().tokens.insert(game_id, token);
    }

    /// A claim has taken `games` and is about to commit: until it holds them (`claimed`),
    /// a renewal leaves them alone.
    pub fn claiming(&self, games: impl IntoIterator<Item = GameId>) {
        self.state().claiming.extend(games);
    }

    /// The claim is over: `taken` (committed) are held with their new tokens, and no game
    /// is being claimed any more. After a claim that failed, `taken` is empty.
    pub fn claimed(&self, taken: impl IntoIterator<Item = (GameId, i64)>) {
        let mut state = self.state();
        state.tokens.extend(taken);
        state.claiming.clear();
    }

    /// A renewal under `token` did not renew the game's lease: lost, unless the token has
    /// moved on here since (a claim took it again) or a claim is taking it now.
    fn lose_unrenewed(&self, game_id: GameId, token: i64) -> bool {
        let mut state = self.state();
        if state.tokens.get(&game_id) != Some(&token) || state.claiming.contains(&game_id) {
            return false;
        }
        state.tokens.remove(&game_id);
        state.lost.insert(game_id);
        true
    }

    /// Test hook: the next claim, once committed, sends on the first answer and then waits
    /// until the second is used or dropped.
    #[cfg(test)]
    pub fn pause_next_claim(&self) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>) {
        let (committed, on_commit) = std::sync::mpsc::channel();
        let (release, go) = std::sync::mpsc::channel();
        *self.pause.lock().unwrap() = Some(ClaimPause { committed, go });
        (on_commit, release)
    }

    /// Test hook: where a claim waits, if told to, between its commit and `claimed`.
    #[cfg(test)]
    pub fn after_claim_commit(&self) {
        let pause = self.pause.lock().unwrap().take();
        if let Some(pause) = pause {
            let _ = pause.committed.send(());
            let _ = pause.go.recv();
        }
    }

    #[cfg(not(test))]
    pub fn after_claim_commit(&self) {}

    /// The most games one claim takes.
    pub(super) fn claim_limit(&self) -> usize {
        #[cfg(test)]
        {
            let limit = self.claim_limit.load(std::sync::atomic::Ordering::Relaxed);
            if limit > 0 {
                return limit;
            }
        }
        super::claim::CLAIM_LIMIT
    }

    /// Test hook: claims take at most `limit` games.
    #[cfg(test)]
    pub fn limit_claims(&self, limit: usize) {
        self.claim_limit
            .store(limit, std::sync::atomic::Ordering::Relaxed);
    }

    /// Test hook: the next claim, once it has found the lapsed leases, sends on the first
    /// answer and then waits until the second is used or dropped.
    #[cfg(test)]
    pub fn pause_next_claim_search(
        &self,
    ) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>) {
        let (searched, on_search) = std::sync::mpsc::channel();
        let (release, go) = std::sync::mpsc::channel();
        *self.search_pause.lock().unwrap() = Some(ClaimPause {
            committed: searched,
            go,
        });
        (on_search, release)
    }

    /// Test hook: where a claim waits, if told to, between its search and its update.
    #[cfg(test)]
    pub fn after_claim_search(&self) {
        let pause = self.search_pause.lock().unwrap().take();
        if let Some(pause) = pause {
            let _ = pause.committed.send(());
            let _ = pause.go.recv();
        }
    }

    #[cfg(not(test))]
    pub fn after_claim_search(&self) {}

    /// The lease is gone: its game's actor is to stop.
    pub fn lose(&self, game_id: GameId) {
        let mut state = self.state();
        if state.tokens.remove(&game_id).is_some() {
            state.lost.insert(game_id);
        }
    }

    /// The leases lapsed unrenewed: every one held is lost.
    pub fn lose_all(&self) -> usize {
        let mut state = self.state();
        let held: Vec<GameId> = state.tokens.drain().map(|(game_id, _)| game_id).collect();
        state.lost.extend(&held);
        held.len()
    }

    /// The leases lapsed unrenewed on this node's clock, which counts from when the last
    /// renewal was sent: every one held is lost, and every game here stops. The database
    /// counts from when it applied that renewal, a moment later, so a renewal sent now could
    /// find the row not yet expired and keep the old epoch, and with it the leases of the
    /// stopped games, alive: nobody would run them, and nobody could claim them until the
    /// orphan scan (`renewal::Orphans`). So a new epoch is owed, which the step log starts
    /// before its next write or claim.
    pub fn lapse_all(&self) -> usize {
        let held = self.lose_all();
        self.epoch_owed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        held
    }

    /// Whether a new epoch is owed; it is owed no more.
    pub(super) fn take_epoch_owed(&self) -> bool {
        self.epoch_owed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// A new epoch was owed and could not be started: it is owed still.
    pub(super) fn owe_epoch(&self) {
        self.epoch_owed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The step log does not know whether a commit applied: every lease held is lost, a
    /// new epoch is owed, and the lease loop, watching (`watch_given_up`), stops every game
    /// here.
    pub fn give_up_all(&self) -> usize {
        let held = self.lapse_all();
        self.given_up.send_modify(|times| *times += 1);
        held
    }

    /// Changes each time the step log gives every lease up.
    pub fn watch_given_up(&self) -> tokio::sync::watch::Receiver<u64> {
        self.given_up.subscribe()
    }

    /// The game is recorded, or its actor has stopped: nothing of it is held.
    pub fn forget(&self, game_id: &GameId) {
        let mut state = self.state();
        state.tokens.remove(game_id);
        state.lost.remove(game_id);
    }

    /// The game is woken here under `token` (`wake`): held again, lost no more.
    pub fn woke(&self, game_id: GameId, token: i64) {
        let mut state = self.state();
        state.lost.remove(&game_id);
        state.tokens.insert(game_id, token);
    }

    /// What this process holds, as the statements' columns.
    fn columns(&self) -> (Vec<String>, Vec<i64>) {
        self.state()
            .tokens
            .iter()
            .map(|(id, token)| (id.to_string(), *token))
            .unzip()
    }

    pub(super) fn lost_ids(&self) -> HashSet<String> {
        self.state().lost.iter().map(GameId::to_string).collect()
    }
}

/// The statement of `held_for_record`: `$1`, `$2` the games and their tokens, `$3` the node.
pub(super) const HELD_FOR_RECORD: &str = "WITH locked AS MATERIALIZED (
         SELECT game_id, node_id, token FROM game_leases
         WHERE game_id = ANY($1::text[])
         FOR UPDATE
     )
     SELECT l.game_id FROM locked l
     JOIN UNNEST($1::text[], $2::bigint[]) AS h(game_id, token)
         ON l.game_id = h.game_id AND l.token = h.token
     WHERE l.node_id = $3";

/// For the writer: locks the leases of `ids` (with `tokens`) until the transaction ends,
/// and returns the ids of those this node holds. The transaction deletes the rows of the
/// games it records (a game recorded lets its lease go): an exclusive lock at once rather
/// than a shared one to upgrade. The leases are locked by key alone and checked after,
/// as a step batch's are (`step_write.rs`): with the node's id in the same `WHERE`, the
/// generic plan read all of the node's leases by the (node_id, epoch) index, each record
/// batch. Locking a lease another node has taken only delays that node's next step by
/// this transaction.
pub(super) fn held_for_record(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    node: &str,
    ids: &[String],
    tokens: &[i64],
) -> DbResult<HashSet<String>> {
    let select = cache.get(tx, HELD_FOR_RECORD)?;
    Ok(tx
        .query(&select, &[&ids, &tokens, &node])?
        .iter()
        .map(|row| row.get(0))
        .collect())
}

/// The statement of `recorded`: `$1` the games.
pub(super) const RECORDED: &str = "SELECT id FROM games WHERE id = ANY($1)";

/// Of `ids`, those with a record.
pub(super) fn recorded(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    ids: &[String],
) -> DbResult<HashSet<String>> {
    let select = cache.get(tx, RECORDED)?;
    Ok(tx
        .query(&select, &[&ids])?
        .iter()
        .map(|row| row.get(0))
        .collect())
}

/// Deletes recorded games' logs and leases (`$1`, their ids), in the transaction that
/// records them: one statement, whether or not leases are in use (without cluster mode the
/// table is empty).
pub(super) const FORGET_GAMES: &str =
    "WITH leases AS (DELETE FROM game_leases WHERE game_id = ANY($1))
     DELETE FROM game_log WHERE game_id = ANY($1)";
