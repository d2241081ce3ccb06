//! The durable log, replaying it, and holding a game through a restart or an incident.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{EndReason, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

use super::{Game, SEC, TIMING};
use crate::game::state::replay::ReplayError;
use crate::game::state::GameState;
use crate::game::SeatAction;
use crate::record::{Hash32, LogEntry, LogStep};

/// Everything `game` logged so far, in order, as a restarted server would read it.
fn log_of(game: &mut Game, log: &mut Vec<LogStep>) -> Vec<LogStep> {
    log.extend(game.state.take_log());
    log.clone()
}

fn kinds(log: &[LogStep]) -> Vec<&'static str> {
    log.iter()
        .map(|s| match s.entry {
            LogEntry::Start { .. } => "start",
            LogEntry::Commit { .. } => "commit",
            LogEntry::Reveal { .. } => "reveal",
            LogEntry::Result { .. } => "result",
            LogEntry::Restarted { .. } => "restarted",
            LogEntry::Hibernated { .. } => "hibernated",
            LogEntry::End { .. } => "end",
        })
        .collect()
}

/// The game replayed from `log` and resumed at `now`, as a restarted server holds it.
fn restart(log: &[LogStep], now: Instant) -> GameState {
    let mut state = GameState::replay(log, TIMING, now).unwrap();
    state.resume(now, 1_800_000_000_000);
    state
}

#[test]
fn every_accepted_step_is_logged_with_the_banks_after_it() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    game.commit(Seat::One, 2, 5, 3 * SEC).unwrap();
    // A refused step is not logged.
    assert_eq!(
        game.commit(Seat::One, 2, 5, 4 * SEC),
        Err(ErrorCode::AlreadyCommitted)
    );
    let steps = log_of(&mut game, &mut log);
    assert_eq!(
        kinds(&steps),
        ["start", "commit", "commit", "reveal", "reveal", "result", "commit"]
    );
    assert_eq!(
        steps.iter().map(|s| s.step).collect::<Vec<_>>(),
        (0..7).collect::<Vec<_>>()
    );
    // Round 2's commit phase ran both banks (62 s each) for 2 s before one committed.
    assert_eq!(steps[6].banks_us, SeatPair::new(60_000_000, 60_000_000));
    assert_eq!(steps[6].at, 1_700_000_000_000 + 3_000);
    game.act(Seat::Two, SeatAction::Resign, 5 * SEC).unwrap();
    let steps = log_of(&mut game, &mut log);
    match &steps.last().unwrap().entry {
        LogEntry::End { result, .. } => assert_eq!(result.reason, EndReason::Resignation),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_replayed_log_restores_the_board_the_rounds_and_the_banks() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    game.play(2, 1, 2, 4 * SEC);
    game.commit(Seat::Two, 3, 3, 7 * SEC).unwrap();
    let steps = log_of(&mut game, &mut log);
    let later = game.at(3600 * SEC);
    let replayed = GameState::replay(&steps, TIMING, later).unwrap();
    let was = game.state.snapshot(game.at(7 * SEC), 0);
    let is = replayed.snapshot(later, 0);
    assert_eq!(is.rounds, was.rounds);
    assert_eq!(is.positions, was.positions);
    assert_eq!(
        (is.round, is.phase, is.committed),
        (3, Phase::Commit, SeatPair::new(false, true))
    );
    assert_eq!(
        replayed.rounds(),
        game.state.rounds(),
        "clocks of each round too"
    );
    // The banks as logged, stopped: the hour in between cost nobody anything.
    assert_eq!(
        (is.clocks.one_ms, is.clocks.two_ms),
        (was.clocks.one_ms, was.clocks.two_ms)
    );
    assert_eq!(is.clocks.running, SeatPair::new(false, false));
    assert!(
        is.seq >= was.seq - 2,
        "only unlogged presence and draw events may be missing"
    );
}

