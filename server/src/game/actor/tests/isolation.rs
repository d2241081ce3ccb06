//! What one connection sends cannot cost another: time a move spends in the game's queue
//! is not charged to its player, spectators' commands never queue ahead of moves, and a
//! seat's departure reaches the game however full its queue is.

use std::time::Duration;

use elementals_protocol::messages::{Clocks, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
use tokio::sync::mpsc;
use tokio::time::{advance, Instant};

use super::{answered, asking, Game, Harness, Inbox, Player, TC};
use crate::game::SPECTATOR_CHANNEL_CAPACITY;
use crate::game::{GameCmd, Notice, SeatAction, GAME_CHANNEL_CAPACITY};

/// Where the word that a request is answered comes.
type Notices = mpsc::UnboundedReceiver<Notice>;

/// Queues `action` for `player`'s seat as a move that `arrived` then, from a connection of
/// its own, without waiting for the answer; the notices say once it is answered.
async fn queue(player: &Player, action: SeatAction, arrived: Instant) -> (Inbox, Notices) {
    let asker = Inbox::new(8);
    let (reply, notices) = asking(&*player.bus, &asker.outbox, Some(1));
    player.handle.act(action, reply, arrived).await;
    (asker, notices)
}

/// Queues a `watch` from `watcher` without waiting for room; `Err` once the spectators'
/// queue is full.
fn try_watch(game: &Game, watcher: &Inbox) -> Result<Notices, ()> {
    let (reply, notices) = asking(&*game.one.bus, &watcher.outbox, None);
    game.handle
        .try_send(GameCmd::Watch { reply })
        .map_err(drop)?;
    Ok(notices)
}

/// The clocks of the round's `reveal_phase` among `msgs`.
fn reveal_phase_clocks(msgs: Vec<ServerMsg>) -> (u64, u64) {
    let clocks: Clocks = msgs
        .into_iter()
        .find_map(|m| match m {
            ServerMsg::RevealPhase { clocks, .. } => Some(clocks),
            _ => None,
        })
        .expect("both committed");
    (clocks.one_ms, clocks.two_ms)
}

#[tokio::test(start_paused = true)]
async fn a_move_that_waits_in_the_games_queue_is_charged_from_its_arrival() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.play(1, 1, 1).await;
    game.one.commit(2, 3).await.unwrap();
    game.one.drain();
    // Two's commit arrives now, behind a refused move of one's; the game gets to both only
    // ten seconds later (here: the test does not yield to it before then).
    let arrived = Instant::now();
    let (_first, mut first) = queue(&game.one, SeatAction::DeclineDraw, arrived).await;
    let commit = game.two.commitment(2, 4);
    let (_second, mut second) = queue(&game.two, commit, arrived).await;
    advance(Duration::from_secs(10)).await;
    answered(&mut first).await;
    assert!(answered(&mut second).await);
    // Two's bank is whole (60 s and the 2 s increment): the ten seconds were the queue's.
    assert_eq!(reveal_phase_clocks(game.one.drain()), (62_000, 62_000));
}

#[tokio::test(start_paused = true)]
async fn a_move_that_arrived_in_time_is_in_time_though_the_game_sees_it_after_the_deadline() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.play(1, 1, 1).await;
    game.one.commit(2, 3).await.unwrap();
    game.one.drain();
    // Two's bank (62 s) has a millisecond left when its commit arrives...
    advance(Duration::from_millis(61_999)).await;
    let commit = game.two.commitment(2, 4);
    let (_asker, mut sent) = queue(&game.two, commit, Instant::now()).await;
    // ...and the game gets to it only after the deadline has passed.
    advance(Duration::from_millis(2)).await;
    assert!(answered(&mut sent).await);
    let msgs = game.one.drain();
    assert!(
        !msgs.iter().any(|m| matches!(m, ServerMsg::GameOver { .. })),
        "lost on time: {msgs:?}"
    );
    assert_eq!(reveal_phase_clocks(msgs), (62_000, 1));
}

#[tokio::test(start_paused = true)]
async fn a_move_is_never_judged_before_an_instant_the_game_already_judged() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.play(1, 1, 1).await;
    game.one.commit(2, 3).await.unwrap();
    game.one.drain();
    let arrived = Instant::now();
    advance(Duration::from_secs(3)).await;
    // The game looks at its clocks three seconds on (a snapshot settles deadlines then)...
    assert_eq!(game.snapshot().await.clocks.two_ms, 59_000);
    // ...so a move stamped earlier is judged then, not at its stamp: clocks never run back.
    let commit = game.two.commitment(2, 4);
    let (_asker, mut sent) = queue(&game.two, commit, arrived).await;
    assert!(answered(&mut sent).await);
    assert_eq!(reveal_phase_clocks(game.one.drain()), (62_000, 59_000));
}

