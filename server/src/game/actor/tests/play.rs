//! Playing a game through the actor: rounds, refusals, endings, ratings, crashes.

use std::sync::atomic::Ordering::Relaxed;

use elementals_protocol::messages::{EndReason, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

use super::{answered, asking, over, seqs, Harness, TC};
use crate::game::SeatAction;

#[tokio::test(start_paused = true)]
async fn the_seed_game_ends_at_the_edge_and_is_rated_once_recorded() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let picks = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];
    for (i, (one, two)) in picks.into_iter().enumerate() {
        game.play(i as u32 + 1, one, two).await;
    }
    let one = game.one.inbox.until_game_over().await;
    let two = game.two.inbox.until_game_over().await;
    // Both players saw the same numbered stream, with no gaps.
    assert_eq!(seqs(&one), seqs(&two));
    let expected: Vec<u64> = (seqs(&one)[0]..).take(one.len()).collect();
    assert_eq!(seqs(&one), expected);
    let results = one
        .iter()
        .filter(|m| matches!(m, ServerMsg::RoundResult { .. }))
        .count();
    assert_eq!(results, 5);
    assert_eq!(
        over(one.last().unwrap()),
        (Some(Seat::Two), EndReason::Edge, true)
    );
    // The seats are free at once, before the record is written.
    assert!(!h.registry().is_seated(h.accounts[0].id));
    assert!(h.registry().game(&game.handle.game_id()).is_none());
    assert_eq!(game.one.commit(6, 1).await, Err(ErrorCode::GameOver));
    // Then the durable rating change arrives, numbered after GameOver.
    match game.two.inbox.next().await {
        ServerMsg::RatingUpdate { seq, ratings, .. } => {
            assert_eq!(seq, seqs(&two).last().unwrap() + 1);
            assert_eq!(ratings.two.after, 1.5);
            assert_eq!(ratings.one.after, 1.0);
        }
        other => panic!("expected rating_update, got {other:?}"),
    }
    let m = h.metrics();
    assert_eq!(m.rounds_resolved.load(Relaxed), 5);
    assert_eq!(m.games_started.load(Relaxed), 1);
    assert_eq!(m.games_finished.load(Relaxed), 1);
    assert_eq!(m.live_games.load(Relaxed), 0);
    assert!(m
        .render()
        .contains("elementals_result_latency_seconds_count 5"));
}

#[tokio::test(start_paused = true)]
async fn a_wrong_reveal_can_be_corrected_and_copied_commitments_are_refused() {
    let h = Harness::new().await;
    let game = h.start(0, TC).await;
    let commitment = vec![9; 32];
    let copy = |commitment: &Vec<u8>| SeatAction::Commit {
        round: 1,
        commitment: commitment.clone(),
        pick: None,
        nonce: None,
    };
    // Two cannot lock in whatever one committed.
    game.one.commit(1, 4).await.unwrap();
    let ones = game.snapshot().await;
    assert_eq!(ones.committed, SeatPair::new(true, false));
    game.two.act(copy(&commitment)).await.unwrap();
    assert_eq!(
        game.one.act(copy(&commitment)).await,
        Err(ErrorCode::AlreadyCommitted)
    );
    assert_eq!(game.snapshot().await.phase, Phase::Reveal);
    // A mismatching reveal is refused, and the right one still counts.
    assert_eq!(game.one.reveal(1, 5).await, Err(ErrorCode::RevealMismatch));
    game.one.reveal(1, 4).await.unwrap();
    assert_eq!(game.snapshot().await.revealed, SeatPair::new(true, false));

    let game = h.start(2, TC).await;
    game.one.act(copy(&commitment)).await.unwrap();
    assert_eq!(
        game.two.act(copy(&commitment)).await,
        Err(ErrorCode::DuplicateCommitment)
    );
    assert_eq!(game.snapshot().await.committed, SeatPair::new(true, false));
}

