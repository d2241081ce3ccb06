//! Finished games of this node, remembered (`FINISHED_MEMORY` of them, the oldest
//! forgotten first): a player asking about one is told it ended, and a rematch offer waits
//! for its record. The lobby, told of each as it ends (`LobbyCmd::Ended`), keeps the
//! rematch offers.

use std::time::Duration;

use elementals_protocol::messages::{GameId, PlayerInfo, SeatPair};
use elementals_protocol::rules::Variant;
use elementals_protocol::TimeControl;
use tokio::sync::watch;

use super::Registry;
use crate::msg::{EndedGame, LobbyCmd};
use crate::record::AccountId;

/// A finished game of this node's.
#[derive(Debug, Clone)]
pub struct FinishedGame {
    pub players: SeatPair<AccountId>,
    /// Who they are (their ratings as the game began): a rematch finds its opponent by
    /// name, on any node.
    pub infos: SeatPair<PlayerInfo>,
    /// The players' ratings as the game began (the lobby hears those its record leaves:
    /// `set_finished_ratings`).
    pub ratings: SeatPair<f64>,
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
    /// Turns true once the game's record is settled (written, failed, or none to write);
    /// closed if its actor ended first.
    pub recorded: watch::Receiver<bool>,
}

/// How long a rematch offer waits for the finished game's record (see `FinishedGame`).
const RECORD_WAIT: Duration = Duration::from_secs(5);

impl FinishedGame {
    /// What the lobby is told of it (`LobbyCmd::Ended`).
    pub fn ended(&self, game_id: GameId) -> EndedGame {
        EndedGame {
            game_id,
            players: self.players,
            infos: self.infos.clone(),
            ratings: self.ratings,
            variant: self.variant,
            time_control: self.time_control,
            rated: self.rated,
        }
    }

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

    /// The ratings a finished game's record left its players with.
    /// Told to the lobby, which starts a rematch with them.
    pub fn set_finished_ratings(&self, game_id: &GameId, ratings: SeatPair<f64>) {
        let game_id = *game_id;
        self.bus.notify_lobby(LobbyCmd::Rated { game_id, ratings });
    }
}
