//! Rebuilding an unfinished game from its durable log.
//!
//! The log's steps are fed back through the same rules (`act`), all at one instant so that
//! no deadline can pass during the replay; the clocks are then set from what the log
//! recorded after its last step, and each round's recorded clocks from its `Result` step.
//! A log the rules refuse (a step that would not be accepted again) is an error: the game
//! cannot be trusted and is not restored. The bound on rounds is not applied during the
//! replay (a log written under a higher `--max-rounds` is not broken); the caller ends a
//! replayed game that reached its bound (`end_at_max_rounds`).

use std::time::{Duration, Instant};

use elementals_protocol::messages::ServerMsg;

use super::{Banks, GameState, Timing};
use crate::game::SeatAction;
use crate::record::{LogEntry, LogStep};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the log does not begin with the game's start")]
    NoStart,
    #[error("step {step}: {reason}")]
    Step { step: u64, reason: String },
}

impl GameState {
    /// The game as it stood after the last step of `steps` (which must begin with `Start`
    /// and hold no `End`), with both banks stopped at their logged values.
    pub fn replay(steps: &[LogStep], timing: Timing, now: Instant) -> Result<Self, ReplayError> {
        let Some(LogStep {
            entry: LogEntry::Start { setup, started_at },
            ..
        }) = steps.first()
        else {
            return Err(ReplayError::NoStart);
        };
        // The replay's events were published long ago; they are only counted.
        let mut events = Vec::new();
        let unbounded = Timing {
            max_rounds: u32::MAX,
            ..timing
        };
        let mut state = GameState::new(setup, *started_at, now, unbounded, &mut events);
        // When the current phase began, by the log's wall-clock stamps.
        let mut phase_at = steps[0].at;
        for step in &steps[1..] {
            let before = (state.round, state.phase);
            state
                .replay_step(step, now, &mut events)
                .map_err(|reason| ReplayError::Step {
                    step: step.step,
                    reason,
                })?;
            if (state.round, state.phase) != before {
                phase_at = step.at;
            }
        }
        if state.per_phase().is_some() {
            state.replayed_phase_at = Some(phase_at);
        }
        let last = steps.last().unwrap_or(&steps[0]);
        state.timing = timing;
        state.log.clear();
        state.next_step = last.step + 1;
        state.seq = state.seq.max(last.seq);
        state.banks = Banks::restored(last.banks_us.map(Duration::from_micros), now);
        Ok(state)
    }

    fn replay_step(
        &mut self,
        step: &LogStep,
        now: Instant,
        events: &mut Vec<ServerMsg>,
    ) -> Result<(), String> {
        let action = match &step.entry {
            LogEntry::Start { .. } => return Err("a second start".into()),
            LogEntry::End { .. } => return Err("the game has ended".into()),
            LogEntry::Restarted { .. } => {
                self.void_round(now);
                return Ok(());
            }
            LogEntry::Result { round } => {
                return match self.rounds.last_mut() {
                    Some(played) if played.round == round.round => {
                        let clocks_ms = played.clocks_ms;
                        let same = *played
                            == crate::record::RoundLog {
                                clocks_ms,
                                ..round.clone()
                            };
                        if !same {
                            return Err(format!("round {} replays differently", round.round));
                        }
                        played.clocks_ms = round.clocks_ms;
                        Ok(())
                    }
                    _ => Err(format!("round {} was not played", round.round)),
                };
            }
            LogEntry::Commit {
                round,
                seat,
                commitment,
                escrow,
            } => (
                *seat,
                SeatAction::Commit {
                    round: *round,
                    commitment: commitment.0.to_vec(),
                    pick: escrow.map(|e| e.pick),
                    nonce: escrow.map(|e| e.nonce.0.to_vec()),
                },
            ),
            LogEntry::Reveal {
                round,
                seat,
                pick,
                nonce,
            } => (
                *seat,
                SeatAction::Reveal {
                    round: *round,
                    pick: *pick,
                    nonce: nonce.0.to_vec(),
                },
            ),
        };
        let (seat, action) = action;
        self.act(seat, action, now, events)
            .map_err(|e| format!("{}: {}", e.code, e.message))?;
        if self.record.is_some() {
            return Err("the game ended during the replay".into());
        }
        Ok(())
    }
}
