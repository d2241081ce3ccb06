use bytes::Bytes;
use elementals_protocol::messages::GameId;
use tokio::sync::mpsc;

use crate::bus::{Bus, Delivery, LocalBus, Published};
use crate::outbox::{Outbound, Outbox};

/// One game's topic on a bus of its own.
struct Fanout {
    bus: LocalBus,
    topic: GameId,
}

impl Fanout {
    fn default() -> Fanout {
        Fanout {
            bus: LocalBus::default(),
            topic: GameId::new_random_from([1; 16]),
        }
    }

    fn broadcast(&mut self, frames: &[Bytes]) -> Published {
        self.bus.publish(self.topic, frames)
    }

    fn deliver(&mut self, chunk: usize, resync: impl FnOnce() -> Bytes) -> Delivery {
        crate::bus::deliver(&self.bus, self.topic, chunk, resync)
    }

    fn deliver_all(&mut self, resync: impl FnMut() -> Bytes) -> Delivery {
        crate::bus::deliver_all(&self.bus, self.topic, resync)
    }

    fn remove_spectator(&mut self, conn: u64) -> bool {
        self.bus.unsubscribe(self.topic, conn)
    }

    fn spectator_count(&self) -> u32 {
        self.bus.subscribers(self.topic)
    }

    fn has_backlog(&self) -> bool {
        self.bus.has_backlog(self.topic)
    }
}

/// Puts `outbox`'s connection on the bus (in place of any earlier one of its id) and
/// subscribes it.
fn add(fanout: &mut Fanout, outbox: Outbox) -> bool {
    fanout.bus.disconnect(outbox.conn_id());
    fanout.bus.connect(&outbox);
    fanout.bus.subscribe(fanout.topic, outbox.conn_id())
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
    let published = fanout.broadcast(&[frame(1)]);
    assert_eq!(
        published,
        Published {
            subscribers: 5,
            backlog: true
        }
    );
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
        fanout.broadcast(&[frame(base)]);
        // Part of a pass, then two more frames mid-pass.
        fanout.deliver(40, || frame(255));
        fanout.broadcast(&[frame(base + 1), frame(base + 2)]);
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
    assert!(add(&mut fanout, first));
    assert!(
        !add(&mut fanout, again),
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
    add(&mut fanout, closed);
    drop(rx);
    fanout.broadcast(&[frame(4)]);
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
                fanout.broadcast(&frames);
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

#[test]
fn the_topic_asks_for_a_snapshot_only_when_it_reaches_a_subscriber_that_lags() {
    let mut fanout = Fanout::default();
    let (small, mut small_rx) = Outbox::new(1, 1);
    add(&mut fanout, small);
    let mut big = spectator(&mut fanout, 2);
    fanout.broadcast(&[frame(1)]);
    fanout.broadcast(&[frame(2)]);
    // Both frames go as one item: the small queue holds it.
    assert!(!fanout.bus.deliver(fanout.topic, 10).lagging);
    fanout.broadcast(&[frame(3)]);
    // Frame 3 does not fit the small one's queue: it lags from now on.
    let first = fanout.bus.deliver(fanout.topic, 10);
    assert!(first.done && !first.lagging);
    assert_eq!(received(&mut small_rx), [1, 2]);
    fanout.broadcast(&[frame(4)]);
    // The delivery stops at it and asks; the others are not held up behind it.
    let asked = fanout.bus.deliver(fanout.topic, 10);
    assert!(asked.lagging && !asked.done, "{asked:?}");
    assert_eq!(received(&mut big), [1, 2, 3]);
    fanout.bus.resync(fanout.topic, frame(99));
    assert!(fanout.bus.deliver(fanout.topic, 10).done);
    assert_eq!(received(&mut small_rx), [99]);
    assert_eq!(received(&mut big), [4]);
    // A snapshot serves one delivery: the next one asks again if it must.
    assert_eq!(fanout.bus.close_topic(fanout.topic), 2);
    assert_eq!(fanout.spectator_count(), 0);
}

#[test]
fn a_topic_nobody_watches_keeps_no_backlog() {
    let mut fanout = Fanout::default();
    assert_eq!(fanout.broadcast(&[frame(1)]), Published::default());
    let mut rx = spectator(&mut fanout, 1);
    // The new subscriber had a snapshot: it needs only what comes after it.
    let published = fanout.broadcast(&[frame(2)]);
    assert_eq!((published.subscribers, published.backlog), (1, true));
    assert!(fanout.deliver_all(no_resync).done);
    assert_eq!(received(&mut rx), [2]);
    assert!(fanout.remove_spectator(1));
    assert_eq!(fanout.broadcast(&[frame(3)]), Published::default());
}
