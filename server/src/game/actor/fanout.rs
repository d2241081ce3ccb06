//! Who receives a game's events, and what happens when one of them falls behind.
//!
//! Every frame is encoded once by the caller. Players are queued the frames themselves (a
//! reference count each); spectators are written a delivery framed once (`Framed`), each
//! its part of the same bytes.
//! Nothing here waits: a player whose outbox is full has its connection killed (it gets a
//! snapshot when it comes back); a spectator whose outbox is full stops receiving events and
//! is offered a fresh snapshot with each later delivery instead, until one fits or it has
//! failed [`MAX_RESYNC_ATTEMPTS`] times in a row and is dropped.
//!
//! Players get each batch at once. Spectators get it from a backlog that the actor works
//! through in passes of at most a chunk of spectators at a time (`deliver`), yielding
//! between chunks: ten thousand spectators then cost the players' next event a chunk's worth
//! of waiting, not ten thousand wake-ups, and events that arrive while a pass is under way
//! reach the rest of that pass together (one write per spectator, made from the actor's turn
//! when the spectator's socket is free: `Outbox::write_frames`; a chunk's writes are shared
//! with a fan-out helper thread, see `helpers`). Each spectator knows how
//! far into the stream it is, so however passes and batches interleave, it gets every frame
//! once and in order.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::Seat;

use super::helpers::{self, Sent};
use crate::outbox::{Framed, Outbox, SendError};

/// Consecutive deliveries a lagging spectator may fail to take a snapshot before it is
/// dropped.
pub(in crate::game) const MAX_RESYNC_ATTEMPTS: u8 = 3;

#[derive(Debug)]
struct Spectator {
    /// Shared with a fan-out helper while a chunk's sends are made (`helpers::send_all`).
    outbox: Arc<Outbox>,
    /// `Some(failed resyncs)` while it is behind; it then gets snapshots, not events.
    lagging: Option<u8>,
    /// The number, in the game's stream of spectator frames, of the next frame it needs.
    next: u64,
}

/// What one delivery did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(in crate::game) struct Delivery {
    /// Spectators removed (gone, or dropped for lagging).
    pub removed: u32,
    /// Whether every spectator now has every frame (the backlog is empty).
    pub done: bool,
}

#[derive(Debug, Default)]
pub(in crate::game) struct Fanout {
    players: SeatPair<Option<Outbox>>,
    spectators: Vec<Spectator>,
    /// The connections in `spectators`: a new spectator is added without a search of the
    /// list (ten thousand joining a game were ~50 million comparisons).
    watching: HashSet<u64>,
    /// Frames not yet queued to every spectator: frame number `base + i` is `backlog[i]`.
    backlog: VecDeque<Bytes>,
    /// The backlog as one shared slice, framed once, made at the first delivery after it
    /// changed: each spectator is written its part of it as one run of bytes, or queued it
    /// as one item.
    shared: Option<Arc<Framed>>,
    base: u64,
    /// The next spectator of the pass under way.
    cursor: usize,
}

impl Fanout {
    /// Installs (or, with `None`, removes) a seat's connection.
    pub fn set_player(&mut self, seat: Seat, outbox: Option<Outbox>) {
        *self.players.get_mut(seat) = outbox;
    }

    pub fn player_conn(&self, seat: Seat) -> Option<u64> {
        self.players.get(seat).as_ref().map(Outbox::conn_id)
    }

    /// Adds a spectator that has been sent a snapshot of the game as it is now (so it needs
    /// none of the backlog); a connection already watching is replaced. Returns whether the
    /// count grew.
    pub fn add_spectator(&mut self, outbox: Outbox) -> bool {
        let existed = self.remove_spectator(outbox.conn_id());
        self.watching.insert(outbox.conn_id());
        self.spectators.push(Spectator {
            outbox: Arc::new(outbox),
            lagging: None,
            next: self.end(),
        });
        !existed
    }

