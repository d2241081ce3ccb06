//! Games the lobby has started and not yet seen in the registry. A game starts on one of
//! its players' nodes (`Bus::start_game`), which seats both players in its registry and,
//! in a cluster, the directory, whose word reaches the lobby's node a moment later: until
//! then the lobby counts those seats itself (`Lobby::has_room`), so no request in between
//! finds room for a seat already taken. An entry goes once the registry shows the game,
//! or once the game has ended (`LobbyCmd::Ended`).
//!
//! A start can be lost on its way: a write to Redis that failed with its outcome unknown,
//! or a node that died before it started the game. A game not seen within the wait (twice
//! the time after which a silent node is dead) is started again, under the same id, on
//! one of its players' nodes, up to `TRIES` times in all. Sending it again is safe: a node
//! that runs the game already does not start it twice (`seating.rs`), and of two nodes
//! starting it the first step's lease (`ON CONFLICT DO NOTHING`) lets one run it. Its
//! players' seats stay counted meanwhile, so nothing else seats them.

use std::collections::HashMap;
use std::time::Duration;

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::Seat;
use tokio::time::Instant;

use crate::lobby::NewGame;
use crate::record::AccountId;
use crate::registry::{Registry, SeatAt};

/// How many times a game is started before the lobby stops waiting for it.
const TRIES: u32 = 3;

/// A game starting: what was sent, when, and how many times.
#[derive(Debug)]
struct Start {
    game: NewGame,
    sent: Instant,
    tries: u32,
}

#[derive(Debug)]
pub(super) struct Starting {
    /// How long a start may take to show before it is sent again.
    wait: Duration,
    games: HashMap<GameId, Start>,
    seats: HashMap<AccountId, Vec<SeatAt>>,
}

impl Starting {
    pub(super) fn new(wait: Duration) -> Starting {
        Starting {
            wait,
            games: HashMap::new(),
            seats: HashMap::new(),
        }
    }

    /// `game` is starting (sent now, for the first time).
    pub(super) fn add(&mut self, game: &NewGame) {
        let game_id = game.setup.game_id;
        let players = SeatPair::new(game.players.one.account, game.players.two.account);
        let live = !game.setup.time_control.is_correspondence();
        let start = Start {
            game: game.clone(),
            sent: Instant::now(),
            tries: 1,
        };
        self.games.insert(game_id, start);
        for (account, seat) in [(players.one, Seat::One), (players.two, Seat::Two)] {
            self.seats.entry(account).or_default().push(SeatAt {
                game_id,
                seat,
                live,
            });
        }
    }

    pub(super) fn remove(&mut self, game_id: GameId) {
        let Some(start) = self.games.remove(&game_id) else {
            return;
        };
        let players = &start.game.players;
        for account in [players.one.account, players.two.account] {
            if let Some(seats) = self.seats.get_mut(&account) {
                seats.retain(|s| s.game_id != game_id);
                if seats.is_empty() {
                    self.seats.remove(&account);
                }
            }
        }
    }

    /// `account`'s seats in games starting.
    pub(super) fn seats_of(&self, account: AccountId) -> &[SeatAt] {
        self.seats.get(&account).map_or(&[], Vec::as_slice)
    }

    /// Forgets the games `registry` shows now; returns those not shown within the wait,
    /// to be started again (the last try's is forgotten instead).
    pub(super) fn prune(&mut self, registry: &Registry) -> Vec<NewGame> {
        let now = Instant::now();
        let mut gone = Vec::new();
        let mut again = Vec::new();
        for (game_id, start) in &mut self.games {
            let players = &start.game.players;
            if registry
                .seats_of(players.one.account)
                .iter()
                .any(|s| s.game_id == *game_id)
            {
                gone.push(*game_id);
            } else if now.duration_since(start.sent) > self.wait {
                if start.tries >= TRIES {
                    tracing::error!(%game_id, tries = start.tries, "a game the lobby started never showed: its players are free again");
                    gone.push(*game_id);
                } else {
                    tracing::warn!(%game_id, "a game the lobby started has not shown: it starts again");
                    start.tries += 1;
                    start.sent = now;
                    again.push(start.game.clone());
                }
            }
        }
        for game_id in gone {
            self.remove(game_id);
        }
        again
    }
}
