//! Starting a game: both players leave whatever they waited in, and the game starts on
//! one of their nodes (`lobby/seating.rs`), which seats them; the lobby never waits on a
//! game.

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::{Lobby, Result};
use crate::lobby::{LobbyError, Member, NewGame};
use crate::record::GameSetup;
use crate::record::RecordPlayer;

/// A new game's id.
pub(super) fn new_game_id() -> GameId {
    GameId::new_random_from(rand::random())
}

impl Lobby {
    /// Remove both players from everything they were waiting in, seat them at random and
    /// start game `game_id`.
    pub(super) fn start_game(
        &mut self,
        game_id: GameId,
        a: Member,
        b: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<()> {
        let (one, two) = if rand::random::<bool>() {
            (a, b)
        } else {
            (b, a)
        };
        let players = SeatPair::new(one, two);
        self.start_game_seated(game_id, players, None, (variant, tc, rated))
    }

    /// Starts game `game_id` with its players seated so (a bot's seat, if one plays, at
    /// `bot`), on the node of one of their connections (`Bus::start_game`), which tells
    /// them; until the registry shows the game, the lobby counts its seats itself.
    pub(super) fn start_game_seated(
        &mut self,
        game_id: GameId,
        players: SeatPair<Member>,
        bot: Option<Seat>,
        (variant, tc, rated): (Variant, TimeControl, bool),
    ) -> Result<()> {
        // Every request that seats two members refuses one account twice before this; this
        // is the one place games start, so no game of an account against itself can (its
        // record could not be rated, nor its result mean anything).
        if players.one.account == players.two.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "a player cannot play against themselves",
            ));
        }
        for m in [&players.one, &players.two] {
            self.leave_pool(m.account);
            let account = m.account;
            self.drop_seeks(|s| s.member.account == account);
        }
        let rated = rated && !players.one.info.guest && !players.two.info.guest;
        let setup = GameSetup {
            game_id,
            variant,
            time_control: tc,
            rated,
            players: players.clone().map(|m| RecordPlayer {
                account_id: m.account,
                name: m.info.name,
                guest: m.info.guest,
                rating: m.info.rating,
            }),
        };
        let game = NewGame {
            setup,
            players,
            bot,
        };
        self.starting.add(&game);
        self.bus.start_game(game);
        Ok(())
    }
}
