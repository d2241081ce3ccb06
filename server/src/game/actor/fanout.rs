//! Who receives a game's events, and what happens when one of them falls behind.
//!
//! Every frame is encoded once by the caller and cloned (a reference count) per recipient.
//! Nothing here waits: a player whose outbox is full has its connection killed (it gets a
//! snapshot when it comes back); a spectator whose outbox is full stops receiving events and
//! is offered a fresh snapshot with each later batch instead, until one fits or it has failed
//! [`MAX_RESYNC_ATTEMPTS`] times in a row and is dropped.

use bytes::Bytes;
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::Seat;

use crate::outbox::{Outbox, SendError};

/// Consecutive batches a lagging spectator may fail to take a snapshot before it is dropped.
pub(in crate::game) const MAX_RESYNC_ATTEMPTS: u8 = 3;

#[derive(Debug)]
struct Spectator {
    outbox: Outbox,
    /// `Some(failed resyncs)` while it is behind; it then gets snapshots, not events.
    lagging: Option<u8>,
}

/// What one broadcast did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(in crate::game) struct Delivery {
    /// Frames queued, counting each recipient.
    pub queued: u64,
    /// Spectators removed (gone, or dropped for lagging).
    pub removed: u32,
}

#[derive(Debug, Default)]
pub(in crate::game) struct Fanout {
    players: SeatPair<Option<Outbox>>,
    spectators: Vec<Spectator>,
}

impl Fanout {
    /// Installs (or, with `None`, removes) a seat's connection.
    pub fn set_player(&mut self, seat: Seat, outbox: Option<Outbox>) {
        *self.players.get_mut(seat) = outbox;
    }

    pub fn player_conn(&self, seat: Seat) -> Option<u64> {
        self.players.get(seat).as_ref().map(Outbox::conn_id)
    }

    /// Adds a spectator; a connection already watching is replaced. Returns whether the
    /// count grew.
    pub fn add_spectator(&mut self, outbox: Outbox) -> bool {
        let existed = self.remove_spectator(outbox.conn_id());
        self.spectators.push(Spectator {
            outbox,
            lagging: None,
        });
        !existed
    }

    pub fn remove_spectator(&mut self, conn_id: u64) -> bool {
        let before = self.spectators.len();
        self.spectators.retain(|s| s.outbox.conn_id() != conn_id);
        self.spectators.len() != before
    }

    pub fn spectator_count(&self) -> u32 {
        u32::try_from(self.spectators.len()).unwrap_or(u32::MAX)
    }

    /// Queues one unnumbered frame to both players only.
    pub fn to_players(&self, frame: &Bytes) -> u64 {
        let players = [&self.players.one, &self.players.two];
        players
            .into_iter()
            .flatten()
            .map(|p| u64::from(send_to_player(p, frame)))
            .sum()
    }

    /// Queues a batch of numbered events to both players and every spectator in step;
    /// `resync` encodes a snapshot (taken after the batch) for spectators that are behind,
    /// and is called at most once.
    pub fn broadcast(&mut self, frames: &[Bytes], mut resync: impl FnMut() -> Bytes) -> Delivery {
        let mut delivery = Delivery::default();
        for frame in frames {
            delivery.queued += self.to_players(frame);
        }
        let mut snapshot: Option<Bytes> = None;
        self.spectators.retain_mut(|s| {
            let keep = match s.lagging {
                None => send_events(s, frames, &mut delivery.queued),
                Some(_) => {
                    let frame = snapshot.get_or_insert_with(&mut resync);
                    send_resync(s, frame, &mut delivery.queued)
                }
            };
            delivery.removed += u32::from(!keep);
            keep
        });
        delivery
    }
}

/// `Outbox::send_or_kill`, but saying whether the frame was queued (for the metrics).
fn send_to_player(outbox: &Outbox, frame: &Bytes) -> bool {
    match outbox.send(frame.clone()) {
        Ok(()) => true,
        Err(SendError::Full) => {
            outbox.kill();
            false
        }
        Err(SendError::Closed) => false,
    }
}

/// Sends the batch to a spectator in step; returns whether to keep it.
fn send_events(s: &mut Spectator, frames: &[Bytes], queued: &mut u64) -> bool {
    for frame in frames {
        match s.outbox.send(frame.clone()) {
            Ok(()) => *queued += 1,
            Err(SendError::Full) => {
                s.lagging = Some(0);
                return true;
            }
            Err(SendError::Closed) => return false,
        }
    }
    true
}

/// Offers a lagging spectator a snapshot; returns whether to keep it.
fn send_resync(s: &mut Spectator, snapshot: &Bytes, queued: &mut u64) -> bool {
    match s.outbox.send(snapshot.clone()) {
        Ok(()) => {
            *queued += 1;
            s.lagging = None;
            true
        }
        Err(SendError::Full) => {
            let failed = s.lagging.unwrap_or(0) + 1;
            if failed >= MAX_RESYNC_ATTEMPTS {
                s.outbox.kill();
                return false;
            }
            s.lagging = Some(failed);
            true
        }
        Err(SendError::Closed) => false,
    }
}
