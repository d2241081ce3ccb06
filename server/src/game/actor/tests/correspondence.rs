//! A correspondence game over weeks of tokio's paused clock, through the actor's handles.

use std::time::Duration;

use elementals_protocol::messages::{EndReason, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::TimeControl;
use tokio::time::{advance, Instant};

use super::{over, Harness};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Eight rounds of about two days each, both players away between their moves, then round
/// 9's deadline passes with two's commit still owed: two loses on time, rated, and the
/// ratings move as RULES.md says (1.0 against 1.0: the winner gains 0.5, the loser stays at
/// the floor of 1.0).
#[tokio::test(start_paused = true)]
async fn a_weeks_long_correspondence_game_is_lost_by_a_missed_deadline_and_rated() {
    let h = Harness::new().await;
    let mut game = h.start(0, TimeControl::CORR_1D).await;
    let start = Instant::now();
    for p in [&game.one, &game.two] {
        p.handle.detach(p.inbox.outbox.conn_id());
    }
    for round in 1..=8 {
        advance(20 * HOUR).await;
        game.one.commit(round, 1).await.unwrap();
        advance(3 * HOUR).await;
        game.two.commit(round, 1).await.unwrap();
        // The reveal phase has a day of its own from the second commit.
        advance(22 * HOUR).await;
        game.two.reveal(round, 1).await.unwrap();
        advance(HOUR).await;
        let clocks = game.snapshot().await.clocks;
        assert_eq!((clocks.one_ms, clocks.two_ms), (3_600_000, 7_200_000));
        assert!(clocks.running.one && !clocks.running.two);
        game.one.reveal(round, 1).await.unwrap();
    }
    assert_eq!(start.elapsed(), 8 * 46 * HOUR, "over two weeks");
    let round_nine = Instant::now();
    advance(2 * HOUR).await;
    game.one.commit(9, 2).await.unwrap();
    // One comes back to watch the deadline pass (an away seat is sent nothing).
    game.one.attach(&game.one.inbox.outbox).await;
    let msg = game.one.inbox.game_over().await;
    assert_eq!(round_nine.elapsed(), DAY, "exactly at round 9's deadline");
    assert_eq!(over(&msg), (Some(Seat::One), EndReason::Time, true));
    let ratings = loop {
        if let ServerMsg::RatingUpdate { ratings, .. } = game.one.inbox.next().await {
            break ratings;
        }
    };
    assert_eq!((ratings.one.before, ratings.one.after), (1.0, 1.5));
    assert_eq!((ratings.two.before, ratings.two.after), (1.0, 1.0));
}
