//! Spectators: what they see, and that a slow one never holds a game back.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::time::advance;

use super::{seqs, Harness, Inbox, TC};
use crate::outbox::Outbound;

/// Every frame queued to `inbox` so far, raw.
fn raw(inbox: &mut Inbox) -> Vec<Bytes> {
    std::iter::from_fn(|| match inbox.rx.try_recv() {
        Ok(Outbound::Frame(bytes)) => Some(bytes),
        _ => None,
    })
    .collect()
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
    let spectator = game.handle.spectator();
    let snapshot = spectator.watch(watcher.outbox.clone(), None).await.unwrap();
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

    spectator.unwatch(watcher.outbox.conn_id());
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
        game.handle
            .spectator()
            .watch(w.outbox.clone(), None)
            .await
            .unwrap();
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
    // `stuck` never reads; `slow` holds two frames and catches up between rounds.
    // Each outbox holds the queued snapshot plus the capacity named here.
    let stuck = Inbox::new(1 + 1);
    let mut slow = Inbox::new(1 + 2);
    for w in [&stuck, &slow] {
        game.handle
            .spectator()
            .watch(w.outbox.clone(), None)
            .await
            .unwrap();
    }
    game.play(1, 1, 2).await;
    assert!(!stuck.outbox.kill_token().is_cancelled());
    slow.drain();

    // Round 2's first event: `stuck` fails its third resync and is dropped; `slow` is
    // offered a snapshot that includes that event, and then follows events again.
    game.one.commit(2, 1).await.unwrap();
    assert!(stuck.outbox.kill_token().is_cancelled());
    let resync = match slow.drain().as_slice() {
        [ServerMsg::Snapshot {
            id: None,
            snapshot,
            seat: None,
        }] => snapshot.clone(),
        other => panic!("expected one snapshot, got {other:?}"),
    };
    assert!(resync.committed.one);
    game.two.commit(2, 2).await.unwrap();
    let caught_up = slow.drain();
    assert_eq!(seqs(&caught_up), [resync.seq + 1, resync.seq + 2]);

    // The players missed nothing and were never cut off.
    let one = game.one.drain();
    let expected: Vec<u64> = (seqs(&one)[0]..).take(one.len()).collect();
    assert_eq!(seqs(&one), expected);
    assert_eq!(*seqs(&one).last().unwrap(), resync.seq + 2);
    assert!(!game.one.inbox.outbox.kill_token().is_cancelled());
    assert!(!game.two.inbox.outbox.kill_token().is_cancelled());
    assert_eq!(h.metrics().spectators.load(Relaxed), 1);
    advance(Duration::from_secs(1)).await;
    let _ = game.snapshot().await;
    assert_eq!(counts(&game.two.drain()), [1]);
}
