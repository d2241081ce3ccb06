//! Correspondence games: a deadline per phase instead of a bank, under explicit instants.

use std::time::Duration;

use elementals_protocol::messages::{EndReason, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::{ErrorCode, TimeControl};

use super::{setup, Game, MS, SEC, TIMING};
use crate::game::state::GameState;
use crate::game::SeatAction;
use crate::record::LogStep;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);
const STARTED_MS: u64 = 1_700_000_000_000;

fn corr(tc: TimeControl) -> Game {
    let mut setup = setup(false);
    setup.time_control = tc;
    Game::with(setup)
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

#[test]
fn each_phase_has_the_time_per_phase_from_its_start_and_no_more() {
    let mut game = corr(TimeControl::CORR_1D);
    // Round 1 has its deadline like any round: both banks run from the start.
    assert_eq!(game.state.next_deadline(), Some(game.at(DAY)));
    assert_eq!(game.state.next_deadline_ms(), Some(STARTED_MS + ms(DAY)));
    game.commit(Seat::One, 1, 1, 5 * HOUR).unwrap();
    game.commit(Seat::Two, 1, 2, 20 * HOUR).unwrap();
    // The reveal phase opened at 20 h: a fresh day from then, announced as such.
    assert!(game.events.iter().any(|m| matches!(
        m,
        ServerMsg::RevealPhase { round: 1, reveal_ms, .. } if *reveal_ms == ms(DAY)
    )));
    assert_eq!(
        game.bank_ms(30 * HOUR),
        SeatPair::new(ms(14 * HOUR), ms(14 * HOUR))
    );
    game.reveal(Seat::Two, 1, 2, 30 * HOUR).unwrap();
    // Two's bank stopped when it revealed; one's runs on towards 44 h.
    assert_eq!(game.state.next_deadline(), Some(game.at(44 * HOUR)));
    game.reveal(Seat::One, 1, 1, 44 * HOUR - MS).unwrap();
    // Round 2 began at the second reveal: a day from then, no increment.
    let round_two = 44 * HOUR - MS;
    assert_eq!(game.state.next_deadline(), Some(game.at(round_two + DAY)));
    assert_eq!(game.bank_ms(round_two), SeatPair::new(ms(DAY), ms(DAY)));
    game.commit(Seat::One, 2, 3, round_two + HOUR).unwrap();
    // A deadline is missed at its instant.
    game.tick(round_two + DAY - MS);
    assert_eq!(game.result(), None);
    game.tick(round_two + DAY);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));
    let record = game.state.record().unwrap();
    assert!(
        record.changes_ratings(),
        "a missed deadline is a rated loss"
    );
    assert_eq!(record.ended_at, STARTED_MS + ms(round_two + DAY));
}

#[test]
fn a_missed_reveal_deadline_loses_on_time_and_both_missing_draw() {
    let mut game = corr(TimeControl::CORR_3D);
    game.play(1, 1, 1, HOUR);
    game.commit(Seat::One, 2, 1, DAY).unwrap();
    game.commit(Seat::Two, 2, 2, 2 * DAY).unwrap();
    game.reveal(Seat::One, 2, 1, 4 * DAY).unwrap();
    game.tick(5 * DAY);
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Time)));

    let mut game = corr(TimeControl::CORR_1D);
    game.play(1, 1, 1, HOUR);
    game.tick(HOUR + DAY);
    assert_eq!(game.result(), Some((None, EndReason::Time)));
}

#[test]
fn round_one_missed_aborts_unrated_as_the_first_commit_window_does() {
    let mut game = corr(TimeControl::CORR_1D);
    game.commit(Seat::One, 1, 1, HOUR).unwrap();
    // Long past a live game's 30 s window, still on.
    game.tick(DAY - MS);
    assert_eq!(game.result(), None);
    game.tick(DAY);
    assert_eq!(game.result(), Some((None, EndReason::Aborted)));
}

