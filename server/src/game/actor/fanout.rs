//! Who receives a game's events, and what happens when one of them falls behind.
//!
//! Every frame is encoded once by the caller. Each batch is framed once (`Framed`) for both
//! players (the reply to a move goes to its player in the same write) and once per
//! delivery for the spectators, each written its part of the same bytes.
//! Nothing here waits: a player whose outbox is full has its connection killed (it gets a
//! snapshot when it comes back); a spectator whose outbox is full stops receiving events and
//! is offered a fresh snapshot with each later delivery instead, until one fits or it has
//! failed [`MAX_RESYNC_ATTEMPTS`] times in a row and is dropped.
//!
//! Players get each batch at once. Spectators get it from a backlog that is worked
//! through in passes: each pass is a [`Job`] of sends, one per spectator that lacks frames
//! (one write, made from the actor's turn when the spectator's socket is free:
//! `Outbox::write_frames`), which the actor works on a chunk at a time, yielding between
//! chunks, and a fan-out helper thread works on without a break (see `helpers`). Ten
//! thousand spectators then cost the players' next event a chunk's worth of waiting, not
//! ten thousand wake-ups. Events that arrive while a pass is under way stop its job where
//! it stands; a new job takes the rest of the pass with them, so they reach the rest of
//! that pass together. Each spectator knows how far into the stream it is, so however
//! passes and batches interleave, it gets every frame once and in order.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::SeatPair;
use elementals_protocol::rules::Seat;

use super::helpers::{Item, Job, Sent};
use crate::outbox::{Framed, Outbox};

/// Consecutive deliveries a lagging spectator may fail to take a snapshot before it is
/// dropped.
pub(crate) const MAX_RESYNC_ATTEMPTS: u8 = 3;

#[derive(Debug)]
struct Spectator {
    /// Shared with a fan-out helper while a pass's sends are made (`helpers::Job`).
    outbox: Arc<Outbox>,
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
    /// The pass's job under way, if any. While there is one, `spectators` only grows at
    /// its end: anything else settles the job first.
    flight: Option<Flight>,
    /// Spectators removed by settling a job outside `deliver` (reported by the next one).
    removed: u32,
}

/// A job under way and where its sends go.
struct Flight {
    job: Arc<Job>,
    /// For each of the job's sends, the spectator's place in `spectators`.
    places: Vec<usize>,
    /// Where the pass goes to: the number of spectators when the job began.
    stop: usize,
    /// The stream's end when the job began: what its sends bring their spectators up to.
    end: u64,
}

