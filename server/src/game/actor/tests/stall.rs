//! A game whose log refuses its steps (a full disk): nothing is published or acknowledged
//! until the log takes them, the clocks are held meanwhile, and other games play on.

use std::time::Duration;

use elementals_protocol::messages::{Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
use tokio::time::advance;

use super::{Game, Harness, TC};

impl Harness {
    /// Makes the log refuse (or take again) `game`'s appends.
    fn refuse_log(&self, game: &Game, refuse: bool) {
        let id = game.handle.game_id();
        let mut refusing = self.log.refusing.lock().unwrap();
        if refuse {
            refusing.insert(id);
        } else {
            refusing.remove(&id);
        }
    }

    /// The numbers of the steps logged for `game`, in order.
    pub(super) fn logged_steps(&self, game: &Game) -> Vec<u64> {
        let id = game.handle.game_id();
        let steps = self.log.steps.lock().unwrap();
        steps
            .iter()
            .filter(|(g, _)| *g == id)
            .map(|(_, s)| s.step)
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn moves_the_log_refuses_are_answered_unavailable_and_take_effect_once_logged() {
    let h = Harness::new().await;
    let mut a = h.start(0, TC).await;
    a.play(1, 1, 1).await;
    a.one.drain();
    a.two.drain();
    let banks = a.snapshot().await.clocks;
    let logged = h.logged_steps(&a);

    h.refuse_log(&a, true);
    assert_eq!(a.one.commit(2, 3).await, Err(ErrorCode::Unavailable));
    // Longer than either bank: the clocks are held, so nobody runs out.
    advance(Duration::from_secs(120)).await;
    // The opponent's move is kept behind it; a repeat is answered as a repeat.
    assert_eq!(a.two.commit(2, 1).await, Err(ErrorCode::Unavailable));
    assert_eq!(a.one.commit(2, 3).await, Err(ErrorCode::AlreadyCommitted));
    assert!(a.one.drain().is_empty() && a.two.drain().is_empty());
    assert_eq!(h.logged_steps(&a), logged, "nothing reached the log");

    // Another game plays on meanwhile.
    let mut b = h.start(2, TC).await;
    b.play(1, 2, 1).await;
    assert!(b
        .one
        .drain()
        .iter()
        .any(|m| matches!(m, ServerMsg::RoundResult { .. })));

    // The log takes the steps again: a snapshot asked for meanwhile waits for them.
    h.refuse_log(&a, false);
    let snapshot = a.snapshot().await;
    assert_eq!(snapshot.phase, Phase::Reveal);
    assert_eq!(snapshot.committed, SeatPair::new(true, true));
    assert_eq!(snapshot.result, None);
    assert_eq!(snapshot.clocks.running, SeatPair::new(true, true));
    assert_eq!(
        (snapshot.clocks.one_ms, snapshot.clocks.two_ms),
        (banks.one_ms, banks.two_ms),
        "the outage cost nobody anything"
    );
    // The kept moves' events, in order, then the reveal phase reopened with a full window.
    let events = a.one.drain();
    let seqs: Vec<u64> = events.iter().filter_map(ServerMsg::seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{events:?}");
    assert!(
        matches!(
            events.first(),
            Some(ServerMsg::Committed {
                seat: Seat::One,
                ..
            })
        ),
        "{events:?}"
    );
    assert!(
        matches!(
            events.last(),
            Some(ServerMsg::RevealPhase {
                round: 2,
                reveal_ms: 15_000,
                ..
            })
        ),
        "{events:?}"
    );
    // Every step once, in order, with no hole.
    let steps = h.logged_steps(&a);
    assert!(steps.len() > logged.len());
    assert!(
        steps.iter().enumerate().all(|(i, s)| *s == i as u64),
        "{steps:?}"
    );

    // And the game goes on.
    a.one.reveal(2, 3).await.unwrap();
    a.two.reveal(2, 1).await.unwrap();
    assert!(a
        .two
        .drain()
        .iter()
        .any(|m| matches!(m, ServerMsg::RoundResult { .. })));
}

#[tokio::test(start_paused = true)]
async fn a_game_ended_while_its_log_refuses_steps_ends_only_once_logged() {
    let h = Harness::new().await;
    let mut a = h.start(0, TC).await;
    a.play(1, 1, 1).await;
    a.two.drain();
    h.refuse_log(&a, true);
    let resign = crate::game::SeatAction::Resign;
    assert_eq!(a.one.act(resign).await, Err(ErrorCode::Unavailable));
    advance(Duration::from_secs(10)).await;
    // The opponent learns nothing of the end before it is logged.
    assert_eq!(a.two.commit(2, 1).await, Err(ErrorCode::Unavailable));
    assert!(
        a.two.drain().is_empty(),
        "no game_over before its end is logged"
    );
    h.refuse_log(&a, false);
    let over = a.two.inbox.game_over().await;
    assert!(matches!(over, ServerMsg::GameOver { .. }));
    assert!(h.logged_steps(&a).windows(2).all(|w| w[1] == w[0] + 1));
}