    pub fn remove_spectator(&mut self, conn_id: u64) -> bool {
        if !self.watching.contains(&conn_id) {
            return false;
        }
        let Some(at) = self
            .spectators
            .iter()
            .position(|s| s.outbox.conn_id() == conn_id)
        else {
            return false;
        };
        self.remove_at(at);
        true
    }

    pub fn spectator_count(&self) -> u32 {
        u32::try_from(self.spectators.len()).unwrap_or(u32::MAX)
    }

    /// Queues frames to both players only, as one item each (one write).
    pub fn to_players(&self, frames: &Arc<[Bytes]>) {
        for player in [&self.players.one, &self.players.two].into_iter().flatten() {
            player.send_or_kill(frames);
        }
    }

    /// Queues a batch of numbered events to both players now, and puts it on the
    /// spectators' backlog for `deliver`.
    pub fn broadcast(&mut self, frames: &[Bytes]) {
        self.to_players(&frames.into());
        if !self.spectators.is_empty() {
            self.backlog.extend(frames.iter().cloned());
            self.shared = None;
        } else {
            // Nobody to wait for: the stream moves on without a backlog.
            self.base += frames.len() as u64;
        }
    }

    /// Whether some spectator still lacks some frame.
    pub fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// Brings up to `chunk` more spectators, from where the pass under way stands, up to date;
    /// `resync` encodes a snapshot of the game as it is now (after every frame of the
    /// backlog) for spectators that are behind, and is called at most once.
    pub fn deliver(&mut self, chunk: usize, mut resync: impl FnMut() -> Bytes) -> Delivery {
        let mut delivery = Delivery::default();
        let end = self.end();
        let backlog =
            Arc::clone(self.shared.get_or_insert_with(|| {
                Arc::new(Framed::new(self.backlog.iter().cloned().collect()))
            }));
        // The chunk: from the cursor on, up to `chunk` spectators that lack frames. Those
        // that are not behind are sent them together (with a helper's hand when there are
        // enough); then each is settled in order.
        let start = self.cursor;
        let mut stop = start;
        let mut work = Vec::new();
        let mut served = 0;
        while served < chunk && stop < self.spectators.len() {
            let s = &self.spectators[stop];
            stop += 1;
            if s.next >= end {
                // Up to date already (passing it over costs nothing worth a chunk).
                continue;
            }
            served += 1;
            if s.lagging.is_none() {
                let from = usize::try_from(s.next - self.base).unwrap_or(usize::MAX);
                work.push((Arc::clone(&s.outbox), from));
            }
        }
        let mut sent = helpers::send_all(work, &backlog).into_iter();
        let mut snapshot: Option<Bytes> = None;
        let mut at = start;
        for _ in start..stop {
            let s = &mut self.spectators[at];
            let keep = if s.next >= end {
                true
            } else if s.lagging.is_none() {
                match sent.next() {
                    Some(Sent::Full) => {
                        s.lagging = Some(0);
                        true
                    }
                    Some(Sent::Closed) => false,
                    Some(Sent::Ok) | None => true,
                }
            } else {
                let frame = snapshot.get_or_insert_with(&mut resync);
                send_resync(s, frame)
            };
            s.next = end;
            if keep {
                at += 1;
            } else {
                // (`remove_at` moves the cursor only for spectators before it.)
                self.remove_at(at);
                delivery.removed += 1;
            }
        }
        self.cursor = at;
        if self.cursor >= self.spectators.len() {
            self.cursor = 0;
            if self.spectators.iter().all(|s| s.next >= end) {
                // Everyone has everything: the backlog can go.
                self.base = end;
                self.backlog.clear();
                self.shared = None;
            }
        }
        delivery.done = self.backlog.is_empty();
        delivery
    }

    /// Delivers the whole backlog now (a game that is stopping).
    pub fn deliver_all(&mut self, mut resync: impl FnMut() -> Bytes) -> Delivery {
        let mut total = Delivery::default();
        loop {
            let delivery = self.deliver(usize::MAX, &mut resync);
            total.removed += delivery.removed;
            if delivery.done {
                total.done = true;
                return total;
            }
        }
    }

