//! What each live game waits for, and a player's open games (`my_games`).
//!
//! Kept for this node's games only. In cluster mode a player seated in another node's game
//! (the directory says which) is answered with what that node says when asked
//! (`bus/redis/asks.rs`), and the game's summary from the directory.

use elementals_protocol::messages::{GameId, LiveGame, MyGame};
use elementals_protocol::rules::Seat;

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

    /// What this node's live game `game_id` waits for now.
    pub fn owed_of(&self, game_id: &GameId) -> Option<OwedNow> {
        self.owed.get(game_id).map(|e| e.clone())
    }

    /// The open games `account` sits in, each with what it waits for: on this node, or in
    /// cluster mode on any node (one round trip to the game's node, at most
    /// `ASK_TIMEOUT`; a node that does not answer in time leaves its game out).
    pub async fn my_games(&self, account: AccountId) -> Vec<MyGame> {
        let here = self.my_games_here(account);
        if !here.is_empty() {
            return here;
        }
        let (Some(cluster), Some(redis)) = (&self.cluster, &self.redis) else {
            return here;
        };
        let Some((game_id, seat)) = cluster.seat_of(account) else {
            return here;
        };
        let Some((node, summary)) = cluster.entry_of(game_id) else {
            return here;
        };
        match redis.ask_owed(node, game_id).await {
            Some(owed) => vec![my_game(game_id, seat, &summary, owed)],
            None => here,
        }
    }

    /// The open games `account` sits in on this node. Live games allow one seat per
    /// account, so this holds at most one game today.
    fn my_games_here(&self, account: AccountId) -> Vec<MyGame> {
        let Some((game_id, seat)) = self.seated.get(&account).map(|e| *e) else {
            return Vec::new();
        };
        let Some(summary) = self.games.get(&game_id).map(|e| e.summary.clone()) else {
            return Vec::new();
        };
        let Some(owed) = self.owed.get(&game_id).map(|e| e.clone()) else {
            return Vec::new();
        };
        vec![my_game(game_id, seat, &summary, owed)]
    }
}

/// `account`'s entry for game `game_id`, where it sits in `seat`.
fn my_game(game_id: GameId, seat: Seat, summary: &LiveGame, owed: OwedNow) -> MyGame {
    MyGame {
        game_id,
        seat,
        opponent: summary.players.get(seat.other()).clone(),
        variant: summary.variant,
        time_control: summary.time_control,
        rated: summary.rated,
        round: owed.round,
        phase: owed.phase,
        owed: owed.owed,
    }
}
