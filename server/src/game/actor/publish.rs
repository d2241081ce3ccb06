//! Publishing: each event encoded once, to the players at once (`Players`) and to the
//! game's topic on the bus, whose deliveries to spectators this task makes in chunks
//! between its commands; and the spectator count the players hear.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::time::Instant;

use super::players::Answer;
use super::supervisor::lock;
use super::{spectators_left, Actor};
use crate::bus::{self, Delivery};

/// Spectator counts go to the players at most this often.
pub(super) const SPECTATOR_BATCH: Duration = Duration::from_secs(1);

/// How long events other than a round's result and the game's end may wait for the next
/// ones before going to spectators, so that a round's reveals and its result (which follow
/// each other within milliseconds) reach them as one write. Players never wait.
pub(super) const SPECTATOR_COALESCE: Duration = Duration::from_millis(50);

/// How long the events that open a round's reveals (the second commit, `reveal_phase`) may
/// wait for the reveals and the result. Players' clients reveal on their own as soon as they
/// hear of the phase, so the result normally follows within one round trip of theirs; the
/// spectators then get the round's second half in one write, not two passes of writes
/// (a pass over ten thousand spectators takes tens of milliseconds, and a result that comes
/// while the commit's pass is under way waits for it).
pub(super) const SPECTATOR_REVEAL_WAIT: Duration = Duration::from_millis(300);

/// Spectators' sends this task makes between two looks at the game's commands. Each is a
/// write to the spectator's socket that never waits (or a push onto its queue, for its
/// writer task, when the socket is busy), so a chunk costs the players' next command
/// little waiting.
pub(super) const SPECTATOR_CHUNK: usize = 64;

impl Actor {
    /// Encodes each event once and sends it to everyone (`answer` first, to its player);
    /// `received` is when the command that caused them arrived (for the result-latency
    /// histogram). Returns whether `answer` was sent.
    pub(super) fn publish(
        &mut self,
        events: Vec<ServerMsg>,
        received: Instant,
        answer: Option<Answer>,
    ) -> bool {
        if events.is_empty() {
            return answer
                .is_some_and(|a| lock(&self.shared).players.send(&*self.bus, &[], Some(a)));
        }
        let frames: Vec<Bytes> = events
            .iter()
            .map(|e| Bytes::from(wire::encode(e)))
            .collect();
        let now = Instant::now().into_std();
        // (Frames are counted in `messages_out` as sent, by whoever writes them.)
        let (spectators, backlog, answered) = {
            let mut shared = lock(&self.shared);
            let answered = shared.players.send(&*self.bus, &frames, answer);
            let published = self.bus.publish(self.game_id, &frames);
            shared.unpublished = None;
            shared.mirror(&self.state, now);
            (published.subscribers, published.backlog, answered)
        };
        let metrics = Arc::clone(&self.services.metrics);
        if backlog {
            let urgent = events.iter().any(|e| {
                matches!(
                    e,
                    ServerMsg::RoundResult { .. } | ServerMsg::GameOver { .. }
                )
            });
            if urgent {
                self.start_delivery();
            } else if !self.delivering {
                let reveals_due = events
                    .iter()
                    .any(|e| matches!(e, ServerMsg::RevealPhase { .. }));
                let wait = if reveals_due {
                    SPECTATOR_REVEAL_WAIT
                } else {
                    SPECTATOR_COALESCE
                };
                let due = Instant::now() + wait;
                // A wait already running is kept, unless the reveals just began: then what
                // waits (the first commit too, if it came within the coalescing) waits on
                // for them.
                match self.deliver_at {
                    Some(at) if !reveals_due || at >= due => {}
                    _ => self.deliver_at = Some(due),
                }
            }
        }
        let resolved = events
            .iter()
            .filter(|e| matches!(e, ServerMsg::RoundResult { .. }))
            .count() as u64;
        if resolved > 0 {
            metrics.rounds_resolved.fetch_add(resolved, Relaxed);
            metrics.observe_result_latency(received.elapsed());
            if self.state.result().is_none() {
                let summary = self.state.summary(spectators);
                self.services.registry.update_summary(summary);
            }
        }
        answered
    }

    pub(super) fn start_delivery(&mut self) {
        self.deliver_at = None;
        self.delivering = true;
    }

    /// Makes the next chunk of the spectators' sends, then lets other tasks run (the
    /// connections just handed frames, and the players' next moves).
    pub(super) async fn deliver_chunk(&mut self) {
        let delivery = self.deliver(SPECTATOR_CHUNK);
        if delivery.done {
            self.delivering = false;
        } else {
            tokio::task::yield_now().await;
        }
    }

    /// Delivers the whole backlog at once (the game's task is ending).
    pub(super) fn deliver_all(&mut self) {
        self.deliver(usize::MAX);
        self.delivering = false;
        self.deliver_at = None;
    }

    /// One delivery step of `chunk` sends, or of the whole backlog for `usize::MAX`.
    pub(super) fn deliver(&mut self, chunk: usize) -> Delivery {
        let now = Instant::now().into_std();
        let delivery = {
            let (bus, topic) = (&*self.bus, self.game_id);
            let state = &self.state;
            // A spectator that fell behind gets the game as it is now, which covers every
            // frame of the backlog.
            let resync = || {
                Bytes::from(wire::encode(&ServerMsg::Snapshot {
                    id: None,
                    snapshot: state.snapshot(now, bus.subscribers(topic)),
                    seat: None,
                }))
            };
            if chunk == usize::MAX {
                bus::deliver_all(bus, topic, resync)
            } else {
                bus::deliver(bus, topic, chunk, resync)
            }
        };
        if delivery.removed > 0 {
            spectators_left(&self.services, delivery.removed);
            self.spectators_changed();
        }
        delivery
    }

    /// Schedules a spectator-count announcement, batching changes for a second.
    pub(super) fn spectators_changed(&mut self) {
        if self.announce_at.is_none() {
            self.announce_at = Some(Instant::now() + SPECTATOR_BATCH);
        }
    }

    pub(super) fn announce_spectators(&mut self) {
        self.announce_at = None;
        let count = self.bus.subscribers(self.game_id);
        if count == self.announced {
            return;
        }
        self.announced = count;
        let game_id = self.game_id;
        let frame = Bytes::from(wire::encode(&ServerMsg::Spectators { game_id, count }));
        lock(&self.shared).players.send(&*self.bus, &[frame], None);
        if self.state.result().is_none() {
            let summary = self.state.summary(count);
            self.services.registry.update_summary(summary);
        }
    }
}
