//! A game's topic in the bus within one process: its subscribers (spectators) and the
//! numbered frames not yet queued to all of them.
//!
//! Each published batch is framed once (`Framed`) and each subscriber queued its part of
//! the same frames as one item. Nothing here waits: a subscriber whose queue is full stops
//! receiving events and is offered a snapshot of the game as it is now with each later
//! delivery instead, until one fits or it has failed [`MAX_RESYNC_ATTEMPTS`] times in a
//! row and is dropped (the semantics of `tokio::sync::broadcast`'s `Lagged`). The snapshot
//! is the game's to supply, and only when a delivery reaches a subscriber that lags: the
//! delivery then stops and says so (`Delivery::lagging`), and goes on once the game has
//! handed it one (`Bus::resync`).
//!
//! Deliveries are passes over the subscribers, a chunk of sends per call, so that the
//! game's task, which makes them between its commands, keeps ten thousand spectators from
//! stalling the players' next event. Frames published while a pass is under way go out
//! with the rest of that pass, and a next pass brings the subscribers before it up to
//! date. Each subscriber knows how far into the stream it is, so however passes and
//! batches interleave, it gets every frame once and in order.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;

use super::{Bus, ConnId, Delivery};
use crate::outbox::{Framed, SendError};

/// Consecutive deliveries a lagging subscriber may fail to take a snapshot before it is
/// dropped.
pub(crate) const MAX_RESYNC_ATTEMPTS: u8 = 3;

#[derive(Debug)]
struct Subscriber {
    conn: ConnId,
    /// `Some(failed resyncs)` while it is behind; it then gets snapshots, not events.
    lagging: Option<u8>,
    /// The number, in the topic's stream, of the next frame it needs.
    next: u64,
}

#[derive(Debug, Default)]
pub(super) struct Topic {
    subscribers: Vec<Subscriber>,
    /// The connections in `subscribers`: a new one is added without a search of the list
    /// (ten thousand joining a game were ~50 million comparisons).
    subscribed: HashSet<ConnId>,
    /// Frames not yet queued to every subscriber: frame number `base + i` is `backlog[i]`.
    backlog: VecDeque<Bytes>,
    /// The backlog framed once, made at the first send after it changed: each subscriber
    /// is queued its part of it as one item.
    shared: Option<Arc<Framed>>,
    base: u64,
    /// The next subscriber of the pass under way.
    cursor: usize,
    /// A snapshot of the game after frame `end() - 1`, for subscribers that lag: handed
    /// over for one delivery, when it stopped at one.
    snapshot: Option<(u64, Bytes)>,
}

impl Topic {
    /// Adds a subscriber that has been sent a snapshot of the game as it is now (so it
    /// needs none of the backlog); a connection already subscribed starts over. Returns
    /// whether the count grew.
    pub fn subscribe(&mut self, conn: ConnId) -> bool {
        let existed = self.unsubscribe(conn);
        self.subscribed.insert(conn);
        self.subscribers.push(Subscriber {
            conn,
            lagging: None,
            next: self.end(),
        });
        !existed
    }

    pub fn unsubscribe(&mut self, conn: ConnId) -> bool {
        if !self.subscribed.contains(&conn) {
            return false;
        }
        let Some(at) = self.subscribers.iter().position(|s| s.conn == conn) else {
            return false;
        };
        self.remove_listed(at);
        true
    }

    pub fn subscribed(&self) -> Vec<ConnId> {
        self.subscribers.iter().map(|s| s.conn).collect()
    }

    /// The subscribers that have fallen behind.
    pub fn lagging(&self) -> Vec<ConnId> {
        self.subscribers
            .iter()
            .filter(|s| s.lagging.is_some())
            .map(|s| s.conn)
            .collect()
    }

    pub fn count(&self) -> u32 {
        u32::try_from(self.subscribers.len()).unwrap_or(u32::MAX)
    }

