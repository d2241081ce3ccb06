//! What each live game waits for, and a player's open games (`my_games`).
//!
//! Kept for this node's games only: in cluster mode a player seated in another node's game
//! is answered an empty list (the cluster's directory carries no owed state yet).

use elementals_protocol::messages::{GameId, MyGame};

use super::Registry;
use crate::game::OwedNow;
use crate::record::AccountId;

impl Registry {
    /// What a live game waits for now; written only when it has changed (a few times a
    /// round), so each of the game's events costs one shard's read lock here.
    pub fn set_owed(&self, game_id: GameId, owed: OwedNow) {
        if self.owed.get(&game_id).is_some_and(|known| *known == owed) {
            return;
        }
        self.owed.insert(game_id, owed);
    }

    /// The open games `account` sits in, each with what it waits for. Live games allow one
    /// seat per account, so this holds at most one game today.
    pub fn my_games(&self, account: AccountId) -> Vec<MyGame> {
        let Some((game_id, seat)) = self.seated.get(&account).map(|e| *e) else {
            return Vec::new();
        };
        let Some(summary) = self.games.get(&game_id).map(|e| e.summary.clone()) else {
            return Vec::new();
        };
        let Some(owed) = self.owed.get(&game_id).map(|e| e.clone()) else {
            return Vec::new();
        };
        vec![MyGame {
            game_id,
            seat,
            opponent: summary.players.get(seat.other()).clone(),
            variant: summary.variant,
            time_control: summary.time_control,
            rated: summary.rated,
            round: owed.round,
            phase: owed.phase,
            owed: owed.owed,
        }]
    }
}