#[test]
fn a_restart_voids_the_round_under_way_and_holds_the_clocks_until_both_are_back() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    game.play(2, 1, 2, 2 * SEC);
    game.commit(Seat::One, 3, 5, 3 * SEC).unwrap();
    game.commit(Seat::Two, 3, 2, 3 * SEC).unwrap();
    game.reveal(Seat::One, 3, 5, 4 * SEC).unwrap();
    let banks = game.bank_ms(4 * SEC);
    let t = game.at(1000 * SEC);
    let mut state = restart(&log_of(&mut game, &mut log), t);
    let mut out = Vec::new();
    let snapshot = state.snapshot(t, 0);
    assert_eq!((snapshot.round, snapshot.phase), (3, Phase::Commit));
    assert_eq!(snapshot.committed, SeatPair::new(false, false));
    assert_eq!(snapshot.revealed, SeatPair::new(false, false));
    assert!(state.is_held());
    match &state.take_log()[..] {
        [LogStep {
            entry: LogEntry::Restarted { voided: Some(3) },
            step: 14,
            ..
        }] => {}
        other => panic!("{other:?}"),
    }
    // Held: however long the players take (within the grace period), no bank runs.
    state.attach(Seat::One, t + 30 * SEC, &mut out);
    assert_eq!(state.clocks_ms(t + 39 * SEC), banks);
    assert!(state.is_held());
    state.attach(Seat::Two, t + 39 * SEC, &mut out);
    assert!(!state.is_held());
    match out.last() {
        Some(ServerMsg::RoundStart {
            round: 3, clocks, ..
        }) => {
            assert_eq!((clocks.one_ms, clocks.two_ms), (banks.one, banks.two));
            assert_eq!(clocks.running, SeatPair::new(true, true));
        }
        other => panic!("{other:?}"),
    }
    // The round is played again from its commit phase, with fresh commitments.
    let mut seq = out.iter().filter_map(ServerMsg::seq).max().unwrap();
    let mut again = Game {
        state,
        t0: game.t0,
        events: Vec::new(),
    };
    again.play(3, 3, 2, 1040 * SEC);
    let positions = again.state.snapshot(again.at(1040 * SEC), 0).positions;
    assert_eq!(positions, vec![0, -2, 1, 0, 0]);
    for event in &again.events {
        seq += 1;
        assert_eq!(
            event.seq(),
            Some(seq),
            "seq goes on from the restored game's"
        );
    }
}

#[test]
fn a_second_restart_replays_the_first_and_the_round_played_again() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    game.commit(Seat::One, 2, 4, 2 * SEC).unwrap();
    let t = game.at(100 * SEC);
    let state = restart(&log_of(&mut game, &mut log), t);
    // The restarted game commits round 2 again (a different pick) and crashes again.
    let mut game = Game {
        state,
        t0: game.t0,
        events: Vec::new(),
    };
    game.state.attach(Seat::One, t, &mut game.events);
    game.state.attach(Seat::Two, t, &mut game.events);
    game.commit(Seat::One, 2, 1, 101 * SEC).unwrap();
    game.commit(Seat::Two, 2, 2, 101 * SEC).unwrap();
    game.reveal(Seat::One, 2, 1, 102 * SEC).unwrap();
    game.reveal(Seat::Two, 2, 2, 102 * SEC).unwrap();
    let steps = log_of(&mut game, &mut log);
    assert_eq!(
        kinds(&steps),
        [
            "start",
            "commit",
            "commit",
            "reveal",
            "reveal",
            "result",
            "commit",
            "restarted",
            "commit",
            "commit",
            "reveal",
            "reveal",
            "result"
        ]
    );
    let replayed = GameState::replay(&steps, TIMING, game.at(500 * SEC)).unwrap();
    assert_eq!(replayed.rounds(), game.state.rounds());
    assert_eq!(replayed.rounds()[1].picks, SeatPair::new(1, 2));
}

