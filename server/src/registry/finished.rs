//! Finished games, remembered for rematch offers (`FINISHED_MEMORY` of them, the oldest
//! forgotten first): their players, settings and offers, and the wait for their record.

use std::time::Duration;

use elementals_protocol::messages::{GameId, PlayerInfo, SeatPair};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use tokio::sync::watch;

use super::Registry;
use crate::bus::ReplyTo;
use crate::lobby::Member;
use crate::record::AccountId;

/// A finished game, remembered for rematch offers.
#[derive(Debug, Clone)]
pub struct FinishedGame {
    pub players: SeatPair<AccountId>,
    /// Who they are (their ratings as the game began): in cluster mode a rematch finds an
    /// opponent on another node by name.
    pub infos: SeatPair<PlayerInfo>,
    /// The players' ratings: as the game began, then as its record left them once it is
    /// written (`set_finished_ratings`). A rematch's players carry these.
    pub ratings: SeatPair<f64>,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    /// Seats that have offered a rematch.
    pub rematch_offers: SeatPair<bool>,
    /// Turns true once the game's record is settled (written, failed, or none to write);
    /// closed if its actor ended first.
    pub recorded: watch::Receiver<bool>,
}

/// How long a rematch offer waits for the finished game's record (see `FinishedGame`).
const RECORD_WAIT: Duration = Duration::from_secs(5);

impl FinishedGame {
    /// Waits until the game's record is settled, so `ratings` are final (at most
    /// `RECORD_WAIT`: a database that is that slow gets the rematch on the older ratings).
    pub async fn wait_recorded(&self) {
        let mut recorded = self.recorded.clone();
        let _ = tokio::time::timeout(RECORD_WAIT, recorded.wait_for(|done| *done)).await;
    }
}

impl Registry {
    pub fn finished_game(&self, game_id: &GameId) -> Option<FinishedGame> {
        self.finished.get(game_id).map(|e| e.clone())
    }

    /// Record a rematch offer; returns the game as it now stands.
    pub fn offer_rematch(&self, game_id: &GameId, seat: Seat) -> Option<FinishedGame> {
        let mut entry = self.finished.get_mut(game_id)?;
        *entry.rematch_offers.get_mut(seat) = true;
        Some(entry.clone())
    }

    /// The ratings a finished game's record left its players with.
    pub fn set_finished_ratings(&self, game_id: &GameId, ratings: SeatPair<f64>) {
        if let Some(mut entry) = self.finished.get_mut(game_id) {
            entry.ratings = ratings;
        }
    }

    /// Cluster mode: the node that ran finished game `game_id`, if another node did (its
    /// rematch offers go there: `bus/redis/rematch.rs`).
    pub fn finished_elsewhere(&self, game_id: &GameId) -> Option<u16> {
        if self.finished.contains_key(game_id) {
            return None;
        }
        self.redis.as_ref()?.ended_elsewhere(game_id)
    }

    /// Cluster mode: sends `member`'s rematch offer to `node`, which answers it.
    pub fn forward_rematch(&self, node: u16, game_id: GameId, member: Member, reply: ReplyTo) {
        if let Some(redis) = &self.redis {
            redis.forward_rematch(node, game_id, member, reply);
        }
    }

    pub fn forget_finished(&self, game_id: &GameId) {
        self.finished.remove(game_id);
    }
}
