//! A node that lost a wake (another node woke the game) hands on what waits for the game
//! as soon as its peers name the winner's node, and gives the game up after `FOLLOW_WAIT`
//! if they never do.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{follow, FOLLOW_WAIT};
use crate::bus::LocalBus;
use crate::db::Db;
use crate::game::{GameServices, GameSettings};
use crate::metrics::Metrics;
use crate::peers::{Alone, Asleep, Peers};
use crate::record::AccountId;
use crate::registry::Registry;

/// Peers that say, once told, that node 2 runs every game, and keep the sleeping games as a
/// single node's do.
#[derive(Debug)]
struct Elsewhere {
    sleeping: Alone,
    node: Mutex<Option<u16>>,
    opened: watch::Sender<u64>,
}

impl Elsewhere {
    /// Node 2 is heard to run the game from now on.
    fn runs_it(&self) {
        *self.node.lock().unwrap_or_else(PoisonError::into_inner) = Some(2);
        self.opened.send_modify(|n| *n += 1);
    }
}

impl Peers for Elsewhere {
    fn node_of(&self, _game: GameId) -> Option<u16> {
        *self.node.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn games_opened(&self) -> watch::Receiver<u64> {
        self.opened.subscribe()
    }

    fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.sleeping.game_slept(game, seats, summary);
    }

    fn load_dormant(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.sleeping.load_dormant(game, seats, summary);
    }

    fn dormant(&self, game: GameId) -> Option<Asleep> {
        self.sleeping.dormant(game)
    }

    fn dormant_games(&self) -> Vec<LiveGame> {
        self.sleeping.dormant_games()
    }

    fn forget_dormant(&self, game: GameId, number: u64) {
        self.sleeping.forget_dormant(game, number);
    }

    fn dormant_mark(&self) -> u64 {
        self.sleeping.dormant_mark()
    }

    fn sleepers_read(&self, rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>, mark: u64) {
        self.sleeping.sleepers_read(rows, mark);
    }

    fn asleep_accounts(&self) -> Vec<AccountId> {
        self.sleeping.asleep_accounts()
    }

    fn asleep_count(&self) -> usize {
        self.sleeping.asleep_count()
    }
}

/// What `lost_wake` sets up.
struct LostWake {
    peers: Arc<Elsewhere>,
    services: GameServices,
    game: GameId,
    /// True once the follow is done.
    finished: watch::Receiver<bool>,
    _dir: tempfile::TempDir,
}

/// A node whose peers are `Elsewhere`, a game asleep there, and this node's wake of it
/// begun and lost: its follow running.
async fn lost_wake() -> LostWake {
    let peers = Arc::new(Elsewhere {
        sleeping: Alone::default(),
        node: Mutex::new(None),
        opened: watch::Sender::new(0),
    });
    let registry = Arc::new(Registry::with_peers(
        Arc::new(LocalBus::default()),
        peers.clone(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("e.db")).unwrap();
    let services = GameServices::new(
        db,
        registry.clone(),
        Arc::new(Metrics::default()),
        GameSettings::default(),
    );
    let game = GameId(uuid::Uuid::new_v4());
    registry.insert_dormant(game, SeatPair::new(1, 2), None);
    let (inbox, done) = registry
        .begin_wake(game)
        .expect("asleep, and not being woken");
    let finished = done.subscribe();
    tokio::spawn(follow(services.clone(), game, inbox, done));
    LostWake {
        peers,
        services,
        game,
        finished,
        _dir: dir,
    }
}

#[tokio::test(start_paused = true)]
async fn a_node_that_lost_a_wake_follows_the_winner_as_soon_as_it_is_named() {
    let LostWake {
        peers,
        services,
        game,
        mut finished,
        _dir,
    } = lost_wake().await;
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!*finished.borrow(), "it waits while nobody runs the game");
    peers.runs_it();
    finished.wait_for(|done| *done).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(1), "handed on at once");
    // Another node runs it: this node's wake is over, and nothing here forgets it sleeps
    // (the winner's word that it opened does that).
    assert!(services.registry.begin_wake(game).is_some());
}

#[tokio::test(start_paused = true)]
async fn a_wake_nobody_is_named_for_is_given_up_after_the_wait() {
    let LostWake {
        services,
        game,
        mut finished,
        _dir,
        ..
    } = lost_wake().await;
    let start = Instant::now();
    finished.wait_for(|done| *done).await.unwrap();
    assert_eq!(start.elapsed(), FOLLOW_WAIT);
    // The peers' word that it sleeps is dropped: nothing is left to wake.
    assert!(services.registry.begin_wake(game).is_none());
    assert!(!services.registry.is_dormant(&game));
}
