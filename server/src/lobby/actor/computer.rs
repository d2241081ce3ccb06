//! `play_bot`: a game at once against the computer (`crate::bots`).

use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::{validate_game, Lobby, Result};
use crate::lobby::{LobbyError, Member};

impl Lobby {
    pub(super) fn play_bot(
        &mut self,
        member: Member,
        strength: &str,
        variant: Variant,
        preset: &str,
    ) -> Result<()> {
        let bot = self.bots.by_strength(strength).cloned().ok_or_else(|| {
            LobbyError::new(
                ErrorCode::UnknownStrength,
                format!("no computer opponent plays at {strength:?}: try easy, medium or hard"),
            )
        })?;
        let tc = TimeControl::preset(preset)
            .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))?;
        validate_game(&variant, &tc)?;
        self.ready_for_new_game(member.account)?;
        let slot = self.bots.reserve().ok_or_else(|| {
            LobbyError::new(
                ErrorCode::TooManyRequests,
                "the server runs as many games against the computer as it can: try again soon",
            )
        })?;
        let conn = self.bots.connect();
        let conn_id = conn.conn_id();
        let opponent = Member {
            account: bot.account,
            info: bot.info.clone(),
            conn_id,
        };
        let bot_seat = if rand::random::<bool>() {
            Seat::One
        } else {
            Seat::Two
        };
        let (one, two) = match bot_seat {
            Seat::One => (opponent, member),
            Seat::Two => (member, opponent),
        };
        let game = super::start::new_game_id();
        match self.start_game_seated(game, one, two, variant, tc, false) {
            Ok(game) => {
                self.bots.play(&bot, game.player(bot_seat), conn, slot);
                Ok(())
            }
            Err(e) => {
                self.bus.disconnect(conn_id);
                Err(e)
            }
        }
    }
}
