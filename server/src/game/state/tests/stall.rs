//! A game whose log cannot take its steps: held with no limit of time, then reopened as
//! after an incident.

use elementals_protocol::messages::{Phase, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

use super::{Game, SEC, TIMING};
use crate::game::SeatAction;

#[test]
fn a_stalled_game_runs_no_clock_and_reopens_its_phase_when_unstalled() {
    let mut game = Game::new();
    game.play(1, 1, 1, SEC);
    let banks = game.bank_ms(2 * SEC);
    game.state.stall(game.at(2 * SEC));
    assert_eq!(game.state.next_deadline(), None);
    // Far past either bank and any window: nothing runs out.
    game.tick(1_000 * SEC);
    assert_eq!(game.result(), None);
    game.commit(Seat::One, 2, 3, 1_000 * SEC).unwrap();
    game.commit(Seat::Two, 2, 1, 1_000 * SEC).unwrap();
    assert_eq!(game.bank_ms(1_000 * SEC), banks);
    game.events.clear();
    game.state.unstall(game.at(1_000 * SEC), &mut game.events);
    match game.events.as_slice() {
        [ServerMsg::RevealPhase {
            round: 2,
            reveal_ms: 15_000,
            clocks,
            ..
        }] => assert_eq!((clocks.one_ms, clocks.two_ms), (banks.one, banks.two)),
        other => panic!("{other:?}"),
    }
    assert_eq!(game.state.phase, Phase::Reveal);
    assert_eq!(
        game.state.next_deadline(),
        Some(game.at(1_015 * SEC)),
        "a full reveal window from the end of the stall"
    );
}

#[test]
fn a_player_away_through_a_stall_gets_a_fresh_grace_period_after_it() {
    let mut game = Game::new();
    let mut out = Vec::new();
    game.state.attach(Seat::One, game.at(SEC), &mut out);
    game.state.attach(Seat::Two, game.at(SEC), &mut out);
    game.play(1, 1, 1, SEC);
    game.state.detach(Seat::Two, game.at(2 * SEC), &mut out);
    game.state.stall(game.at(3 * SEC));
    // Both back while stalled: still held, until the log takes the steps.
    game.state.attach(Seat::Two, game.at(50 * SEC), &mut out);
    assert_eq!(game.state.next_deadline(), None);
    game.state.detach(Seat::Two, game.at(60 * SEC), &mut out);
    game.state.unstall(game.at(100 * SEC), &mut out);
    let fresh = 100 * SEC + TIMING.grace;
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, fresh - SEC),
        Err(ErrorCode::ClaimNotAllowed)
    );
    game.act(Seat::One, SeatAction::ClaimWin, fresh).unwrap();
}