    /// Appends numbered frames to the stream.
    pub fn publish(&mut self, frames: &[Bytes]) {
        if self.subscribers.is_empty() {
            // Nobody to wait for: the stream moves on without a backlog.
            self.base += frames.len() as u64;
            return;
        }
        self.backlog.extend(frames.iter().cloned());
        self.shared = None;
        self.snapshot = None;
    }

    /// Whether some subscriber still lacks some frame.
    pub fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The game as it is now, for the subscribers that lag.
    pub fn resync(&mut self, snapshot: Bytes) {
        self.snapshot = Some((self.end(), snapshot));
    }

    /// Makes up to `chunk` more sends of the pass under way through `bus`, each bringing
    /// its subscriber up to the stream's end; stops at a subscriber that lags while there
    /// is no snapshot of now.
    pub fn deliver(&mut self, bus: &dyn Bus, chunk: usize) -> Delivery {
        let mut delivery = Delivery::default();
        let end = self.end();
        let mut sends = 0;
        while sends < chunk && self.has_backlog() {
            if self.cursor >= self.subscribers.len() {
                self.cursor = 0;
                if self.subscribers.iter().all(|s| s.next >= end) {
                    // Everyone has everything: the backlog can go.
                    self.clear_backlog();
                    break;
                }
            }
            let at = self.cursor;
            if self.subscribers[at].next >= end {
                self.cursor += 1;
                continue;
            }
            let sent = match self.subscribers[at].lagging {
                None => {
                    let base = self.base;
                    let backlog = &self.backlog;
                    let shared = self.shared.get_or_insert_with(|| {
                        Arc::new(Framed::new(backlog.iter().cloned().collect()))
                    });
                    let from =
                        usize::try_from(self.subscribers[at].next - base).unwrap_or(usize::MAX);
                    bus.send_framed(self.subscribers[at].conn, shared, from)
                }
                Some(_) => match &self.snapshot {
                    Some((at_end, frame)) if *at_end == end => {
                        bus.send(self.subscribers[at].conn, frame.clone())
                    }
                    _ => {
                        delivery.lagging = true;
                        return delivery;
                    }
                },
            };
            sends += 1;
            let s = &mut self.subscribers[at];
            s.next = end;
            let keep = match (s.lagging, sent) {
                (_, Err(SendError::Closed)) => false,
                (None, Ok(())) => true,
                (None, Err(SendError::Full)) => {
                    s.lagging = Some(0);
                    true
                }
                (Some(_), Ok(())) => {
                    s.lagging = None;
                    true
                }
                (Some(failed), Err(SendError::Full)) => {
                    let failed = failed + 1;
                    s.lagging = Some(failed);
                    if failed >= MAX_RESYNC_ATTEMPTS {
                        bus.kill(s.conn);
                    }
                    failed < MAX_RESYNC_ATTEMPTS
                }
            };
            if keep {
                self.cursor += 1;
            } else {
                // The next subscriber moves into its place.
                self.remove_listed(at);
                delivery.removed += 1;
            }
        }
        if self.cursor >= self.subscribers.len() && self.subscribers.iter().all(|s| s.next >= end) {
            self.clear_backlog();
        }
        // The next delivery gets a snapshot of its own time.
        self.snapshot = None;
        delivery.done = !self.has_backlog();
        delivery
    }

    /// The number the next frame of the stream will have.
    fn end(&self) -> u64 {
        self.base + self.backlog.len() as u64
    }

    fn clear_backlog(&mut self) {
        self.base = self.end();
        self.backlog.clear();
        self.shared = None;
        self.cursor = 0;
    }

    /// Removes the subscriber at `at` from the list.
    fn remove_listed(&mut self, at: usize) {
        let gone = self.subscribers.remove(at);
        self.subscribed.remove(&gone.conn);
        if at < self.cursor {
            self.cursor -= 1;
        }
        if self.subscribers.is_empty() {
            self.clear_backlog();
        }
    }
}

#[cfg(test)]
mod tests;
