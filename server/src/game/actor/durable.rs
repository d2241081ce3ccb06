//! Durability: what the state logged is appended to the game's log before anything is
//! published (`emit`), and a game whose log refuses its steps is held (`Stalled`) and
//! retried (see the actor's module). A refusal for a lost lease (cluster mode) is final:
//! the game has moved to another node (`moved.rs`).

use std::collections::VecDeque;
use std::time::Duration;

use elementals_protocol::messages::ServerMsg;
use tokio::time::Instant;

use super::players::Answer;
use super::supervisor::lock;
use super::Actor;
use crate::db::crash_point;
use crate::db::DbError;
use crate::game::GameCmd;
use crate::record::LogStep;

/// The first pause before a refused append is tried again; each failure doubles it, up to
/// `RETRY_MAX`. A full disk is rarely freed within milliseconds, and every stalled game's
/// retry is a write the journal must try.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// A game whose log refused its steps (see the module).
pub(super) struct Stalled {
    /// The steps to append, in order: the refused ones and any logged since.
    pub steps: Vec<LogStep>,
    /// The events waiting for them.
    pub events: Vec<ServerMsg>,
    /// When the command behind the first of them arrived.
    pub received: Instant,
    /// Requests answered with a snapshot, handled in order once the log has the steps.
    pub deferred: VecDeque<GameCmd>,
    pub retry_at: Instant,
    pub pause: Duration,
}

/// What became of a command's events and answer (`Actor::emit_answering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Emitted {
    /// Published, the answer with them.
    Answered,
    /// Published; the answer is the caller's to send.
    Published,
    /// Kept for the log (the game is stalled); the caller answers `unavailable`.
    Held,
}

impl Actor {
    /// Makes what the state logged durable, then publishes `events`. Nothing is published
    /// (and the caller answers nothing) before the steps behind it are in the log.
    pub(super) async fn emit(&mut self, events: Vec<ServerMsg>, received: Instant) {
        self.emit_answering(events, received, None).await;
    }

    /// `emit`, with `answer` written to its player before the events (see
    /// `Players::send`), unless the events are held for the log.
    pub(super) async fn emit_answering(
        &mut self,
        events: Vec<ServerMsg>,
        received: Instant,
        answer: Option<Answer>,
    ) -> Emitted {
        let steps = self.state.take_log();
        if self.moved {
            // The game runs on another node now: nothing more is logged or published here.
            return Emitted::Held;
        }
        if let Some(stalled) = &mut self.stalled {
            // Behind the steps already waiting, in order.
            stalled.steps.extend(steps);
            stalled.events.extend(events);
            return Emitted::Held;
        }
        if !steps.is_empty() {
            let ends = steps.iter().any(|s| s.entry.is_end());
            if ends {
                crash_point("end_unlogged");
            }
            if let Err(error) = self.append(&steps).await {
                if matches!(error, DbError::LeaseLost { .. }) {
                    self.moved = true;
                } else {
                    self.stall(steps, events, received, &error);
                }
                return Emitted::Held;
            }
            if ends {
                // Logged: should the task die before the end is published or recorded, the
                // supervisor ends the game with this record, not as aborted.
                {
                    let mut shared = lock(&self.shared);
                    shared.ended = self.state.record().cloned();
                    shared.unpublished = Some(events.clone());
                }
                crash_point("end_logged");
            }
        }
        // Before the events go out: a player who hears of them and asks `my_games` is
        // answered as they left the game.
        self.note_owed();
        if self.publish(events, received, answer) {
            Emitted::Answered
        } else {
            Emitted::Published
        }
    }

    /// Tells the registry what the game waits for now (`my_games`), if it has changed.
    /// Every change of phase, commitment, reveal, hold or stall comes with events or a
    /// stall, which all pass here; so does the end, after which nothing is owed.
    pub(super) fn note_owed(&self) {
        let registry = &self.services.registry;
        match self.state.result() {
            None => registry.set_owed(self.game_id, self.state.owed()),
            Some(_) => registry.game_over(self.game_id, &self.finished),
        }
    }

    /// Appends `steps` to the game's log, unless the game's lease is lost first (its alarm
    /// sounds: the node's leases lapsed while the database stalled, say): then waiting is
    /// given up and the answer is `LeaseLost`, so that the players hear `game_moved` now,
    /// not once the database answers. Whatever becomes of the append, the fence keeps it
    /// from any node that claims the game meanwhile.
    async fn append(&self, steps: &[LogStep]) -> Result<(), DbError> {
        tokio::select! {
            appended = self.services.log.append(self.game_id, steps) => appended,
            () = self.lease_alarm.sounded() => Err(DbError::LeaseLost {
                game_id: self.game_id,
            }),
        }
    }

    /// The log refused `steps`: hold the clocks and keep them, with `events`, for a retry.
    pub(super) fn stall(
        &mut self,
        steps: Vec<LogStep>,
        events: Vec<ServerMsg>,
        received: Instant,
        error: &DbError,
    ) {
        let game_id = self.game_id;
        tracing::error!(%game_id, %error, "cannot log the game's steps: the game is held until the log takes them");
        let now = Instant::now();
        // No move is judged before the clocks stopped.
        self.judged = self.judged.max(now);
        self.state.stall(now.into_std());
        self.stalled = Some(Stalled {
            steps,
            events,
            received,
            deferred: VecDeque::new(),
            retry_at: now + RETRY_FIRST,
            pause: RETRY_FIRST,
        });
        self.note_owed();
    }

    /// Appends the stalled game's steps again. Taken, they are published and the clocks
    /// run again; the requests that waited are handled.
    pub(super) async fn retry_log(&mut self) {
        let Some(stalled) = &mut self.stalled else {
            return;
        };
        let steps = std::mem::take(&mut stalled.steps);
        let appended = self.append(&steps).await;
        let Some(stalled) = &mut self.stalled else {
            return;
        };
        stalled.steps = steps;
        if let Err(error) = appended {
            if matches!(error, DbError::LeaseLost { .. }) {
                self.stalled = None;
                self.moved = true;
                return;
            }
            stalled.pause = (stalled.pause * 2).min(RETRY_MAX);
            stalled.retry_at = Instant::now() + stalled.pause;
            let game_id = self.game_id;
            tracing::warn!(%game_id, %error, "the game's steps still cannot be logged");
            return;
        }
        let Some(Stalled {
            steps,
            mut events,
            received,
            deferred,
            ..
        }) = self.stalled.take()
        else {
            return;
        };
        if steps.iter().any(|s| s.entry.is_end()) {
            // As in `emit_answering`: a logged end stands, whatever happens to the task.
            {
                let mut shared = lock(&self.shared);
                shared.ended = self.state.record().cloned();
                shared.unpublished = Some(events.clone());
            }
            crash_point("end_logged");
        }
        let game_id = self.game_id;
        tracing::info!(%game_id, "the game's steps are logged: the game goes on");
        let now = Instant::now();
        self.judged = self.judged.max(now);
        self.state.unstall(now.into_std(), &mut events);
        self.note_owed();
        self.publish(events, received, None);
        for cmd in deferred {
            self.on_cmd(Some(cmd)).await;
        }
    }
}