#[test]
fn a_hold_ends_after_the_grace_period_and_then_the_absent_player_runs_and_may_be_claimed() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    let t = game.at(100 * SEC);
    let mut state = restart(&log_of(&mut game, &mut log), t);
    let mut out = Vec::new();
    state.attach(Seat::One, t + SEC, &mut out);
    assert_eq!(state.next_deadline(), Some(t + TIMING.grace));
    // Within the grace period the absent player cannot be claimed against.
    let claim = state.act(
        Seat::One,
        SeatAction::ClaimWin,
        t + TIMING.grace - SEC,
        &mut out,
    );
    assert_eq!(claim.map_err(|e| e.code), Err(ErrorCode::ClaimNotAllowed));
    state.tick(t + TIMING.grace, &mut out);
    assert!(!state.is_held());
    assert!(matches!(
        out.last(),
        Some(ServerMsg::RoundStart { round: 2, .. })
    ));
    // From the hold's end the ordinary rules apply.
    assert_eq!(
        state.clocks_ms(t + TIMING.grace + SEC),
        SeatPair::new(61_000, 61_000)
    );
    state
        .act(Seat::One, SeatAction::ClaimWin, t + TIMING.grace, &mut out)
        .unwrap();
    assert_eq!(state.result().map(|r| r.reason), Some(EndReason::Abandoned));
}

#[test]
fn a_game_restored_in_round_one_gets_a_fresh_first_commit_window() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.commit(Seat::One, 1, 5, 29 * SEC).unwrap();
    let t = game.at(60 * SEC);
    let mut state = restart(&log_of(&mut game, &mut log), t);
    let mut out = Vec::new();
    state.attach(Seat::One, t + 5 * SEC, &mut out);
    state.attach(Seat::Two, t + 6 * SEC, &mut out);
    assert_eq!(
        state.next_deadline(),
        Some(t + 6 * SEC + TIMING.first_commit_window)
    );
    state.tick(t + 6 * SEC + TIMING.first_commit_window, &mut out);
    assert_eq!(state.result().map(|r| r.reason), Some(EndReason::Aborted));
}

#[test]
fn a_log_the_rules_refuse_is_not_restored() {
    let mut game = Game::new();
    let mut log = Vec::new();
    game.play(1, 5, 2, SEC);
    let mut steps = log_of(&mut game, &mut log);
    if let LogEntry::Reveal { nonce, .. } = &mut steps[3].entry {
        *nonce = Hash32([0; 32]);
    }
    let now = game.at(2 * SEC);
    match GameState::replay(&steps, TIMING, now) {
        Err(ReplayError::Step { step: 3, reason }) => assert!(reason.contains("reveal_mismatch")),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(matches!(
        GameState::replay(&steps[1..], TIMING, now),
        Err(ReplayError::NoStart)
    ));
}

#[test]
fn an_incident_holds_a_game_that_lost_a_seat_and_reopens_the_reveal_window() {
    let mut game = Game::new();
    let t = |s: u64| game.at(Duration::from_secs(s));
    let (t1, t20, t21, t40) = (t(1), t(20), t(21), t(40));
    let mut out = Vec::new();
    game.state.attach(Seat::One, t1, &mut out);
    game.state.attach(Seat::Two, t1, &mut out);
    game.play(1, 5, 2, 2 * SEC);
    game.commit(Seat::One, 2, 5, 10 * SEC).unwrap();
    game.commit(Seat::Two, 2, 2, 10 * SEC).unwrap();
    game.reveal(Seat::One, 2, 5, 11 * SEC).unwrap();
    // Before the incident's window: not part of it.
    assert!(!game.state.hold_for_incident(t21, t21, &mut out));
    game.state.detach(Seat::Two, t20, &mut out);
    let before = game.bank_ms(20 * SEC);
    assert!(game.state.hold_for_incident(t20, t21, &mut out));
    // Long past the reveal window, nothing has happened: the game waits for its player.
    game.tick(35 * SEC);
    assert_eq!(game.result(), None);
    assert_eq!(game.bank_ms(39 * SEC).one, before.one);
    out.clear();
    game.state.attach(Seat::Two, t40, &mut out);
    match out.last() {
        Some(ServerMsg::RevealPhase {
            round: 2,
            reveal_ms: 15_000,
            clocks,
            ..
        }) => {
            assert_eq!(clocks.running, SeatPair::new(false, true));
        }
        other => panic!("{other:?}"),
    }
    // A fresh reveal window from the player's return.
    game.reveal(Seat::Two, 2, 2, 54 * SEC).unwrap();
    assert_eq!(game.state.rounds().len(), 2);
}
