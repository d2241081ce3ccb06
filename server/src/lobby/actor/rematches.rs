//! Ended games, as their nodes tell the lobby (`LobbyCmd::Ended`, then `Rated` once the
//! record is written), remembered for rematch offers: the `FINISHED_MEMORY` latest, the
//! oldest forgotten first. Whichever node ran a game, its rematch is the lobby's: offers
//! and declines are handled here, and a rematch starts as any game does. A lobby that
//! moves starts with none remembered (an offer for an earlier game is `no_rematch`).

use std::collections::{HashMap, VecDeque};

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::Seat;

use super::Lobby;
use crate::lobby::EndedGame;
use crate::registry::FINISHED_MEMORY;

/// An ended game and the seats that have offered a rematch.
#[derive(Debug, Clone)]
pub(super) struct Rematchable {
    pub(super) game: EndedGame,
    pub(super) offers: SeatPair<bool>,
}

#[derive(Debug, Default)]
pub(super) struct Ended {
    games: HashMap<GameId, Rematchable>,
    /// In the order they ended, oldest first (ids already forgotten are skipped).
    order: VecDeque<GameId>,
}

impl Ended {
    pub(super) fn insert(&mut self, game: EndedGame) {
        while self.games.len() >= FINISHED_MEMORY {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.games.remove(&oldest);
        }
        self.order.push_back(game.game_id);
        let offers = SeatPair::default();
        self.games
            .insert(game.game_id, Rematchable { game, offers });
    }

    /// The ratings game `game_id`'s record left its players with.
    pub(super) fn rated(&mut self, game_id: GameId, ratings: SeatPair<f64>) {
        if let Some(ended) = self.games.get_mut(&game_id) {
            ended.game.ratings = ratings;
        }
    }

    pub(super) fn get(&self, game_id: &GameId) -> Option<&Rematchable> {
        self.games.get(game_id)
    }

    /// Sets whether `seat` offers a rematch of `game_id`; the game as it now stands.
    pub(super) fn set_offer(
        &mut self,
        game_id: &GameId,
        seat: Seat,
        offers: bool,
    ) -> Option<Rematchable> {
        let ended = self.games.get_mut(game_id)?;
        *ended.offers.get_mut(seat) = offers;
        Some(ended.clone())
    }

    /// A rematch of `game_id` has started: no other may.
    pub(super) fn forget(&mut self, game_id: &GameId) {
        self.games.remove(game_id);
    }
}

impl Lobby {
    /// A game has ended on its node: remembered for rematches; its seats and its bot's
    /// place are free.
    pub(super) fn game_ended(&mut self, game: EndedGame) {
        self.starting.remove(game.game_id);
        self.bot_games.remove(&game.game_id);
        self.ended.insert(game);
    }
}

#[cfg(test)]
mod tests {
    use elementals_protocol::messages::PlayerInfo;
    use elementals_protocol::rules::Variant;
    use elementals_protocol::TimeControl;

    use super::*;

    fn ended(n: i64) -> EndedGame {
        let info = |n: i64| PlayerInfo {
            name: format!("p{n}"),
            rating: 1.0,
            guest: false,
            bot: false,
        };
        EndedGame {
            game_id: GameId(uuid::Uuid::new_v4()),
            players: SeatPair::new(n, n + 1),
            infos: SeatPair::new(info(n), info(n + 1)),
            ratings: SeatPair::new(1.0, 1.0),
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
        }
    }

    #[test]
    fn past_its_memory_it_forgets_the_oldest_ended_games_and_goes_on() {
        let mut memory = Ended::default();
        let games: Vec<EndedGame> = (0..FINISHED_MEMORY as i64 + 50).map(ended).collect();
        for game in &games {
            memory.insert(game.clone());
        }
        assert_eq!(memory.games.len(), FINISHED_MEMORY);
        assert!(memory.get(&games[49].game_id).is_none());
        assert!(memory.get(&games[50].game_id).is_some());
        // One forgotten by hand (a rematch taken up) is skipped when its turn comes.
        memory.forget(&games[100].game_id);
        let later: Vec<EndedGame> = (0..61).map(ended).collect();
        for game in &later {
            memory.insert(game.clone());
        }
        assert_eq!(memory.games.len(), FINISHED_MEMORY);
        assert!(memory.get(&games[110].game_id).is_none());
        assert!(memory.get(&games[111].game_id).is_some());
        assert!(memory.get(&later[60].game_id).is_some());
        let id = games[200].game_id;
        let now = memory.set_offer(&id, Seat::Two, true).unwrap();
        assert_eq!(now.offers, SeatPair::new(false, true));
        memory.rated(id, SeatPair::new(1.5, 0.5));
        assert_eq!(
            memory.get(&id).unwrap().game.ratings,
            SeatPair::new(1.5, 0.5)
        );
    }
}
