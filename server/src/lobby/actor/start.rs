//! Starting a game: both players leave whatever they waited in, the game's actor starts,
//! and a task of its own seats them (the lobby never waits on a game).

use std::sync::Arc;

use elementals_protocol::messages::{GameId, GameInfo, SeatPair, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::{Lobby, Result};
use crate::bus::ReplyTo;
use crate::game::{spawn_game, GameHandle, GameSetup};
use crate::lobby::{LobbyError, Member};
use crate::record::RecordPlayer;

/// A new game's id. In cluster mode the script that takes both players is given it first:
/// their seating marks hold it.
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
        self.start_game_seated(game_id, one, two, variant, tc, rated)
            .map(drop)
    }

    pub(super) fn start_game_seated(
        &mut self,
        game_id: GameId,
        one: Member,
        two: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<GameHandle> {
        // Every request that seats two members refuses one account twice before this; this
        // is the one place games start, so no game of an account against itself can (its
        // record could not be rated, nor its result mean anything).
        if one.account == two.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "a player cannot play against themselves",
            ));
        }
        for m in [&one, &two] {
            self.leave_pool(m.account);
            let account = m.account;
            self.drop_seeks(|s| s.member.account == account);
        }
        let rated = rated && !one.info.guest && !two.info.guest;
        let players = SeatPair::new(&one, &two).map(|m| RecordPlayer {
            account_id: m.account,
            name: m.info.name.clone(),
            guest: m.info.guest,
            rating: m.info.rating,
        });
        let setup = GameSetup {
            game_id,
            variant,
            time_control: tc,
            rated,
            players,
        };
        let handle = spawn_game(setup, self.services.clone());
        let game = handle.clone();
        let info = GameInfo {
            game_id,
            variant,
            time_control: tc,
            rated,
            players: SeatPair::new(one.info.clone(), two.info.clone()),
            started_at: crate::clock::unix_ms(),
        };
        // Seating waits on the game actor, so it runs in its own task: the lobby never waits.
        let bus = Arc::clone(&self.bus);
        tokio::spawn(async move {
            for (seat, member) in [(Seat::One, one), (Seat::Two, two)] {
                let _ = bus.send_msg(
                    member.conn_id,
                    &ServerMsg::GameStart {
                        game: info.clone(),
                        seat,
                    },
                );
                // The game queues the snapshot after `game_start`.
                // A bot's task attaches its seat itself, and so learns if the game has
                // gone meanwhile.
                if crate::bots::is_bot_conn(member.conn_id) {
                    continue;
                }
                // Nobody waits for the answer: the member's session is not asking.
                let reply = ReplyTo {
                    conn: member.conn_id,
                    request_id: None,
                    settle: false,
                };
                handle.player(seat).attach(reply, None).await;
            }
        });
        Ok(game)
    }
}
