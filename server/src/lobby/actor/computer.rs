//! `play_bot`: a game at once against the computer (`crate::bots`).
//!
//! In cluster mode the player may wait in a pool of the cluster's, which a node's pairing
//! takes from at any moment: the game starts only once one script has taken them out of
//! every pool and marked them seating (`SharedPools::take_alone`), as a seek's acceptance
//! takes its two, so that no pool pairs them as this game seats them, nor just has.

use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::cluster::seating_elsewhere;
use super::start::new_game_id;
use super::{validate_game, Lobby, Result};
use crate::bots::{Bot, Slot};
use crate::lobby::shared::Taken;
use crate::lobby::{LobbyError, Member};

/// What a game against the computer needs once it is allowed.
struct BotGame {
    bot: Bot,
    tc: TimeControl,
    slot: Slot,
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

    /// `play_bot` in cluster mode: the player taken out of every pool of the cluster's in
    /// one step first.
    pub(super) async fn play_bot_shared(
        &mut self,
        member: Member,
        strength: &str,
        variant: Variant,
        preset: &str,
    ) -> Result<()> {
        let game = self.check_bot_game(&member, strength, &variant, preset)?;
        let shared = self.shared_pools();
        let taken = self
            .take_unless_held_by_over(|over| shared.take_alone(member.account, over))
            .await?;
        let game_id = match taken {
            Taken::Taken(game_id) => game_id,
            // Paired, or taken by a seek or challenge, on another node a moment ago.
            _ => return Err(seating_elsewhere()),
        };
        self.start_bot_game(game_id, member, game, variant)
    }

    /// What starting a game against the computer requires: a bot of that strength, a
    /// valid game, a player free to start one, and a free slot (held from here on, so that
    /// a player taken out of their pool for the game is never left without it).
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
        self.ready_for_new_game(member.account)?;
        let slot = self.bots.reserve().ok_or_else(|| {
            LobbyError::new(
                ErrorCode::TooManyRequests,
                "the server runs as many games against the computer as it can: try again soon",
            )
        })?;
        Ok(BotGame { bot, tc, slot })
    }

    fn start_bot_game(
        &mut self,
        game_id: elementals_protocol::messages::GameId,
        member: Member,
        BotGame { bot, tc, slot }: BotGame,
        variant: Variant,
    ) -> Result<()> {
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
        match self.start_game_seated(game_id, one, two, variant, tc, false) {
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
