//! A game put to sleep and woken: the round kept, the clocks run on while it slept, and a
//! deadline that passed meanwhile settled at its own instant.

use super::*;
use crate::record::{LogEntry, LogStep};

/// The game woken from its log at `base`, the instant it went to sleep.
fn woken(log: &[LogStep], base: Instant) -> GameState {
    let mut state = GameState::replay(log, TIMING, base).unwrap();
    state.woken(log.last().unwrap(), base, None);
    state
}

/// Round 1 played at 1 s; in round 2 seat one commits at 3 s and the game sleeps at 10 s.
fn asleep_in_round_two() -> (Game, Vec<LogStep>, u64) {
    let mut game = Game::new();
    game.play(1, 5, 2, SEC);
    game.commit(Seat::One, 2, 5, 3 * SEC).unwrap();
    let at = game.at(10 * SEC);
    assert!(game.state.may_hibernate(at, 10 * SEC));
    // Seat two's bank (60 s + 2 s) runs from 1 s: due at 63 s.
    assert!(!game.state.may_hibernate(at, 54 * SEC));
    let due = game.state.hibernate(at);
    assert_eq!(due, 1_700_000_000_000 + 63_000);
    let log = game.state.take_log();
    assert!(matches!(
        log.last().unwrap().entry,
        LogEntry::Hibernated { .. }
    ));
    (game, log, due)
}

#[test]
fn a_woken_game_keeps_its_round_and_its_clocks_ran_on_meanwhile() {
    let (mut awake, log, _) = asleep_in_round_two();
    let mut game = Game {
        state: woken(&log, awake.at(10 * SEC)),
        t0: awake.t0,
        events: Vec::new(),
    };
    assert_eq!(game.state.round, 2);
    assert!(game.state.commits.one.is_some(), "the round is kept");
    // Both play on from 30 s exactly as the game that never slept.
    for g in [&mut game, &mut awake] {
        g.commit(Seat::Two, 2, 3, 30 * SEC).unwrap();
        assert_eq!(g.bank_ms(40 * SEC), SeatPair::new(50_000, 23_000));
        g.reveal(Seat::One, 2, 5, 41 * SEC).unwrap();
        g.reveal(Seat::Two, 2, 3, 42 * SEC).unwrap();
    }
    assert_eq!(game.state.rounds(), awake.state.rounds());
    assert_eq!(game.bank_ms(50 * SEC), awake.bank_ms(50 * SEC));
}

#[test]
fn a_deadline_that_passed_while_asleep_is_settled_at_its_own_instant() {
    let (awake, log, _) = asleep_in_round_two();
    let mut game = Game {
        state: woken(&log, awake.at(10 * SEC)),
        t0: awake.t0,
        events: Vec::new(),
    };
    // Woken days later: seat two ran out at 63 s.
    game.tick(3 * 86_400 * SEC);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
    let record = game.state.record().unwrap();
    assert_eq!(record.ended_at, 1_700_000_000_000 + 63_000);
    assert!(record.changes_ratings());
}

/// The server was down from before seat two's deadline (63 s) until 100 s: woken by the
/// restarted server, the game gives seat two a grace period (40 s) from the restart, and
/// only then loses it on time. Seat one's bank, stopped, is untouched.
#[test]
fn a_deadline_that_passed_while_the_server_was_down_moves_to_a_grace_period_after_it() {
    let (awake, log, _) = asleep_in_round_two();
    let mut state = GameState::replay(&log, TIMING, awake.at(10 * SEC)).unwrap();
    state.woken(
        log.last().unwrap(),
        awake.at(10 * SEC),
        Some(awake.at(100 * SEC)),
    );
    let mut game = Game {
        state,
        t0: awake.t0,
        events: Vec::new(),
    };
    game.tick(100 * SEC);
    assert_eq!(game.result(), None);
    assert_eq!(game.bank_ms(100 * SEC), SeatPair::new(60_000, 40_000));
    game.tick(140 * SEC - MS);
    assert_eq!(game.result(), None);
    game.tick(140 * SEC);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
    assert_eq!(
        game.state.record().unwrap().ended_at,
        1_700_000_000_000 + 140_000
    );
}

/// A deadline more than a grace period after the restart stays where it was.
#[test]
fn a_deadline_after_the_restart_and_its_grace_period_stays() {
    let (awake, log, _) = asleep_in_round_two();
    let mut state = GameState::replay(&log, TIMING, awake.at(10 * SEC)).unwrap();
    state.woken(
        log.last().unwrap(),
        awake.at(10 * SEC),
        Some(awake.at(20 * SEC)),
    );
    let mut game = Game {
        state,
        t0: awake.t0,
        events: Vec::new(),
    };
    game.tick(63 * SEC - MS);
    assert_eq!(game.result(), None);
    game.tick(63 * SEC);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
}

#[test]
fn a_game_sleeps_only_with_both_players_away_and_nothing_due_soon() {
    let mut game = Game::new();
    // Round 1's first-commit window (30 s) is soon.
    assert!(!game.state.may_hibernate(game.at(SEC), 60 * SEC));
    game.play(1, 5, 2, SEC);
    assert!(game.state.may_hibernate(game.at(2 * SEC), 10 * SEC));
    game.state
        .attach(Seat::Two, game.at(2 * SEC), &mut Vec::new());
    assert!(!game.state.may_hibernate(game.at(2 * SEC), 10 * SEC));
    // The reveal window (15 s) is soon.
    let mut game = Game::new();
    game.play(1, 5, 2, SEC);
    game.commit(Seat::One, 2, 5, 2 * SEC).unwrap();
    game.commit(Seat::Two, 2, 3, 2 * SEC).unwrap();
    assert!(!game.state.may_hibernate(game.at(3 * SEC), 20 * SEC));
}