#[tokio::test(start_paused = true)]
async fn a_move_from_the_seats_connection_is_answered_with_its_events_in_one_item() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let conn = game.one.inbox.outbox.clone();
    let commit = game.one.commitment(1, 3);
    game.one.act_as(commit, &conn, 7).await;
    // The reply, then the event, as one queued item: one write.
    let item = game.one.inbox.rx.try_recv().expect("one item");
    let frames: Vec<ServerMsg> = item.frames().iter().map(super::decode).collect();
    assert!(
        matches!(
            frames.as_slice(),
            [
                ServerMsg::Ok { id: 7 },
                ServerMsg::Committed {
                    seat: Seat::One,
                    ..
                }
            ]
        ),
        "{frames:?}"
    );
    assert!(game.one.drain().is_empty());
    // The opponent gets the event alone.
    assert!(matches!(
        game.two.drain().as_slice(),
        [ServerMsg::Committed {
            seat: Seat::One,
            ..
        }]
    ));
    // A refusal is answered the same way, and sends the opponent nothing.
    let again = game.one.commitment(1, 4);
    game.one.act_as(again, &conn, 8).await;
    match game.one.drain().as_slice() {
        [ServerMsg::Error { id, code, .. }] => {
            assert_eq!((*id, *code), (Some(8), ErrorCode::AlreadyCommitted));
        }
        other => panic!("expected the error alone, got {other:?}"),
    }
    assert!(game.two.drain().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_move_from_another_connection_is_answered_there_alone() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    // A connection that is not the seat's attached one (one being superseded, say).
    let mut stranger = super::Inbox::new(8);
    let commit = game.one.commitment(1, 3);
    game.one.act_as(commit, &stranger.outbox, 7).await;
    assert!(matches!(
        stranger.drain().as_slice(),
        [ServerMsg::Ok { id: 7 }]
    ));
    let again = game.one.commitment(1, 4);
    game.one.act_as(again, &stranger.outbox, 8).await;
    match stranger.drain().as_slice() {
        [ServerMsg::Error { id, code, .. }] => {
            assert_eq!((*id, *code), (Some(8), ErrorCode::AlreadyCommitted));
        }
        other => panic!("expected the error alone, got {other:?}"),
    }
    // The attached connections got the event and no reply.
    for msgs in [game.one.drain(), game.two.drain()] {
        assert!(
            matches!(
                msgs.as_slice(),
                [ServerMsg::Committed {
                    seat: Seat::One,
                    ..
                }]
            ),
            "{msgs:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_players_handle_acts_only_for_its_own_seat() {
    let h = Harness::new().await;
    let game = h.start(0, TC).await;
    game.one.commit(1, 3).await.unwrap();
    let snapshot = game.snapshot().await;
    assert_eq!(snapshot.committed, SeatPair::new(true, false));
    // One's handle resigning makes two the winner, never the other way round.
    game.one.act(SeatAction::Resign).await.unwrap();
    let mut two = game.two;
    assert_eq!(
        over(&two.inbox.game_over().await),
        (Some(Seat::Two), EndReason::Resignation, true)
    );
}

#[tokio::test(start_paused = true)]
async fn a_draw_offered_and_accepted_ends_the_game_unrated() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    assert_eq!(
        game.two.act(SeatAction::DeclineDraw).await,
        Err(ErrorCode::NoDrawOffer)
    );
    game.one.act(SeatAction::OfferDraw).await.unwrap();
    assert!(matches!(
        game.two.drain().as_slice(),
        [ServerMsg::DrawOffered { by: Seat::One, .. }]
    ));
    game.two.act(SeatAction::OfferDraw).await.unwrap();
    let msgs = game.one.drain();
    assert_eq!(
        over(msgs.last().unwrap()),
        (None, EndReason::DrawAgreed, false)
    );
    game.assert_over().await;
}

#[tokio::test(start_paused = true)]
async fn a_forced_panic_ends_only_its_own_game() {
    let h = Harness::new().await;
    let mut crashing = h.start(0, TC).await;
    let mut other = h.start(2, TC).await;
    crashing.play(1, 1, 2).await;
    other.one.commit(1, 1).await.unwrap();
    let seq_before = *seqs(&crashing.one.drain()).last().unwrap();
    crashing.two.drain();

    crashing.handle.force_panic().await;
    for p in [&mut crashing.one, &mut crashing.two] {
        match p.inbox.next().await {
            ServerMsg::GameOver {
                seq, result, rated, ..
            } => {
                assert_eq!(seq, seq_before + 1);
                assert_eq!(
                    (result.winner, result.reason),
                    (None, EndReason::ServerAborted)
                );
                assert!(!rated);
            }
            other => panic!("expected game_over, got {other:?}"),
        }
    }
    assert!(crashing.handle.is_finished());
    assert!(!h.registry().is_seated(h.accounts[0].id));
    assert_eq!(crashing.one.commit(2, 1).await, Err(ErrorCode::UnknownGame));

    // The other game plays on as if nothing happened.
    other.two.commit(1, 2).await.unwrap();
    other.one.reveal(1, 1).await.unwrap();
    other.two.reveal(1, 2).await.unwrap();
    let snapshot = other.snapshot().await;
    assert_eq!((snapshot.round, snapshot.result), (2, None));
    assert!(h.registry().is_seated(h.accounts[2].id));
    assert!(!other
        .one
        .drain()
        .iter()
        .any(|m| matches!(m, ServerMsg::GameOver { .. })));
    assert_eq!(h.metrics().live_games.load(Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn a_finished_game_ends_once_recorded_and_a_late_watch_is_refused() {
    let h = Harness::new().await;
    let mut game = h.start(0, TC).await;
    let mut watcher = super::Inbox::new(16);
    game.watch(&watcher).await;
    assert_eq!(h.metrics().spectators.load(Relaxed), 1);
    game.two.act(SeatAction::Resign).await.unwrap();
    // Once the rating update is out, the record is written. (The spectator's count may
    // come before it.)
    let mut msgs = Vec::new();
    while !matches!(msgs.last(), Some(ServerMsg::RatingUpdate { .. })) {
        assert!(msgs.len() < 4, "{msgs:?}");
        msgs.push(game.one.inbox.next().await);
    }
    // The task ends then, with no time passing, its spectator released.
    for _ in 0..100 {
        if game.handle.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(game.handle.is_finished());
    assert_eq!(h.metrics().spectators.load(Relaxed), 0);
    // What came before the end reached the spectator, the rating update last.
    let seen = watcher.drain();
    assert!(
        matches!(seen.last(), Some(ServerMsg::RatingUpdate { .. })),
        "{seen:?}"
    );
    // A command that comes after the task is answered by the bus.
    let mut late = super::Inbox::new(16);
    let (reply, mut notices) = asking(&*game.one.bus, &late.outbox, Some(9));
    game.handle.spectator().watch(reply).await;
    assert!(!answered(&mut notices).await);
    assert!(matches!(
        late.drain().as_slice(),
        [ServerMsg::Error {
            code: ErrorCode::UnknownGame,
            ..
        }]
    ));
}