#[tokio::test(start_paused = true)]
async fn moves_are_handled_before_any_spectators_command_however_many_wait() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    // The spectators' queue fills (the game has not run since: nothing here yields)...
    let mut watchers: Vec<Inbox> = (0..=SPECTATOR_CHANNEL_CAPACITY)
        .map(|_| Inbox::new(64))
        .collect();
    let mut snapshots = Vec::new();
    for watcher in &watchers {
        match try_watch(&game, watcher) {
            Ok(notices) => snapshots.push(notices),
            Err(()) => break,
        }
    }
    assert_eq!(
        snapshots.len(),
        SPECTATOR_CHANNEL_CAPACITY,
        "the path is bounded"
    );
    // ...and a move queued after all of them is handled first: every watcher's snapshot
    // already shows it.
    let commit = game.one.commitment(1, 2);
    let (_asker, mut sent) = queue(&game.one, commit, Instant::now()).await;
    for (watcher, mut notices) in watchers.iter_mut().zip(snapshots) {
        assert!(answered(&mut notices).await);
        let snapshot = match watcher.drain().as_slice() {
            [ServerMsg::Snapshot { snapshot, .. }] => snapshot.clone(),
            other => panic!("expected the snapshot, got {other:?}"),
        };
        assert!(
            snapshot.committed.one,
            "a watch was handled before the move"
        );
    }
    assert!(answered(&mut sent).await);
    game.one.drain();
}

#[tokio::test(start_paused = true)]
async fn a_detach_reaches_the_game_even_when_its_queue_is_full() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    // Fill the players' queue with refused moves (the game has not run since).
    let mut answers = Vec::new();
    loop {
        let asker = Inbox::new(8);
        let (reply, notices) = asking(&*game.one.bus, &asker.outbox, Some(1));
        let cmd = GameCmd::Act {
            seat: Seat::One,
            action: SeatAction::DeclineDraw,
            reply,
            arrived: Instant::now(),
        };
        match game.handle.try_send(cmd) {
            Ok(()) => answers.push((asker, notices)),
            Err(_) => break,
        }
    }
    assert_eq!(answers.len(), GAME_CHANNEL_CAPACITY);
    // Two's connection goes away now: the game hears of it after the queued moves.
    let conn = game.two.inbox.outbox.conn_id();
    game.two.handle.detach(conn);
    for (_asker, mut notices) in answers {
        assert!(answered(&mut notices).await);
    }
    let snapshot = game.snapshot().await;
    assert!(!snapshot.connected.two, "the detach was lost");
    let presence = game.one.drain().into_iter().find_map(|m| match m {
        ServerMsg::Presence {
            seat,
            connected,
            grace_ms,
            ..
        } => Some((seat, connected, grace_ms)),
        _ => None,
    });
    let grace = h.services.settings.grace(&TC).as_millis() as u64;
    assert_eq!(presence, Some((Seat::Two, false, grace)));
}

#[tokio::test(start_paused = true)]
async fn an_unwatch_reaches_the_game_even_when_the_spectators_queue_is_full() {
    let h = Harness::new().await;
    let game = h.start(0, TC).await;
    let watcher = Inbox::new(64);
    game.watch(&watcher).await;
    assert_eq!(game.snapshot().await.spectators, 1);
    let others: Vec<Inbox> = (0..SPECTATOR_CHANNEL_CAPACITY)
        .map(|_| Inbox::new(64))
        .collect();
    let mut snapshots = Vec::new();
    for other in &others {
        snapshots.push(try_watch(&game, other).unwrap());
    }
    game.handle.spectator().unwatch(watcher.outbox.conn_id());
    for mut notices in snapshots {
        assert!(answered(&mut notices).await);
    }
    // The unwatch waited its turn behind those watches, and was not lost: a watch queued
    // after it sees the first watcher gone.
    let late = Inbox::new(64);
    let expected = SPECTATOR_CHANNEL_CAPACITY as u32 + 1;
    assert_eq!(game.watch(&late).await.spectators, expected);
}

#[tokio::test(start_paused = true)]
async fn commands_queued_for_a_game_whose_task_dies_are_answered_unknown_game() {
    let h = Harness::new().await;
    let game = h.start(0, TC).await;
    // A panic, then a move and a watch behind it (the game has not run since).
    game.handle.try_send(GameCmd::Panic).unwrap();
    let (mut mover, mut moved) = queue(&game.two, SeatAction::OfferDraw, Instant::now()).await;
    let mut watcher = Inbox::new(8);
    let (reply, mut watched) = asking(&*game.one.bus, &watcher.outbox, Some(9));
    game.handle.spectator().watch(reply).await;
    assert!(!answered(&mut moved).await, "the move took no effect");
    assert!(!answered(&mut watched).await, "nor the watch");
    for (inbox, id) in [(&mut mover, 1), (&mut watcher, 9)] {
        match inbox.drain().as_slice() {
            [ServerMsg::Error { id: got, code, .. }] => {
                assert_eq!((*got, *code), (Some(id), ErrorCode::UnknownGame));
            }
            other => panic!("expected unknown_game, got {other:?}"),
        }
    }
    // And what comes later is refused by the bus.
    let (mut late, mut refused) = queue(&game.one, SeatAction::Resign, Instant::now()).await;
    assert!(!answered(&mut refused).await);
    assert!(matches!(
        late.drain().as_slice(),
        [ServerMsg::Error {
            code: ErrorCode::UnknownGame,
            ..
        }]
    ));
}
