//! Spectators: what they see, and that a slow one never holds a game back.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::wire;
use tokio::time::{advance, Instant};

use super::super::publish::{SPECTATOR_COALESCE, SPECTATOR_REVEAL_WAIT};
use super::{seqs, Harness, Inbox, TC};

/// Every frame queued to `inbox` so far, raw.
fn raw(inbox: &mut Inbox) -> Vec<Bytes> {
    inbox.raw()
}

/// The spectator counts the players were told.
fn counts(msgs: &[ServerMsg]) -> Vec<u32> {
    msgs.iter()
        .filter_map(|m| match m {
            ServerMsg::Spectators { count, .. } => Some(*count),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_spectator_gets_a_snapshot_then_every_event_in_order_and_no_pick_early() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let mut watcher = Inbox::new(256);
    let snapshot = game.watch(&watcher).await;
    assert_eq!(snapshot.spectators, 1);
    game.play(1, 5, 2).await;
    game.play(2, 1, 2).await;

    let mut frames = raw(&mut watcher);
    // The snapshot was queued first, by the actor, ahead of every later event.
    let first = wire::decode_server(&frames.remove(0)).unwrap();
    assert!(
        matches!(&first, ServerMsg::Snapshot { snapshot: s, seat: None, .. } if *s == snapshot),
        "{first:?}"
    );
    let msgs: Vec<ServerMsg> = frames
        .iter()
        .map(|f| wire::decode_server(f).unwrap())
        .collect();
    let expected: Vec<u64> = (snapshot.seq + 1..).take(msgs.len()).collect();
    assert_eq!(seqs(&msgs), expected);
    // Until a round's result, no frame so much as names a pick.
    for (frame, msg) in frames.iter().zip(&msgs) {
        let names_a_pick = frame.windows(4).any(|w| w == b"pick");
        let is_result = matches!(msg, ServerMsg::RoundResult { .. });
        assert_eq!(names_a_pick, is_result, "{msg:?}");
    }
    // The players hear of the spectator once the batching second has passed.
    assert_eq!(counts(&game.one.drain()), [] as [u32; 0]);
    advance(Duration::from_secs(1)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.one.drain()), [1]);
    assert_eq!(counts(&game.two.drain()), [1]);
    assert_eq!(h.registry().live_games()[0].spectators, 1);

    game.handle.spectator().unwatch(watcher.outbox.conn_id());
    // A snapshot request is answered only after the unwatch before it was handled.
    let _ = game.snapshot().await;
    advance(Duration::from_secs(1)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.two.drain()), [0]);
    assert_eq!(h.metrics().spectators.load(Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn spectator_counts_are_batched() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let watchers: Vec<Inbox> = (0..3).map(|_| Inbox::new(16)).collect();
    for w in &watchers {
        game.watch(w).await;
    }
    advance(Duration::from_millis(999)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.one.drain()), [] as [u32; 0]);
    advance(Duration::from_millis(1)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.one.drain()), [3]);
    assert_eq!(h.metrics().spectators.load(Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn a_spectator_that_stops_reading_is_resynced_or_dropped_and_never_slows_players() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    // A delivery is one outbox item however many events it brings, and each of these
    // outboxes holds the queued snapshot plus one more item. `stuck` never reads; `slow`
    // reads now and then; `witness` reads everything, to tell when a delivery happened.
    let stuck = Inbox::new(2);
    let mut slow = Inbox::new(2);
    let mut witness = Inbox::new(64);
    for w in [&stuck, &slow, &witness] {
        game.watch(w).await;
    }
    assert!(matches!(witness.next().await, ServerMsg::Snapshot { .. }));
    // Round 1 reaches spectators as one delivery (its events come together): both small
    // outboxes are now full.
    game.play(1, 1, 2).await;
    let round_one = [vec![witness.next().await], witness.drain()].concat();
    assert!(matches!(
        round_one.last(),
        Some(ServerMsg::RoundStart { round: 2, .. })
    ));
    let read = slow.drain();
    assert!(matches!(read[0], ServerMsg::Snapshot { .. }));
    assert_eq!(read[1..], round_one[..], "`slow` got round 1 whole");

    // Round 2's first commit: `stuck` has no room and falls behind; `slow` takes it.
    game.one.commit(2, 1).await.unwrap();
    let _ = witness.next().await;
    // The second: `stuck` is offered a snapshot and has no room (its first failure);
    // `slow` is now full.
    game.two.commit(2, 2).await.unwrap();
    let _ = witness.next().await;
    witness.drain();
    // The first reveal: `stuck` fails again, `slow` falls behind.
    game.one.reveal(2, 1).await.unwrap();
    let _ = witness.next().await;
    assert!(!stuck.outbox.kill_token().is_cancelled());
    let read = slow.drain();
    assert!(matches!(read[0], ServerMsg::Committed { round: 2, .. }));
    assert!(matches!(
        read.last(),
        Some(ServerMsg::RevealPhase { round: 2, .. })
    ));

    // The result: `stuck` fails a third time and is dropped; `slow` has room again and
    // gets a snapshot of the game as it now is in place of what it missed.
    game.two.reveal(2, 2).await.unwrap();
    let result = [vec![witness.next().await], witness.drain()].concat();
    stuck.outbox.kill_token().cancelled().await;
    let resync = match slow.next().await {
        ServerMsg::Snapshot {
            id: None,
            snapshot,
            seat: None,
        } => snapshot,
        other => panic!("expected a snapshot, got {other:?}"),
    };
    assert_eq!(resync.rounds.len(), 2);
    assert_eq!(Some(resync.seq), seqs(&result).last().copied());
    assert_eq!(slow.drain(), []);
    // And follows the events again from there.
    game.one.commit(3, 1).await.unwrap();
    assert_eq!(seqs(&[slow.next().await]), [resync.seq + 1]);

    // The players missed nothing and were never cut off.
    let one = game.one.drain();
    let expected: Vec<u64> = (seqs(&one)[0]..).take(one.len()).collect();
    assert_eq!(seqs(&one), expected);
    assert_eq!(*seqs(&one).last().unwrap(), resync.seq + 1);
    assert!(!game.one.inbox.outbox.kill_token().is_cancelled());
    assert!(!game.two.inbox.outbox.kill_token().is_cancelled());
    assert_eq!(h.metrics().spectators.load(Relaxed), 2);
    advance(Duration::from_secs(1)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.two.drain()).last(), Some(&2));
}

#[tokio::test(start_paused = true)]
async fn spectators_get_a_rounds_moves_together_and_its_result_without_waiting() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    // More spectators than one chunk of a delivery.
    let mut watchers: Vec<Inbox> = (0..600).map(|_| Inbox::new(64)).collect();
    for w in &mut watchers {
        game.watch(w).await;
        assert!(matches!(w.next().await, ServerMsg::Snapshot { .. }));
    }
    let start = tokio::time::Instant::now();
    game.one.commit(1, 5).await.unwrap();
    // The players have it at once; spectators not yet (it may be joined by what follows).
    assert_eq!(seqs(&game.two.drain()).len(), 1);
    assert_eq!(watchers[0].drain(), []);
    game.two.commit(1, 2).await.unwrap();
    game.one.reveal(1, 5).await.unwrap();
    game.two.reveal(1, 2).await.unwrap();
    let players: Vec<u64> = seqs(&game.one.drain());
    // The result goes out without the coalescing wait, with everything before it, to
    // every spectator once and in order.
    for w in &mut watchers {
        let mut got = Vec::new();
        while got.len() < players.len() {
            got.push(w.next().await);
        }
        assert_eq!(seqs(&got), players);
        assert!(got
            .iter()
            .any(|m| matches!(m, ServerMsg::RoundResult { .. })));
        assert_eq!(w.drain(), []);
    }
    assert_eq!(tokio::time::Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn a_rounds_second_commit_waits_for_its_reveals_but_no_longer_than_the_reveal_wait() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let mut w = Inbox::new(64);
    game.watch(&w).await;
    assert!(matches!(w.next().await, ServerMsg::Snapshot { .. }));

    // How long after `player`'s commit the spectator hears of it.
    async fn heard(w: &mut Inbox, player: &super::Player, pick: Element) -> Duration {
        let at = Instant::now();
        player.commit(1, pick).await.unwrap();
        let seat = player.handle.seat();
        let msg = w.next().await;
        assert!(
            matches!(msg, ServerMsg::Committed { seat: s, .. } if s == seat),
            "{msg:?}"
        );
        at.elapsed()
    }
    // A first commit waits only the coalescing's 50 ms. The second opens the reveals: it
    // waits for them, and with nobody revealing it goes out when the reveal wait runs out.
    assert_eq!(heard(&mut w, &game.one, 5).await, SPECTATOR_COALESCE);
    assert_eq!(heard(&mut w, &game.two, 2).await, SPECTATOR_REVEAL_WAIT);
    assert!(matches!(w.next().await, ServerMsg::RevealPhase { .. }));
    assert_eq!(w.drain(), []);
    game.one.reveal(1, 5).await.unwrap();
    game.two.reveal(1, 2).await.unwrap();
    while !matches!(w.next().await, ServerMsg::RoundStart { round: 2, .. }) {}

    // Round 2, both commits within the coalescing: both wait for the reveals, which come
    // 100 ms later; the spectator then gets the commits, the reveals and the result at once,
    // as one item (one write), the moment the result is known.
    game.one.drain();
    game.one.commit(2, 5).await.unwrap();
    advance(Duration::from_millis(20)).await;
    game.two.commit(2, 2).await.unwrap();
    advance(Duration::from_millis(100)).await;
    game.one.reveal(2, 5).await.unwrap();
    let t2 = Instant::now();
    game.two.reveal(2, 2).await.unwrap();
    let item = w.rx.recv().await.expect("the outbox is open");
    assert_eq!(t2.elapsed(), Duration::ZERO);
    let got: Vec<ServerMsg> = item.frames().iter().map(super::decode).collect();
    assert_eq!(seqs(&got), seqs(&game.one.drain()));
    assert!(matches!(
        got[0],
        ServerMsg::Committed {
            seat: Seat::One,
            round: 2,
            ..
        }
    ));
    assert!(got
        .iter()
        .any(|m| matches!(m, ServerMsg::RoundResult { .. })));
    assert_eq!(w.drain(), []);
}
