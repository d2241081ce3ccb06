//! A game going to sleep (see `game/hibernate.rs`): after `Hibernation::idle` without a
//! command, if both players are away, nobody watches and nothing is due for a while, the
//! game logs its `Hibernated` step, writes its wake-up row, leaves the registry's live
//! games for its dormant ones and closes its inbox. Commands that reached the inbox
//! meanwhile are sent on: they wake the game again, from storage.

use std::sync::atomic::Ordering::Relaxed;

use tokio::time::Instant;

use super::Actor;
use crate::db::Sleeper;
use crate::game::GameCmd;

impl Actor {
    /// When the game next looks whether it may sleep, if hibernation is on.
    pub(super) fn sleep_at(&self) -> Option<Instant> {
        let hibernation = self.services.settings.hibernate?;
        Some(self.active_at + hibernation.idle)
    }

    /// Puts the game to sleep if it may; returns whether it did (the actor then ends).
    pub(super) async fn try_sleep(&mut self) -> bool {
        let now = Instant::now();
        self.active_at = now;
        let Some(hibernation) = self.services.settings.hibernate else {
            return false;
        };
        let quiet = self.stalled.is_none()
            && !self.moved
            && !self.delivering
            && self.deliver_at.is_none()
            && self.announce_at.is_none()
            && self.bus.subscribers(self.game_id) == 0;
        if !quiet
            || !self
                .state
                .may_hibernate(now.into_std(), hibernation.min_deadline)
        {
            return false;
        }
        let due_ms = self.state.hibernate(now.into_std());
        self.emit(Vec::new(), now).await;
        if self.stalled.is_some() || self.moved {
            return false;
        }
        let seats = self.state.seats();
        let sleeper = Sleeper {
            game_id: self.game_id,
            due_ms,
            seats,
            summary: Some(self.state.summary(0)),
        };
        if let Err(error) = self.services.db.hibernate(sleeper).await {
            // It stays awake; its `Hibernated` step replays as nothing.
            let game_id = self.game_id;
            tracing::warn!(%game_id, %error, "cannot write the game's wake-up; it stays awake");
            return false;
        }
        // From here a command finds the game asleep and wakes it from storage.
        self.services.registry.go_dormant(self.game_id, seats);
        self.bus.close_game(self.game_id);
        self.bus.close_topic(self.game_id);
        self.asleep = true;
        self.services.wakeups.due(due_ms);
        self.services.metrics.live_games.fetch_sub(1, Relaxed);
        true
    }

    /// The game sleeps: what reached its inbox before it closed goes to the game again,
    /// which wakes it.
    pub(super) async fn hand_over(&mut self) {
        self.rx.close();
        self.spectators.close();
        let mut left: Vec<GameCmd> = Vec::new();
        while let Ok(cmd) = self.rx.try_recv() {
            left.push(cmd);
        }
        while let Ok(cmd) = self.spectators.try_recv() {
            left.push(cmd);
        }
        for cmd in left {
            self.bus.to_game(self.game_id, cmd).await;
        }
    }
}
