//! Time: banks that run out, reveal windows, aborts, and only the seat that owes a move
//! charged.

use super::*;

#[test]
fn a_player_who_never_commits_loses_exactly_when_the_bank_runs_out() {
    let mut game = Game::new();
    game.play(1, 1, 1, SEC);
    // Round 1's commit phase is free; 0 s spent revealing; +2 s increment.
    assert_eq!(game.bank_ms(SEC), SeatPair::new(62_000, 62_000));
    game.commit(Seat::One, 2, 1, 2 * SEC).unwrap();
    let out = SEC + 62 * SEC;
    assert_eq!(game.state.next_deadline(), Some(game.at(out)));
    game.tick(out - MS);
    assert_eq!(game.result(), None);
    assert_eq!(game.bank_ms(out - MS), SeatPair::new(61_000, 1));
    // A commit at the very deadline is already too late.
    assert_eq!(game.commit(Seat::Two, 2, 2, out), Err(ErrorCode::GameOver));
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
    assert_eq!(
        game.state.record().unwrap().final_clocks_ms,
        SeatPair::new(61_000, 0)
    );
}

#[test]
fn clocks_run_only_for_the_seat_whose_move_is_outstanding() {
    let mut game = Game::new();
    // Round 1 commits cost nothing, however slow.
    game.commit(Seat::One, 1, 1, 20 * SEC).unwrap();
    game.commit(Seat::Two, 1, 2, 25 * SEC).unwrap();
    assert_eq!(game.bank_ms(25 * SEC), SeatPair::new(60_000, 60_000));
    // Reveals: one takes 1 s, two takes 3 s.
    game.reveal(Seat::One, 1, 1, 26 * SEC).unwrap();
    game.reveal(Seat::Two, 1, 2, 28 * SEC).unwrap();
    assert_eq!(game.bank_ms(28 * SEC), SeatPair::new(61_000, 59_000));
    // Round 2: one commits after 1 s, then two thinks for 10 s on its own clock.
    game.commit(Seat::One, 2, 1, 29 * SEC).unwrap();
    let clocks = game.state.snapshot(game.at(39 * SEC), 0).clocks;
    assert_eq!((clocks.one_ms, clocks.two_ms), (60_000, 48_000));
    assert_eq!(clocks.running, SeatPair::new(false, true));
}

#[test]
fn not_revealing_in_the_window_loses() {
    let mut game = Game::new();
    game.commit(Seat::One, 1, 1, SEC).unwrap();
    game.commit(Seat::Two, 1, 2, SEC).unwrap();
    game.reveal(Seat::Two, 1, 2, 2 * SEC).unwrap();
    game.tick(16 * SEC - MS);
    assert_eq!(game.result(), None);
    game.tick(16 * SEC);
    assert_eq!(game.result(), Some((Some(Seat::Two), EndReason::NoReveal)));
}

#[test]
fn neither_revealing_is_a_draw() {
    let mut game = Game::new();
    game.commit(Seat::One, 1, 1, SEC).unwrap();
    game.commit(Seat::Two, 1, 2, SEC).unwrap();
    // A late wake-up settles the deadline as of its instant.
    game.tick(100 * SEC);
    assert_eq!(game.result(), Some((None, EndReason::NoReveal)));
    assert_eq!(
        game.state.record().unwrap().final_clocks_ms,
        SeatPair::new(45_000, 45_000)
    );
    assert!(matches!(
        game.events.last(),
        Some(ServerMsg::GameOver { rated: false, .. })
    ));
}

#[test]
fn a_bank_shorter_than_the_reveal_window_loses_on_time() {
    let mut game = Game::new();
    game.play(1, 1, 1, SEC);
    // Round 2: two burns 55 s of its 62 s committing, leaving 7 s, less than the 15 s window.
    game.commit(Seat::One, 2, 1, SEC).unwrap();
    game.commit(Seat::Two, 2, 2, 56 * SEC).unwrap();
    game.reveal(Seat::One, 2, 1, 56 * SEC).unwrap();
    game.tick(63 * SEC);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
}

#[test]
fn both_banks_running_out_together_is_a_draw() {
    let mut game = Game::new();
    game.play(1, 1, 1, SEC);
    game.tick(SEC + 62 * SEC);
    assert_eq!(game.result(), Some((None, EndReason::Time)));
}

#[test]
fn nobody_committing_in_round_one_aborts() {
    let mut game = Game::new();
    game.commit(Seat::One, 1, 1, SEC).unwrap();
    game.tick(30 * SEC - MS);
    assert_eq!(game.result(), None);
    assert_eq!(
        game.commit(Seat::Two, 1, 2, 30 * SEC),
        Err(ErrorCode::GameOver)
    );
    assert_eq!(game.result(), Some((None, EndReason::Aborted)));
    assert!(!game.state.record().unwrap().changes_ratings());
}