#[test]
fn absence_cannot_be_claimed_in_a_correspondence_game() {
    let mut game = corr(TimeControl::CORR_1D);
    game.play(1, 1, 1, SEC);
    let now = game.at(2 * SEC);
    game.state.attach(Seat::One, now, &mut game.events);
    game.state.detach(Seat::One, now, &mut game.events);
    assert!(game.events.iter().any(|m| matches!(
        m,
        ServerMsg::Presence {
            connected: false,
            grace_ms: 0,
            ..
        }
    )));
    assert_eq!(
        game.act(Seat::Two, SeatAction::ClaimWin, 20 * HOUR),
        Err(ErrorCode::ClaimNotAllowed)
    );
    assert_eq!(game.result(), None);
    // Nor does an incident hold it.
    let now = game.at(21 * HOUR);
    assert!(!game.state.hold_for_incident(game.t0, now, &mut game.events));
}

/// The log so far, replayed and resumed `restarted_after` after the game's start.
fn restart(game: &mut Game, log: &mut Vec<LogStep>, restarted_after: Duration) -> GameState {
    log.extend(game.state.take_log());
    // A new process: its instants have nothing to do with the old one's.
    let now = game.at(1000 * DAY);
    let mut state = GameState::replay(log, TIMING, now).unwrap();
    state.resume(now, STARTED_MS + ms(restarted_after));
    state
}

#[test]
fn a_restart_keeps_the_round_and_the_deadline_where_the_phase_put_it() {
    let mut game = corr(TimeControl::CORR_1D);
    let mut log = Vec::new();
    game.play(1, 1, 2, HOUR);
    // Round 2 from 1 h; one commits at 3 h; the server restarts at 10 h.
    game.commit(Seat::One, 2, 3, 3 * HOUR).unwrap();
    let mut state = restart(&mut game, &mut log, 10 * HOUR);
    let now = game.at(1000 * DAY);
    assert!(!state.is_held());
    assert_eq!(state.round, 2);
    assert_eq!(state.phase, Phase::Commit);
    assert_eq!(
        state.commits.map(|c| c.is_some()),
        SeatPair::new(true, false)
    );
    // Two's deadline is still 25 h after the start: 15 h after the restart.
    assert_eq!(state.next_deadline(), Some(now + 15 * HOUR));
    assert_eq!(state.next_deadline_ms(), Some(STARTED_MS + ms(25 * HOUR)));
    let mut out = Vec::new();
    state.tick(now + 15 * HOUR, &mut out);
    assert_eq!(
        state.result().map(|r| (r.winner, r.reason)),
        Some((Some(Seat::One), EndReason::Time))
    );
}

#[test]
fn a_deadline_that_passed_while_the_server_was_down_gets_a_grace_period() {
    let mut game = corr(TimeControl::CORR_1D);
    let mut log = Vec::new();
    game.play(1, 1, 2, HOUR);
    game.commit(Seat::One, 2, 3, 2 * HOUR).unwrap();
    game.commit(Seat::Two, 2, 3, 3 * HOUR).unwrap();
    game.reveal(Seat::Two, 2, 3, 4 * HOUR).unwrap();
    // The reveal phase began at 3 h, so one's deadline was 27 h; the server is back at 40 h.
    let mut first = restart(&mut game, &mut log, 40 * HOUR);
    let now = game.at(1000 * DAY);
    assert_eq!(first.phase, Phase::Reveal);
    assert_eq!(
        first.reveals.map(|r| r.is_some()),
        SeatPair::new(false, true)
    );
    assert_eq!(first.next_deadline(), Some(now + TIMING.grace));
    // A second restart 20 s later re-anchors from the phase's start again: the deadline
    // has passed, so a full grace period, not what was left of the first one.
    log.extend(first.take_log());
    let mut second = GameState::replay(&log, TIMING, now).unwrap();
    second.resume(now, STARTED_MS + ms(40 * HOUR + 20 * SEC));
    assert_eq!(second.next_deadline(), Some(now + TIMING.grace));
    let mut out = Vec::new();
    second.tick(now + TIMING.grace - MS, &mut out);
    assert_eq!(second.result(), None);
    second.tick(now + TIMING.grace, &mut out);
    assert_eq!(
        second.result().map(|r| (r.winner, r.reason)),
        Some((Some(Seat::Two), EndReason::Time))
    );
}
