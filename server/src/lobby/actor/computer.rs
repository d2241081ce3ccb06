//! `play_bot`: a game at once against the computer (`crate::bots`), on the player's node.
//! The lobby keeps the cap (`--max-bot-games`, over the whole cluster): the computer's
//! games under way as it starts (restored ones too), and those it has started since, until
//! it hears of their end.

use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::start::new_game_id;
use super::{validate_game, Lobby, Result};
use crate::bots::Bot;
use crate::lobby::{LobbyError, Member};

/// What a game against the computer needs once it is allowed.
struct BotGame {
    bot: Bot,
    tc: TimeControl,
}

impl Lobby {
    pub(super) fn play_bot(
        &mut self,
        member: Member,
        strength: &str,
        variant: Variant,
        preset: &str,
    ) -> Result<()> {
        let game = self.check_bot_game(&member, strength, &variant, preset)?;
        self.start_bot_game(new_game_id(), member, game, variant)
    }

    /// What starting a game against the computer requires: a bot of that strength, a
    /// valid game, a player free to start one, and a place under the cap.
    fn check_bot_game(
        &self,
        member: &Member,
        strength: &str,
        variant: &Variant,
        preset: &str,
    ) -> Result<BotGame> {
        let bot = self.bots.by_strength(strength).cloned().ok_or_else(|| {
            LobbyError::new(
                ErrorCode::UnknownStrength,
                format!("no computer opponent plays at {strength:?}: try easy, medium or hard"),
            )
        })?;
        let tc = TimeControl::preset(preset)
            .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))?;
        validate_game(variant, &tc)?;
        self.ready_for_new_game(member.account, &tc)?;
        if self.bot_games.len() >= self.bots.max_games() {
            return Err(LobbyError::new(
                ErrorCode::TooManyRequests,
                "the server runs as many games against the computer as it can: try again soon",
            ));
        }
        Ok(BotGame { bot, tc })
    }

    fn start_bot_game(
        &mut self,
        game_id: elementals_protocol::messages::GameId,
        member: Member,
        BotGame { bot, tc }: BotGame,
        variant: Variant,
    ) -> Result<()> {
        // Its connection is made where the game runs: the player's node.
        let opponent = Member {
            account: bot.account,
            info: bot.info.clone(),
            conn_id: 0,
        };
        let bot_seat = if rand::random::<bool>() {
            Seat::One
        } else {
            Seat::Two
        };
        let players = match bot_seat {
            Seat::One => SeatPair::new(opponent, member),
            Seat::Two => SeatPair::new(member, opponent),
        };
        self.start_game_seated(game_id, players, Some(bot_seat), (variant, tc, false))?;
        self.bot_games.insert(game_id);
        Ok(())
    }
}
