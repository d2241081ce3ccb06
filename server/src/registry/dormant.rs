//! Sleeping games as the registry sees them (`game/hibernate.rs`). The peers keep them
//! (`peers.rs`, `sleepers.rs`: on a single node `Alone`, in a cluster the directory's
//! mirror), so that a command finds the game and wakes it through the bus, and its
//! players stay seated. The registry keeps an entry per game only while this node wakes
//! it, so that concurrent wakes make one actor. Invariant: a game is live here (`games`)
//! or asleep, never both for longer than the step that moves it from one to the other.
//! In a cluster PostgreSQL decides which of several nodes waking a game runs it
//! (`db/pg/lease.rs`, `wake`).

use std::time::Duration;

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use tokio::sync::watch;

use super::Registry;
use crate::bus::GameInbox;
use crate::db::DbResult;
use crate::record::AccountId;

/// How long `my_games` waits for a player's game to wake before answering without it.
const WAKE_WAIT: Duration = Duration::from_secs(5);

/// A game this node is waking: turns true once it runs (or could not be woken).
#[derive(Debug)]
pub(super) struct Waking(watch::Receiver<bool>);

impl Registry {
    /// A hibernated game (at startup, from its wake-up row): its players are seated, and
    /// the listings show it as `summary`.
    pub fn insert_dormant(
        &self,
        game_id: GameId,
        seats: SeatPair<AccountId>,
        summary: Option<LiveGame>,
    ) {
        self.peers.load_dormant(game_id, seats, summary);
    }

    /// A live game goes to sleep: the peers take it (and its seats) first, then it leaves
    /// the live games, so that a look-up in between finds it one way or the other. Its
    /// actor closes its inbox next. It is listed as it stood, with nobody watching.
    pub fn go_dormant(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        let summary = self.games.get(&game_id).map(|e| LiveGame {
            spectators: 0,
            ..e.summary.clone()
        });
        self.peers.game_slept(game_id, seats, summary);
        self.games.remove(&game_id);
        self.owed.remove(&game_id);
        self.seated.leave(game_id, [seats.one, seats.two]);
    }

    /// Claims the waking of a sleeping game: its inbox is opened at once (under the
    /// entry's lock, so a second waker finds it open), and the sender that says when it
    /// runs is returned. `None` if it does not sleep or is already being woken.
    pub fn begin_wake(&self, game_id: GameId) -> Option<(GameInbox, watch::Sender<bool>)> {
        if self.peers.dormant(game_id).is_none() || self.games.contains_key(&game_id) {
            return None;
        }
        let entry = self.dormant.entry(game_id);
        if matches!(entry, dashmap::Entry::Occupied(_)) {
            return None;
        }
        let (done, waking) = watch::channel(false);
        let inbox = self.bus.open_game(game_id);
        entry.or_insert(Waking(waking));
        Some((inbox, done))
    }

    /// Whether the game sleeps or is being woken (in a cluster: anywhere, as far as this
    /// node has heard).
    pub fn is_dormant(&self, game_id: &GameId) -> bool {
        self.dormant.contains_key(game_id) || self.peers.dormant(*game_id).is_some()
    }

    /// This node's wake of the game lost (another node woke it, or it sleeps no more): its
    /// entry here goes; the peers' goes too if `stale` (the number they knew it by when
    /// nobody runs it after all).
    pub fn wake_lost(&self, game_id: GameId, stale: Option<u64>) {
        self.dormant.remove(&game_id);
        if let Some(number) = stale {
            self.peers.forget_dormant(game_id, number);
        }
    }

    /// The node the peers say runs the game (another node), and the number they know the
    /// game by while it sleeps.
    pub fn where_awake(&self, game_id: GameId) -> (Option<u16>, Option<u64>) {
        (
            self.peers.node_of(game_id),
            self.peers.dormant(game_id).map(|(_, n)| n),
        )
    }

    /// How often this node has rejoined the others (`None`: there are none).
    pub fn cluster_rejoins(&self) -> Option<u64> {
        self.peers.rejoins()
    }

    /// The sleeping games read from storage after a rejoin, to mend the peers' record of
    /// them (`Peers::sleepers_read`). `read` reads them.
    pub async fn mend_sleepers<F>(&self, read: F) -> DbResult<()>
    where
        F: std::future::Future<Output = DbResult<Vec<crate::db::Sleeper>>>,
    {
        let mark = self.peers.dormant_mark();
        let rows = read.await?.into_iter();
        self.peers.sleepers_read(
            rows.map(|s| (s.game_id, s.seats, s.summary)).collect(),
            mark,
        );
        Ok(())
    }

    /// The woken game runs (it is in `games` already, which took it from the peers).
    pub fn woke(&self, game_id: GameId) {
        self.dormant.remove(&game_id);
    }

    /// The game could not be woken: it sleeps on (a later command or sweep tries again),
    /// or, `gone`, it is forgotten with its seats.
    pub fn wake_failed(&self, game_id: GameId, gone: bool) {
        self.dormant.remove(&game_id);
        if gone {
            if let Some((_, number)) = self.peers.dormant(game_id) {
                self.peers.forget_dormant(game_id, number);
            }
        }
    }

    /// Wakes the games `account` sits in that sleep, and waits (a few seconds at most, for
    /// all together) until they run: `my_games` lists what a running game says it waits
    /// for.
    pub async fn wake_seated(&self, account: AccountId) {
        let mut waking = Vec::new();
        for at in self.seats_of(account) {
            if !self.is_dormant(&at.game_id) || !self.bus.wake(at.game_id) {
                continue;
            }
            if let Some(rx) = self.dormant.get(&at.game_id).map(|e| e.0.clone()) {
                waking.push(rx);
            }
        }
        let all = async {
            for mut rx in waking {
                let _ = rx.wait_for(|done| *done).await;
            }
        };
        let _ = tokio::time::timeout(WAKE_WAIT, all).await;
    }
}
