//! Who receives a game's events, and what happens when one of them falls behind.
//!
//! Players and spectators are connections addressed by identity on the bus (`bus::Bus`):
//! the game holds no socket and no outbox. Every frame is encoded once by the caller. Each
//! batch is framed once (`Framed`) for both players (the reply to a move goes to its
//! player in the same item) and once per delivery for the spectators, each handed its
//! part of the same frames. Nothing here waits: the bus queues each recipient's frames for
//! its connection's writer task, or says that its queue is full. A player whose queue is full has its connection killed (it
//! gets a snapshot when it comes back); a spectator whose queue is full stops receiving
//! events and is offered a fresh snapshot with each later delivery instead, until one fits
//! or it has failed [`MAX_RESYNC_ATTEMPTS`] times in a row and is dropped (the semantics of
//! `tokio::sync::broadcast`'s `Lagged`).
//!
//! Players get each batch at once. Spectators get it from a backlog that is worked
//! through in passes, a chunk of sends per turn of the game's task (`deliver`), so ten
//! thousand spectators cost the players' next event a chunk's worth of waiting. Events
//! that arrive while a pass is under way go out with the rest of that pass, and a next
//! pass brings the spectators before it up to date. Each spectator knows how far into the
//! stream it is, so however passes and batches interleave, it gets every frame once and
//! in order.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::Seat;

use crate::bus::{Bus, ConnId, LocalBus};
use crate::outbox::{Framed, SendError};

/// Consecutive deliveries a lagging spectator may fail to take a snapshot before it is
/// dropped.
pub(crate) const MAX_RESYNC_ATTEMPTS: u8 = 3;

#[derive(Debug)]
struct Spectator {
    conn: ConnId,
    /// `Some(failed resyncs)` while it is behind; it then gets snapshots, not events.
    lagging: Option<u8>,
    /// The number, in the game's stream of spectator frames, of the next frame it needs.
    next: u64,
}

/// A reply to a player's move, to go to its seat with the events the move caused.
#[derive(Debug)]
pub(in crate::game) struct Answer {
    pub seat: Seat,
    /// The connection that made the move: the reply goes only if it is still the seat's.
    pub conn_id: u64,
    pub frame: Bytes,
}

/// What one delivery did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(in crate::game) struct Delivery {
    /// Spectators removed (gone, or dropped for lagging).
    pub removed: u32,
    /// Whether every spectator now has every frame (the backlog is empty).
    pub done: bool,
}

#[derive(Debug)]
pub(in crate::game) struct Fanout {
    /// Where the recipients are reached.
    bus: Arc<dyn Bus>,
    players: SeatPair<Option<ConnId>>,
    spectators: Vec<Spectator>,
    /// The connections in `spectators`: a new spectator is added without a search of the
    /// list (ten thousand joining a game were ~50 million comparisons).
    watching: HashSet<u64>,
    /// Frames not yet queued to every spectator: frame number `base + i` is `backlog[i]`.
    backlog: VecDeque<Bytes>,
    /// The backlog framed once, made at the first send after it changed: each spectator is
    /// queued its part of it as one item.
    shared: Option<Arc<Framed>>,
    base: u64,
    /// The next spectator of the pass under way.
    cursor: usize,
}

impl Default for Fanout {
    /// Recipients on a bus of their own, which reaches no connection (for a fanout taken
    /// out of the game's shared state, and tests).
    fn default() -> Self {
        Fanout::new(Arc::new(LocalBus::default()))
    }
}

impl Fanout {
    pub fn new(bus: Arc<dyn Bus>) -> Fanout {
        Fanout {
            bus,
            players: SeatPair::default(),
            spectators: Vec::new(),
            watching: HashSet::new(),
            backlog: VecDeque::new(),
            shared: None,
            base: 0,
            cursor: 0,
        }
    }

