//! Hibernated games (`game/hibernate.rs`): a small entry each, so that a command finds
//! the game (and wakes it through the bus), its players stay seated, and concurrent wakes
//! of one game make one actor. Invariant: a game is live here (`games`) or dormant, never
//! both for longer than the step that moves it from one to the other.
//!
//! In cluster mode a sleeping game is the cluster's, not a node's: the directory's mirror
//! on every node knows it (and seats its players), and any node may wake it. Here a node
//! keeps an entry only while it wakes one; PostgreSQL decides which of several wakers runs
//! it (`db/pg/lease.rs`, `wake`).

use std::time::Duration;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::Seat;
use tokio::sync::watch;

use super::Registry;
use crate::bus::GameInbox;
use crate::db::DbResult;
use crate::record::AccountId;

/// How long `my_games` waits for a player's game to wake before answering without it.
const WAKE_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(super) struct Dormant {
    seats: SeatPair<AccountId>,
    /// Set while it is being woken: turns true once it runs (or could not be woken).
    waking: Option<watch::Receiver<bool>>,
}

impl Registry {
    /// A hibernated game (at startup, from its wake-up row): its players are seated.
    pub fn insert_dormant(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        if let Some(cluster) = &self.cluster {
            return cluster.load_dormant(game_id, seats);
        }
        self.insert_dormant_here(game_id, seats);
    }

    fn insert_dormant_here(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        self.seated.insert(seats.one, (game_id, Seat::One));
        self.seated.insert(seats.two, (game_id, Seat::Two));
        self.dormant.insert(
            game_id,
            Dormant {
                seats,
                waking: None,
            },
        );
    }

    /// A live game goes to sleep: dormant first, then out of the live games, so that a
    /// look-up in between finds it one way or the other. Its actor closes its inbox next.
    /// In cluster mode the directory takes it (and its seats) for every node.
    pub fn go_dormant(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        let Some(cluster) = &self.cluster else {
            self.insert_dormant_here(game_id, seats);
            self.games.remove(&game_id);
            self.owed.remove(&game_id);
            return;
        };
        cluster.game_slept(game_id, seats);
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        for account in [seats.one, seats.two] {
            self.seated.remove_if(&account, |_, (g, _)| *g == game_id);
        }
    }

    /// Claims the waking of a sleeping game: its inbox is opened at once (under the
    /// entry's lock, so a second waker finds it open), and the sender that says when it
    /// runs is returned. `None` if it does not sleep or is already being woken.
    /// In cluster mode, a game the directory says sleeps gets its entry here for the wake.
    pub fn begin_wake(&self, game_id: GameId) -> Option<(GameInbox, watch::Sender<bool>)> {
        let asleep = self.cluster.as_ref().and_then(|c| c.dormant(game_id));
        let mut entry = match asleep {
            Some((seats, _)) if !self.games.contains_key(&game_id) => {
                self.dormant.entry(game_id).or_insert(Dormant {
                    seats,
                    waking: None,
                })
            }
            _ => self.dormant.get_mut(&game_id)?,
        };
        if entry.waking.is_some() {
            return None;
        }
        let (done, waking) = watch::channel(false);
        let inbox = self.bus.open_game(game_id);
        entry.waking = Some(waking);
        Some((inbox, done))
    }

    /// Whether the game sleeps or is being woken (in cluster mode: anywhere, as far as this
    /// node has heard).
    pub fn is_dormant(&self, game_id: &GameId) -> bool {
        self.dormant.contains_key(game_id)
            || self
                .cluster
                .as_ref()
                .is_some_and(|c| c.dormant(*game_id).is_some())
    }

    /// Cluster mode: this node's wake of the game lost (another node woke it, or it sleeps
    /// no more): its entry here goes; the directory's goes too if `stale` (the number the
    /// directory knew it by when nobody runs it after all).
    pub fn wake_lost(&self, game_id: GameId, stale: Option<u64>) {
        self.dormant.remove(&game_id);
        if let (Some(cluster), Some(number)) = (&self.cluster, stale) {
            cluster.forget_dormant(game_id, number);
        }
    }

    /// Cluster mode: the node the directory says runs the game (another node), and the
    /// number it knows the game by while it sleeps.
    pub fn where_awake(&self, game_id: GameId) -> (Option<u16>, Option<u64>) {
        let Some(cluster) = &self.cluster else {
            return (None, None);
        };
        (
            cluster.node_of(game_id),
            cluster.dormant(game_id).map(|(_, n)| n),
        )
    }

    /// Cluster mode: how often this node has rejoined Redis (`None` outside cluster mode).
    pub fn cluster_rejoins(&self) -> Option<u64> {
        self.cluster.as_ref().map(|c| c.rejoins())
    }

    /// Cluster mode: the sleeping games read from storage after a rejoin, to mend the
    /// directory's mirror of them (`Directory::sleepers_read`). `read` reads them.
    pub async fn mend_sleepers<F>(&self, read: F) -> DbResult<()>
    where
        F: std::future::Future<Output = DbResult<Vec<crate::db::Sleeper>>>,
    {
        let Some(cluster) = &self.cluster else {
            return Ok(());
        };
        let mark = cluster.dormant_mark();
        let rows: Vec<_> = read.await?.iter().map(|s| (s.game_id, s.seats)).collect();
        cluster.sleepers_read(&rows, mark);
        Ok(())
    }

    /// The woken game runs (it is in `games` already).
    pub fn woke(&self, game_id: GameId) {
        self.dormant.remove(&game_id);
    }

    /// The game could not be woken: it sleeps on (a later command or sweep tries again),
    /// or, `gone`, it is forgotten with its seats.
    pub fn wake_failed(&self, game_id: GameId, gone: bool) {
        if gone {
            if let Some((_, dormant)) = self.dormant.remove(&game_id) {
                for account in [dormant.seats.one, dormant.seats.two] {
                    self.seated.remove_if(&account, |_, (g, _)| *g == game_id);
                }
            }
        } else if let Some(mut entry) = self.dormant.get_mut(&game_id) {
            entry.waking = None;
        }
    }

    pub fn dormant_count(&self) -> usize {
        self.dormant.len()
    }

    /// Wakes the game `account` sits in if it sleeps, and waits (a few seconds at most)
    /// until it runs: `my_games` lists what a running game says it waits for.
    pub async fn wake_seated(&self, account: AccountId) {
        let seated = self.seated.get(&account).map(|e| e.0);
        let Some(game_id) = seated.or_else(|| Some(self.cluster.as_ref()?.seat_of(account)?.0))
        else {
            return;
        };
        if !self.is_dormant(&game_id) || !self.bus.wake(game_id) {
            return;
        }
        let waking = self.dormant.get(&game_id).and_then(|e| e.waking.clone());
        if let Some(mut waking) = waking {
            let _ = tokio::time::timeout(WAKE_WAIT, waking.wait_for(|done| *done)).await;
        }
    }
}