impl std::fmt::Debug for Flight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flight")
            .field("sends", &self.job.len())
            .field("stop", &self.stop)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // A job dropped unsettled (its game gone) takes no more sends.
        self.job.stop();
    }
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
        // Places in the list move: the job under way is settled first.
        self.removed += self.land();
        let Some(at) = self
            .spectators
            .iter()
            .position(|s| s.outbox.conn_id() == conn_id)
        else {
            return false;
        };
        self.remove_listed(at);
        true
    }

    pub fn spectator_count(&self) -> u32 {
        u32::try_from(self.spectators.len()).unwrap_or(u32::MAX)
    }

    /// Writes `frames` to both players now, framed once: from this task when a player's
    /// socket takes them at once, else through its queue (see `Outbox::write_frames`).
    /// `answer`'s reply goes first, to its seat alone, if that seat's connection is the
    /// one it answers; returns whether it went.
    pub fn to_players(&self, frames: &[Bytes], answer: Option<Answer>) -> bool {
        let answer = answer.filter(|a| self.player_conn(a.seat) == Some(a.conn_id));
        if self.players.one.is_none() && self.players.two.is_none() {
            return false;
        }
        let all = answer.iter().map(|a| a.frame.clone());
        let framed = Framed::new(all.chain(frames.iter().cloned()).collect());
        for seat in [Seat::One, Seat::Two] {
            if let Some(player) = self.players.get(seat) {
                let from = match &answer {
                    Some(a) if a.seat != seat => 1,
                    _ => 0,
                };
                player.write_or_kill(&framed, from);
            }
        }
        answer.is_some()
    }

    /// Writes a batch of numbered events to both players now (with `answer`, as
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

    /// Makes up to `chunk` more sends of the pass under way, starting a job for the rest of
    /// the pass when there is none. A job that frames have come since stops where it
    /// stands, and once settled the next call's job takes the rest of the pass; `resync`
    /// encodes a snapshot of the game as it is now (after every frame of the backlog) for
    /// spectators that are behind, and is called at most once per job.
    pub fn deliver(&mut self, chunk: usize, resync: impl FnOnce() -> Bytes) -> Delivery {
        let mut delivery = Delivery {
            removed: std::mem::take(&mut self.removed),
            done: false,
        };
        if let Some(flight) = &self.flight {
            if flight.end != self.end() {
                // Frames have come since it began: it stops where it stands, and a new job
                // takes the rest of the pass with them.
                flight.job.halt();
            }
        }
        if self.flight.is_none() && self.has_backlog() {
            self.begin(resync);
        }
        if let Some(flight) = &self.flight {
            // (A halted job takes no sends: it is only waiting to be settled.)
            if !flight.job.run_some(chunk) {
                flight.job.halt();
            }
            // Settled once every send taken is finished: if a helper is still making one,
            // on a later turn rather than holding this worker.
            if flight.job.settled() {
                delivery.removed += self.land();
            }
        }
        delivery.done = !self.has_backlog();
        delivery
    }

    /// Starts a job for the rest of the pass: every spectator from the cursor on that lacks
    /// frames (a snapshot for those that are behind).
    fn begin(&mut self, resync: impl FnOnce() -> Bytes) {
        if self.cursor >= self.spectators.len() {
            self.cursor = 0;
        }
        let end = self.end();
        let backlog =
            Arc::clone(self.shared.get_or_insert_with(|| {
                Arc::new(Framed::new(self.backlog.iter().cloned().collect()))
            }));
        let mut work = Vec::new();
        let mut places = Vec::new();
        let mut behind = false;
        for (at, s) in self.spectators.iter().enumerate().skip(self.cursor) {
            if s.next >= end {
                continue;
            }
            // (A spectator that is behind gets the job's snapshot instead.)
            let from = match s.lagging {
                None => Some(usize::try_from(s.next - self.base).unwrap_or(usize::MAX)),
                Some(_) => None,
            };
            behind |= from.is_none();
            work.push(Item {
                outbox: Arc::clone(&s.outbox),
                from,
            });
            places.push(at);
        }
        let snapshot = behind.then(resync);
        self.flight = Some(Flight {
            job: Job::start(work, backlog, snapshot),
            places,
            stop: self.spectators.len(),
            end,
        });
    }

    /// Ends the job under way where it stands, and settles the sends it made: each of
    /// those spectators is up to its end, and is marked behind, resynchronised or dropped
    /// by what its send did. The pass goes on from the first send not made. Returns the
    /// spectators dropped.
    fn land(&mut self) -> u32 {
        let Some(flight) = self.flight.take() else {
            return 0;
        };
        let made = flight.job.stop();
        let mut removed = 0;
        for k in 0..made {
            // (Removals move the places after them down by one each.)
            let at = flight.places[k] - removed;
            let s = &mut self.spectators[at];
            let keep = match (s.lagging, flight.job.outcome(k)) {
                (_, Sent::Closed) => false,
                (None, Sent::Ok) => true,
                (None, Sent::Full) => {
                    s.lagging = Some(0);
                    true
                }
                (Some(_), Sent::Ok) => {
                    s.lagging = None;
                    true
                }
                (Some(failed), Sent::Full) => {
                    let failed = failed + 1;
                    s.lagging = Some(failed);
                    if failed >= MAX_RESYNC_ATTEMPTS {
                        s.outbox.kill();
                    }
                    failed < MAX_RESYNC_ATTEMPTS
                }
            };
            s.next = flight.end;
            if !keep {
                self.remove_listed(at);
                removed += 1;
            }
        }
        let removed_u32 = u32::try_from(removed).unwrap_or(u32::MAX);
        if self.spectators.is_empty() {
            return removed_u32;
        }
        self.cursor = match flight.places.get(made) {
            Some(place) => place - removed,
            None => flight.stop - removed,
        };
        if self.cursor >= self.spectators.len() {
            self.cursor = 0;
            if self.spectators.iter().all(|s| s.next >= self.end()) {
                // Everyone has everything: the backlog can go.
                self.base = self.end();
                self.backlog.clear();
                self.shared = None;
            }
        }
        removed_u32
    }

    /// Delivers the whole backlog now (a game that is stopping).
    pub fn deliver_all(&mut self, mut resync: impl FnMut() -> Bytes) -> Delivery {
        let mut total = Delivery::default();
        loop {
            // (Waiting, if a helper is still making a send, rather than spinning through
            // `deliver`.)
            total.removed += self.land();
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

    /// Removes the spectator at `at` from the list (no job may be under way, or it is
    /// being settled).
    fn remove_listed(&mut self, at: usize) {
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
    fn passes_shared_with_a_helper_keep_every_spectators_frames_whole_and_in_order() {
        super::super::helpers::start(Some(1));
        let mut fanout = Fanout::default();
        let mut rxs: Vec<_> = (0..100).map(|id| spectator(&mut fanout, id)).collect();
        // One spectator whose connection is gone, one that can hold a single item.
        let gone = spectator(&mut fanout, 100);
        drop(gone);
        let (small, mut small_rx) = Outbox::new(101, 1);
        fanout.add_spectator(small);
        for round in 0..20u8 {
            let base = round * 3;
            fanout.broadcast(&[frame(base)], None);
            // Part of a pass (or all of it, if the helper is quick), then two more frames,
            // mid-pass or after it.
            fanout.deliver(40, || frame(255));
            fanout.broadcast(&[frame(base + 1), frame(base + 2)], None);
            let mut deliveries = 0;
            while !fanout.deliver(40, || frame(255)).done {
                deliveries += 1;
                // (A delivery may find the helper's last send still under way and leave
                // the job for the next call: many calls may make no progress.)
                assert!(deliveries < 10_000_000, "the backlog never empties");
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
        assert!(fanout.add_spectator(first));
        assert!(
            !fanout.add_spectator(again),
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
        fanout.add_spectator(closed);
        drop(rx);
        fanout.broadcast(&[frame(4)], None);
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
        super::super::helpers::start(Some(1));
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
            assert!(fanout.add_spectator(outbox));
            live.push(Watcher {
                id: ids,
                rx,
                joined: sent,
                got: Vec::new(),
            });
            ids += 1;
        };
        // Enough spectators that jobs are shared with the helper.
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
