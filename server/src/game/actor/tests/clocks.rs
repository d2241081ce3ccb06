//! Clocks, deadlines and presence on tokio's paused clock.

use std::time::Duration;

use elementals_protocol::messages::{EndReason, Phase, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::time::{advance, Instant};

use super::{over, Harness, TC};
use crate::game::SeatAction;

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn a_player_who_never_commits_loses_on_time_not_a_millisecond_early() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.play(1, 1, 1).await;
    game.one.commit(2, 1).await.unwrap();
    // Two's bank: 60 s, plus the 2 s increment, all still there (round 1 took no time).
    advance(Duration::from_millis(62_000) - MS).await;
    let snapshot = game.snapshot().await;
    assert_eq!(snapshot.result, None);
    assert_eq!(
        (snapshot.clocks.one_ms, snapshot.clocks.two_ms),
        (62_000, 1)
    );
    advance(MS).await;
    let msg = game.one.inbox.game_over().await;
    assert_eq!(over(&msg), (Some(Seat::One), EndReason::Time, true));
    match msg {
        ServerMsg::GameOver { clocks, .. } => {
            assert_eq!((clocks.one_ms, clocks.two_ms), (62_000, 0))
        }
        _ => unreachable!(),
    }
    assert_eq!(game.two.commit(2, 2).await, Err(ErrorCode::GameOver));
}

#[tokio::test(start_paused = true)]
async fn a_player_who_does_not_reveal_loses_when_the_window_closes() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.one.commit(1, 1).await.unwrap();
    game.two.commit(1, 2).await.unwrap();
    game.two.reveal(1, 2).await.unwrap();
    let revealing_from = Instant::now();
    let msg = game.two.inbox.game_over().await;
    assert_eq!(
        revealing_from.elapsed(),
        Duration::from_millis(TC.reveal_ms)
    );
    assert_eq!(over(&msg), (Some(Seat::Two), EndReason::NoReveal, true));
}

#[tokio::test(start_paused = true)]
async fn a_game_nobody_starts_is_aborted_unrated() {
    let h = Harness::new().await;
    let start = Instant::now();
    let mut game = h.start(0, TC).await;
    game.one.commit(1, 1).await.unwrap();
    let msg = game.one.inbox.game_over().await;
    assert_eq!(start.elapsed(), h.services.settings.first_commit_window);
    assert_eq!(over(&msg), (None, EndReason::Aborted, false));
    assert!(!h.registry().is_seated(h.accounts[1].id));
}

#[tokio::test(start_paused = true)]
async fn only_the_seat_still_to_move_spends_time() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.play(1, 1, 1).await;
    game.one.commit(2, 3).await.unwrap();
    advance(Duration::from_secs(10)).await;
    game.two.commit(2, 4).await.unwrap();
    let reveal_phase = game.one.drain().into_iter().find_map(|m| match m {
        ServerMsg::RevealPhase {
            round: 2, clocks, ..
        } => Some(clocks),
        _ => None,
    });
    let clocks = reveal_phase.expect("both committed");
    assert_eq!((clocks.one_ms, clocks.two_ms), (62_000, 52_000));
    assert!(clocks.running.one && clocks.running.two);
    // Now one thinks over its reveal while two has already revealed.
    game.two.reveal(2, 4).await.unwrap();
    advance(Duration::from_secs(3)).await;
    let clocks = game.snapshot().await.clocks;
    assert_eq!((clocks.one_ms, clocks.two_ms), (59_000, 52_000));
}

#[tokio::test(start_paused = true)]
async fn presence_is_announced_and_a_win_claimable_after_the_grace_period() {
    let h = Harness::new().await;
    // Ten minutes a side: grace is a minute, well inside the banks.
    let rapid = TimeControl::RAPID;
    let grace = h.services.settings.grace(&rapid);
    let mut game = h.start(0, rapid).await;
    game.play(1, 1, 1).await;
    assert_eq!(
        game.one.act(SeatAction::ClaimWin).await,
        Err(ErrorCode::ClaimNotAllowed)
    );
    // A stale connection leaving changes nothing; the attached one leaving does.
    game.two.handle.detach(u64::MAX);
    let conn = game.two.inbox.outbox.conn_id();
    game.two.handle.detach(conn);
    let snapshot = game.snapshot().await;
    assert_eq!(
        (snapshot.connected.one, snapshot.connected.two),
        (true, false)
    );
    let presence: Vec<(Seat, bool, u64)> = game
        .one
        .drain()
        .into_iter()
        .filter_map(|m| match m {
            ServerMsg::Presence {
                seat,
                connected,
                grace_ms,
                ..
            } => Some((seat, connected, grace_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(presence, [(Seat::Two, false, 60_000)]);
    advance(grace - MS).await;
    assert_eq!(
        game.one.act(SeatAction::ClaimWin).await,
        Err(ErrorCode::ClaimNotAllowed)
    );
    advance(MS).await;
    game.one.act(SeatAction::ClaimWin).await.unwrap();
    let msg = game.one.inbox.until_game_over().await.pop().unwrap();
    assert_eq!(over(&msg), (Some(Seat::One), EndReason::Abandoned, true));
    game.assert_over().await;
}

#[tokio::test(start_paused = true)]
async fn a_returning_player_is_announced_and_gets_the_current_state() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    game.one.commit(1, 2).await.unwrap();
    game.one.handle.detach(game.one.inbox.outbox.conn_id());
    game.two.commit(1, 3).await.unwrap();
    let fresh = super::Inbox::new(256);
    let snapshot = game.one.attach(&fresh.outbox).await;
    assert_eq!(snapshot.phase, Phase::Reveal);
    assert!(snapshot.connected.one);
    let presence: Vec<bool> = game
        .two
        .drain()
        .into_iter()
        .filter_map(|m| match m {
            ServerMsg::Presence { connected, .. } => Some(connected),
            _ => None,
        })
        .collect();
    assert_eq!(presence, [false, true]);
    // Events now reach the new connection, numbered after the snapshot.
    game.one.inbox = fresh;
    game.two.reveal(1, 3).await.unwrap();
    // The actor queued the snapshot itself, ahead of any later event.
    match game.one.drain().as_slice() {
        [ServerMsg::Snapshot {
            snapshot: queued,
            seat: Some(Seat::One),
            ..
        }, ServerMsg::Revealed { seq, seat, .. }] => {
            assert_eq!(queued, &snapshot);
            assert_eq!((*seq, *seat), (snapshot.seq + 1, Seat::Two));
        }
        other => panic!("expected the snapshot then one revealed event, got {other:?}"),
    }
}