    /// The number the next frame of the stream will have.
    fn end(&self) -> u64 {
        self.base + self.backlog.len() as u64
    }

    fn remove_at(&mut self, at: usize) {
        let gone = self.spectators.remove(at);
        self.watching.remove(&gone.outbox.conn_id());
        if at < self.cursor {
            self.cursor -= 1;
        }
        if self.spectators.is_empty() {
            self.base = self.end();
            self.backlog.clear();
            self.shared = None;
            self.cursor = 0;
        }
    }
}

/// Offers a lagging spectator a snapshot; returns whether to keep it.
fn send_resync(s: &mut Spectator, snapshot: &Bytes) -> bool {
    match s.outbox.send(snapshot.clone()) {
        Ok(()) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbound;
    use tokio::sync::mpsc;

    fn frame(n: u8) -> Bytes {
        Bytes::from(vec![n])
    }

    fn spectator(fanout: &mut Fanout, id: u64) -> mpsc::Receiver<Outbound> {
        let (outbox, rx) = Outbox::new(id, 64);
        fanout.add_spectator(outbox);
        rx
    }

    fn received(rx: &mut mpsc::Receiver<Outbound>) -> Vec<u8> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .flat_map(|out| out.frames().iter().map(|b| b[0]).collect::<Vec<_>>())
            .collect()
    }

    fn no_resync() -> Bytes {
        panic!("nobody is lagging")
    }

    #[test]
    fn batches_arriving_mid_pass_reach_every_spectator_once_and_in_order() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..5).map(|id| spectator(&mut fanout, id)).collect();
        fanout.broadcast(&[frame(1)]);
        // Two spectators get frame 1; then frame 2 comes.
        assert!(!fanout.deliver(2, no_resync).done);
        fanout.broadcast(&[frame(2), frame(3)]);
        // The rest of the pass gets 1, 2 and 3 together; a second pass brings the first
        // two up to date.
        let mut deliveries = 0;
        loop {
            deliveries += 1;
            if fanout.deliver(2, no_resync).done {
                break;
            }
            assert!(deliveries < 10, "the backlog never empties");
        }
        for rx in &mut rxs {
            assert_eq!(received(rx), [1, 2, 3]);
        }
        assert!(!fanout.has_backlog());
    }

    #[test]
    fn chunks_offered_to_a_helper_keep_every_spectators_frames_whole_and_in_order() {
        helpers::start(Some(1));
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..100).map(|id| spectator(&mut fanout, id)).collect();
        // One spectator whose connection is gone, one that can hold a single item.
        let gone = spectator(&mut fanout, 100);
        drop(gone);
        let (small, mut small_rx) = Outbox::new(101, 1);
        fanout.add_spectator(small);
        for round in 0..20u8 {
            let base = round * 3;
            fanout.broadcast(&[frame(base)]);
            // Part of a pass, then two more frames mid-pass.
            assert!(!fanout.deliver(40, no_resync).done);
            fanout.broadcast(&[frame(base + 1), frame(base + 2)]);
            let mut deliveries = 0;
            while !fanout.deliver(40, || frame(255)).done {
                deliveries += 1;
                assert!(deliveries < 20, "the backlog never empties");
            }
            for (id, rx) in rxs.iter_mut().enumerate() {
                assert_eq!(received(rx), [base, base + 1, base + 2], "spectator {id}");
            }
            // The small one takes one item a delivery, or is resynced when behind.
            let got = received(&mut small_rx);
            assert!(!got.is_empty(), "round {round}: {got:?}");
        }
        assert_eq!(
            fanout.spectator_count(),
            101,
            "the one that was gone is dropped"
        );
    }

    #[test]
    fn a_spectator_joining_mid_pass_gets_only_what_follows_its_snapshot() {
        let mut fanout = Fanout::default();
        let mut first = spectator(&mut fanout, 1);
        let _second = spectator(&mut fanout, 2);
        fanout.broadcast(&[frame(1)]);
        assert!(!fanout.deliver(1, no_resync).done);
        let mut late = spectator(&mut fanout, 3);
        fanout.broadcast(&[frame(2)]);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut first), [1, 2]);
        assert_eq!(received(&mut late), [2]);
    }

    #[test]
    fn removing_a_spectator_mid_pass_skips_nobody() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..4).map(|id| spectator(&mut fanout, id)).collect();
        fanout.broadcast(&[frame(7)]);
        assert!(!fanout.deliver(2, no_resync).done);
        assert!(fanout.remove_spectator(0));
        assert!(fanout.deliver(10, no_resync).done);
        for rx in &mut rxs[1..] {
            assert_eq!(received(rx), [7]);
        }
        // The last spectator leaving clears the backlog.
        fanout.broadcast(&[frame(8)]);
        for id in 1..4 {
            fanout.remove_spectator(id);
        }
        assert!(!fanout.has_backlog());
    }

    #[test]
    fn a_connection_watches_once_and_leaves_once() {
        let mut fanout = Fanout::default();
        let (first, _rx1) = Outbox::new(5, 4);
        let (again, mut rx2) = Outbox::new(5, 4);
        assert!(fanout.add_spectator(first));
        assert!(
            !fanout.add_spectator(again),
            "the same connection replaces itself"
        );
        assert_eq!(fanout.spectator_count(), 1);
        fanout.broadcast(&[frame(3)]);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut rx2), [3]);
        assert!(!fanout.remove_spectator(6), "never watching");
        assert!(fanout.remove_spectator(5));
        assert!(!fanout.remove_spectator(5), "already gone");
        assert_eq!(fanout.spectator_count(), 0);
        // A connection dropped by a delivery (closed) may watch again.
        let (closed, rx) = Outbox::new(5, 4);
        fanout.add_spectator(closed);
        drop(rx);
        fanout.broadcast(&[frame(4)]);
        assert_eq!(fanout.deliver_all(no_resync).removed, 1);
        let (back, _rx) = Outbox::new(5, 4);
        assert!(fanout.add_spectator(back));
        assert_eq!(fanout.spectator_count(), 1);
    }

    #[test]
    fn a_full_spectator_is_resynced_with_a_snapshot_of_now() {
        let mut fanout = Fanout::default();
        let (outbox, mut rx) = Outbox::new(9, 1);
        fanout.add_spectator(outbox);
        fanout.broadcast(&[frame(1)]);
        assert!(fanout.deliver_all(no_resync).done);
        // Frame 1 fills the outbox, frame 2 does not fit: it is lagging.
        fanout.broadcast(&[frame(2)]);
        assert!(fanout.deliver_all(no_resync).done);
        assert_eq!(received(&mut rx), [1]);
        fanout.broadcast(&[frame(3)]);
        fanout.deliver_all(|| frame(99));
        assert_eq!(received(&mut rx), [99]);
        fanout.broadcast(&[frame(4)]);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut rx), [4]);
    }

    #[test]
    fn a_delivery_queues_each_spectator_one_item_sharing_the_frames() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..3).map(|id| spectator(&mut fanout, id)).collect();
        fanout.broadcast(&[frame(1), frame(2), frame(3)]);
        fanout.deliver_all(no_resync);
        let items: Vec<Outbound> = rxs.iter_mut().map(|rx| rx.try_recv().unwrap()).collect();
        for (item, rx) in items.iter().zip(&mut rxs) {
            assert!(rx.try_recv().is_err(), "one item each");
            let frames: Vec<u8> = item.frames().iter().map(|b| b[0]).collect();
            assert_eq!(frames, [1, 2, 3]);
        }
        // The bytes are the broadcast's own, not copies.
        let first = items[0].frames()[0].as_ptr();
        assert!(items.iter().all(|item| item.frames()[0].as_ptr() == first));
    }
}