    /// The bus the recipients are reached through.
    #[cfg(test)]
    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.bus
    }

    /// Installs (or, with `None`, removes) a seat's connection.
    pub fn set_player(&mut self, seat: Seat, conn: Option<ConnId>) {
        *self.players.get_mut(seat) = conn;
    }

    pub fn player_conn(&self, seat: Seat) -> Option<ConnId> {
        *self.players.get(seat)
    }

    /// Adds a spectator that has been sent a snapshot of the game as it is now (so it needs
    /// none of the backlog); a connection already watching is replaced. Returns whether the
    /// count grew.
    pub fn add_spectator(&mut self, conn: ConnId) -> bool {
        let existed = self.remove_spectator(conn);
        self.watching.insert(conn);
        self.spectators.push(Spectator {
            conn,
            lagging: None,
            next: self.end(),
        });
        !existed
    }

    pub fn remove_spectator(&mut self, conn_id: u64) -> bool {
        if !self.watching.contains(&conn_id) {
            return false;
        }
        let Some(at) = self.spectators.iter().position(|s| s.conn == conn_id) else {
            return false;
        };
        self.remove_listed(at);
        true
    }

    pub fn spectator_count(&self) -> u32 {
        u32::try_from(self.spectators.len()).unwrap_or(u32::MAX)
    }

    /// Queues `frames` to both players now, framed once. `answer`'s reply goes first, to
    /// its seat alone, if that seat's connection is the one it answers; returns whether it
    /// went.
    pub fn to_players(&self, frames: &[Bytes], answer: Option<Answer>) -> bool {
        let answer = answer.filter(|a| self.player_conn(a.seat) == Some(a.conn_id));
        if self.players.one.is_none() && self.players.two.is_none() {
            return false;
        }
        let all = answer.iter().map(|a| a.frame.clone());
        let framed = Arc::new(Framed::new(all.chain(frames.iter().cloned()).collect()));
        for seat in [Seat::One, Seat::Two] {
            if let Some(player) = *self.players.get(seat) {
                let from = match &answer {
                    Some(a) if a.seat != seat => 1,
                    _ => 0,
                };
                self.bus.send_framed_or_kill(player, &framed, from);
            }
        }
        answer.is_some()
    }

    /// Queues a batch of numbered events to both players now (with `answer`, as
    /// `to_players`; returns whether it went), and puts it on the spectators' backlog for
    /// `deliver`.
    pub fn broadcast(&mut self, frames: &[Bytes], answer: Option<Answer>) -> bool {
        let answered = self.to_players(frames, answer);
        if !self.spectators.is_empty() {
            self.backlog.extend(frames.iter().cloned());
            self.shared = None;
        } else {
            // Nobody to wait for: the stream moves on without a backlog.
            self.base += frames.len() as u64;
        }
        answered
    }

    /// Whether some spectator still lacks some frame.
    pub fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// Makes up to `chunk` more sends of the pass under way, each bringing its spectator up
    /// to the stream's end; `resync` encodes a snapshot of the game as it is now (after
    /// every frame of the backlog) for spectators that are behind, and is called at most
    /// once per delivery.
    pub fn deliver(&mut self, chunk: usize, resync: impl FnOnce() -> Bytes) -> Delivery {
        let mut delivery = Delivery::default();
        let mut resync = Some(resync);
        let mut snapshot: Option<Bytes> = None;
        let end = self.end();
        let mut sends = 0;
        while sends < chunk && self.has_backlog() {
            if self.cursor >= self.spectators.len() {
                self.cursor = 0;
                if self.spectators.iter().all(|s| s.next >= end) {
                    // Everyone has everything: the backlog can go.
                    self.base = end;
                    self.backlog.clear();
                    self.shared = None;
                    break;
                }
            }
            let at = self.cursor;
            if self.spectators[at].next >= end {
                self.cursor += 1;
                continue;
            }
            sends += 1;
            let sent = match self.spectators[at].lagging {
                None => {
                    let base = self.base;
                    let backlog = &self.backlog;
                    let shared = self.shared.get_or_insert_with(|| {
                        Arc::new(Framed::new(backlog.iter().cloned().collect()))
                    });
                    let from =
                        usize::try_from(self.spectators[at].next - base).unwrap_or(usize::MAX);
                    self.bus.send_framed(self.spectators[at].conn, shared, from)
                }
                Some(_) => {
                    let frame = snapshot.get_or_insert_with(|| {
                        resync.take().map_or_else(Bytes::new, |resync| resync())
                    });
                    self.bus.send(self.spectators[at].conn, frame.clone())
                }
            };
            let s = &mut self.spectators[at];
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
                        self.bus.kill(s.conn);
                    }
                    failed < MAX_RESYNC_ATTEMPTS
                }
            };
            if keep {
                self.cursor += 1;
            } else {
                // The next spectator moves into its place.
                self.remove_listed(at);
                delivery.removed += 1;
            }
        }
        if self.cursor >= self.spectators.len() && self.spectators.iter().all(|s| s.next >= end) {
            self.cursor = 0;
            self.base = end;
            self.backlog.clear();
            self.shared = None;
        }
        delivery.done = !self.has_backlog();
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

    /// Removes the spectator at `at` from the list.
    fn remove_listed(&mut self, at: usize) {
        let gone = self.spectators.remove(at);
        self.watching.remove(&gone.conn);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::{Outbound, Outbox};
    use tokio::sync::mpsc;

    /// Puts `outbox`'s connection on the fanout's bus (in place of any earlier one of
    /// its id) and adds it as a spectator.
    fn add(fanout: &mut Fanout, outbox: Outbox) -> bool {
        fanout.bus().disconnect(outbox.conn_id());
        fanout.bus().connect(&outbox);
        fanout.add_spectator(outbox.conn_id())
    }

    fn frame(n: u8) -> Bytes {
        Bytes::from(vec![n])
    }

    fn spectator(fanout: &mut Fanout, id: u64) -> mpsc::Receiver<Outbound> {
        let (outbox, rx) = Outbox::new(id, 64);
        add(fanout, outbox);
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
        fanout.broadcast(&[frame(1)], None);
        // Two spectators get frame 1; then frame 2 comes.
        assert!(!fanout.deliver(2, no_resync).done);
        fanout.broadcast(&[frame(2), frame(3)], None);
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
    fn passes_over_many_spectators_keep_every_spectators_frames_whole_and_in_order() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..100).map(|id| spectator(&mut fanout, id)).collect();
        // One spectator whose connection is gone, one that can hold a single item.
        let gone = spectator(&mut fanout, 100);
        drop(gone);
        let (small, mut small_rx) = Outbox::new(101, 1);
        add(&mut fanout, small);
        for round in 0..20u8 {
            let base = round * 3;
            fanout.broadcast(&[frame(base)], None);
            // Part of a pass, then two more frames mid-pass.
            fanout.deliver(40, || frame(255));
            fanout.broadcast(&[frame(base + 1), frame(base + 2)], None);
            let mut deliveries = 0;
            while !fanout.deliver(40, || frame(255)).done {
                deliveries += 1;
                assert!(deliveries < 100, "the backlog never empties");
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
        fanout.broadcast(&[frame(1)], None);
        assert!(!fanout.deliver(1, no_resync).done);
        let mut late = spectator(&mut fanout, 3);
        fanout.broadcast(&[frame(2)], None);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut first), [1, 2]);
        assert_eq!(received(&mut late), [2]);
    }

    #[test]
    fn removing_a_spectator_mid_pass_skips_nobody() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..4).map(|id| spectator(&mut fanout, id)).collect();
        fanout.broadcast(&[frame(7)], None);
        assert!(!fanout.deliver(2, no_resync).done);
        assert!(fanout.remove_spectator(0));
        assert!(fanout.deliver(10, no_resync).done);
        for rx in &mut rxs[1..] {
            assert_eq!(received(rx), [7]);
        }
        // The last spectator leaving clears the backlog.
        fanout.broadcast(&[frame(8)], None);
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
        assert!(add(&mut fanout, first));
        assert!(
            !add(&mut fanout, again),
            "the same connection replaces itself"
        );
        assert_eq!(fanout.spectator_count(), 1);
        fanout.broadcast(&[frame(3)], None);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut rx2), [3]);
        assert!(!fanout.remove_spectator(6), "never watching");
        assert!(fanout.remove_spectator(5));
        assert!(!fanout.remove_spectator(5), "already gone");
        assert_eq!(fanout.spectator_count(), 0);
        // A connection dropped by a delivery (closed) may watch again.
        let (closed, rx) = Outbox::new(5, 4);
        add(&mut fanout, closed);
        drop(rx);
        fanout.broadcast(&[frame(4)], None);
        assert_eq!(fanout.deliver_all(no_resync).removed, 1);
        let (back, _rx) = Outbox::new(5, 4);
        assert!(add(&mut fanout, back));
        assert_eq!(fanout.spectator_count(), 1);
    }

    #[test]
    fn a_full_spectator_is_resynced_with_a_snapshot_of_now() {
        let mut fanout = Fanout::default();
        let (outbox, mut rx) = Outbox::new(9, 1);
        add(&mut fanout, outbox);
        fanout.broadcast(&[frame(1)], None);
        assert!(fanout.deliver_all(no_resync).done);
        // Frame 1 fills the outbox, frame 2 does not fit: it is lagging.
        fanout.broadcast(&[frame(2)], None);
        assert!(fanout.deliver_all(no_resync).done);
        assert_eq!(received(&mut rx), [1]);
        fanout.broadcast(&[frame(3)], None);
        fanout.deliver_all(|| frame(99));
        assert_eq!(received(&mut rx), [99]);
        fanout.broadcast(&[frame(4)], None);
        fanout.deliver_all(no_resync);
        assert_eq!(received(&mut rx), [4]);
    }

    #[test]
    fn a_delivery_queues_each_spectator_one_item_sharing_the_frames() {
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..3).map(|id| spectator(&mut fanout, id)).collect();
        fanout.broadcast(&[frame(1), frame(2), frame(3)], None);
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

    #[test]
    fn random_joins_leaves_batches_and_chunks_keep_every_stream_whole_and_in_order() {
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut random = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        struct Watcher {
            id: u64,
            rx: mpsc::Receiver<Outbound>,
            /// The frame it joined before: it must get every frame from there on.
            joined: u32,
            got: Vec<u32>,
        }
        fn take(w: &mut Watcher) {
            while let Ok(out) = w.rx.try_recv() {
                for frame in out.frames() {
                    w.got
                        .push(u32::from_be_bytes(frame[..4].try_into().unwrap()));
                }
            }
        }
        let mut fanout = Fanout::default();
        let mut live: Vec<Watcher> = Vec::new();
        let (mut sent, mut ids) = (0u32, 0u64);
        let mut join = |fanout: &mut Fanout, live: &mut Vec<Watcher>, sent: u32| {
            let (outbox, rx) = Outbox::new(ids, 4096);
            assert!(add(fanout, outbox));
            live.push(Watcher {
                id: ids,
                rx,
                joined: sent,
                got: Vec::new(),
            });
            ids += 1;
        };
        // Enough spectators that passes take several chunks.
        for _ in 0..300 {
            join(&mut fanout, &mut live, sent);
        }
        for step in 0..4000 {
            match random(10) {
                0 => join(&mut fanout, &mut live, sent),
                1 if !live.is_empty() => {
                    let mut w = live.swap_remove(random(live.len() as u64) as usize);
                    assert!(fanout.remove_spectator(w.id), "step {step}");
                    take(&mut w);
                    // Whatever it got before it left is the start of its stream.
                    let want: Vec<u32> = (w.joined..).take(w.got.len()).collect();
                    assert_eq!(w.got, want, "step {step}: spectator {}", w.id);
                }
                2..=4 => {
                    let frames: Vec<Bytes> = (0..1 + random(3))
                        .map(|_| {
                            sent += 1;
                            Bytes::copy_from_slice(&(sent - 1).to_be_bytes())
                        })
                        .collect();
                    fanout.broadcast(&frames, None);
                }
                _ => {
                    let chunk = 1 + random(200) as usize;
                    assert_eq!(fanout.deliver(chunk, no_resync).removed, 0, "step {step}");
                }
            }
            for w in &mut live {
                take(w);
            }
        }
        fanout.deliver_all(no_resync);
        assert!(!fanout.has_backlog());
        for w in &mut live {
            take(w);
            let want: Vec<u32> = (w.joined..sent).collect();
            assert_eq!(w.got, want, "spectator {}", w.id);
        }
        assert_eq!(fanout.spectator_count() as usize, live.len());
    }
}
