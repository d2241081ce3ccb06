//! Escrowed reveals: a commit carrying its pick and nonce, revealed by the server when the
//! reveal phase opens; checked at once, logged with the commit, kept through a restart.

use std::time::Duration;

use elementals_protocol::commitment;
use elementals_protocol::messages::{EndReason, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;

use super::{nonce, Game, SEC, TIMING};
use crate::game::state::GameState;
use crate::game::SeatAction;
use crate::record::{LogEntry, LogStep};

/// The escrow fields of a commit, as a client sends them.
type Sent = (Option<Element>, Option<Vec<u8>>);

/// A commit for `pick` (with this test's nonce) carrying `escrow` as the client sent it.
fn commit_with(
    game: &mut Game,
    seat: Seat,
    round: u32,
    pick: Element,
    escrow: Sent,
    at: Duration,
) -> Result<(), ErrorCode> {
    let id = game.state.info.game_id.0;
    let commitment = commitment::make(&id, round, seat, pick, &nonce(round, seat)).to_vec();
    let (pick, nonce) = escrow;
    let action = SeatAction::Commit {
        round,
        commitment,
        pick,
        nonce,
    };
    game.act(seat, action, at)
}

fn escrow(game: &mut Game, seat: Seat, round: u32, pick: Element, at: Duration) {
    let held = (Some(pick), Some(nonce(round, seat).to_vec()));
    commit_with(game, seat, round, pick, held, at).unwrap();
}

fn kinds(log: &[LogStep]) -> Vec<&'static str> {
    log.iter()
        .map(|s| match s.entry {
            LogEntry::Start { .. } => "start",
            LogEntry::Commit { escrow: None, .. } => "commit",
            LogEntry::Commit {
                escrow: Some(_), ..
            } => "commit+escrow",
            LogEntry::Reveal { .. } => "reveal",
            LogEntry::Result { .. } => "result",
            LogEntry::Restarted { .. } => "restarted",
            LogEntry::Hibernated { .. } => "hibernated",
            LogEntry::End { .. } => "end",
        })
        .collect()
}

/// The only event that may carry a pick is `RoundResult`; before it, none may.
fn picks_shown(events: &[ServerMsg]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, ServerMsg::RoundResult { .. }))
}

#[test]
fn an_escrowed_reveal_is_made_by_the_server_when_the_reveal_phase_opens() {
    let mut game = Game::new();
    game.events.clear();
    escrow(&mut game, Seat::One, 1, 5, SEC);
    assert!(matches!(
        game.events[..],
        [ServerMsg::Committed {
            seat: Seat::One,
            ..
        }]
    ));
    let snapshot = game.state.snapshot(game.at(SEC), 0);
    assert_eq!(snapshot.committed, SeatPair::new(true, false));
    assert_eq!(snapshot.revealed, SeatPair::new(false, false));
    // A reveal for an escrowed round is a duplicate, in either phase.
    assert_eq!(
        game.reveal(Seat::One, 1, 5, 2 * SEC),
        Err(ErrorCode::AlreadyRevealed)
    );
    game.commit(Seat::Two, 1, 2, 3 * SEC).unwrap();
    assert!(matches!(
        game.events[1..],
        [
            ServerMsg::Committed {
                seat: Seat::Two,
                ..
            },
            ServerMsg::RevealPhase { round: 1, .. },
            ServerMsg::Revealed {
                seat: Seat::One,
                round: 1,
                ..
            },
        ]
    ));
    assert!(!picks_shown(&game.events));
    let snapshot = game.state.snapshot(game.at(3 * SEC), 0);
    assert_eq!(snapshot.revealed, SeatPair::new(true, false));
    assert!(snapshot.rounds.is_empty());
    // Only the seat that has not revealed has its bank running.
    assert_eq!(snapshot.clocks.running, SeatPair::new(false, true));
    assert_eq!(
        game.reveal(Seat::One, 1, 5, 4 * SEC),
        Err(ErrorCode::AlreadyRevealed)
    );
    game.reveal(Seat::Two, 1, 2, 4 * SEC).unwrap();
    let round = &game.state.rounds()[0];
    assert_eq!((round.picks.one, round.picks.two), (5, 2));
    assert_eq!(round.escrowed, SeatPair::new(true, false));
    assert_eq!(round.nonces.one.0, nonce(1, Seat::One));
    // The escrow is in the commit step; the server's reveal is not a step of its own.
    assert_eq!(
        kinds(&game.state.take_log()),
        ["start", "commit+escrow", "commit", "reveal", "result"]
    );
}

#[test]
fn a_game_both_players_escrow_takes_one_visit_a_round() {
    let mut game = Game::new();
    let rounds = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];
    for (i, (one, two)) in rounds.into_iter().enumerate() {
        let round = i as u32 + 1;
        let at = round * SEC;
        escrow(&mut game, Seat::One, round, one, at);
        let before = game.events.len();
        escrow(&mut game, Seat::Two, round, two, at);
        // The second commit opens the reveal phase, both reveals follow, and the result.
        let kinds: Vec<_> = game.events[before..]
            .iter()
            .take(5)
            .map(|e| match e {
                ServerMsg::Committed { .. } => "committed",
                ServerMsg::RevealPhase { .. } => "reveal_phase",
                ServerMsg::Revealed { .. } => "revealed",
                ServerMsg::RoundResult { .. } => "round_result",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "committed",
                "reveal_phase",
                "revealed",
                "revealed",
                "round_result"
            ]
        );
    }
    assert_eq!(game.result(), Some((Some(Seat::Two), EndReason::Edge)));
    let record = game.state.record().unwrap();
    assert!(record
        .rounds
        .iter()
        .all(|r| r.escrowed == SeatPair::new(true, true)));
    let seqs: Vec<u64> = game.events.iter().filter_map(|e| e.seq()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[test]
fn an_escrow_that_does_not_open_the_commitment_is_refused_and_changes_nothing() {
    let mut game = Game::new();
    game.play(1, 5, 2, SEC);
    let _ = game.state.take_log();
    let (events, seq) = (game.events.len(), game.state.seq());
    let good = nonce(2, Seat::One).to_vec();
    let cases: [(Sent, ErrorCode); 6] = [
        ((Some(4), Some(good.clone())), ErrorCode::EscrowMismatch),
        ((Some(5), Some(vec![0; 32])), ErrorCode::EscrowMismatch),
        ((Some(5), None), ErrorCode::EscrowMismatch),
        ((None, Some(good.clone())), ErrorCode::EscrowMismatch),
        ((Some(5), Some(good[..31].to_vec())), ErrorCode::BadNonce),
        ((Some(9), Some(good.clone())), ErrorCode::InvalidPick),
    ];
    for (escrow, code) in cases {
        let refused = commit_with(&mut game, Seat::One, 2, 5, escrow.clone(), 2 * SEC);
        assert_eq!(refused, Err(code), "{escrow:?}");
    }
    assert_eq!((game.events.len(), game.state.seq()), (events, seq));
    assert!(game.state.take_log().is_empty());
    let snapshot = game.state.snapshot(game.at(2 * SEC), 0);
    assert_eq!(snapshot.committed, SeatPair::new(false, false));
    // The seat may then commit, escrowed or not.
    escrow(&mut game, Seat::One, 2, 5, 3 * SEC);
}

#[test]
fn a_replayed_log_holds_the_escrow_and_the_server_still_reveals_it() {
    let mut game = Game::new();
    escrow(&mut game, Seat::One, 1, 5, SEC);
    game.commit(Seat::Two, 1, 2, SEC).unwrap();
    game.reveal(Seat::Two, 1, 2, SEC).unwrap();
    escrow(&mut game, Seat::Two, 2, 3, 2 * SEC);
    let steps = game.state.take_log();
    let later = game.at(100 * SEC);
    // The escrowed round replays to the same record, flags included.
    let state = GameState::replay(&steps, TIMING, later).unwrap();
    assert_eq!(state.rounds(), game.state.rounds());
    assert_eq!(state.rounds()[0].escrowed, SeatPair::new(true, false));
    let mut again = Game {
        state,
        t0: game.t0,
        events: Vec::new(),
    };
    assert_eq!(
        again.reveal(Seat::Two, 2, 3, 100 * SEC),
        Err(ErrorCode::AlreadyRevealed)
    );
    again.commit(Seat::One, 2, 1, 100 * SEC).unwrap();
    assert!(matches!(
        again.events.last(),
        Some(ServerMsg::Revealed {
            seat: Seat::Two,
            round: 2,
            ..
        })
    ));
    again.reveal(Seat::One, 2, 1, 100 * SEC).unwrap();
    let round = &again.state.rounds()[1];
    assert_eq!((round.picks.one, round.picks.two), (1, 3));
    assert_eq!(round.escrowed, SeatPair::new(false, true));
}

#[test]
fn a_restart_keeps_a_round_whose_every_commit_escrowed_and_voids_any_other() {
    let t = |game: &Game| game.at(1000 * SEC);
    // Only escrowed commits: kept.
    let mut game = Game::new();
    game.play(1, 5, 2, SEC);
    escrow(&mut game, Seat::One, 2, 4, 2 * SEC);
    let steps = game.state.take_log();
    let mut state = GameState::replay(&steps, TIMING, t(&game)).unwrap();
    state.resume(t(&game), 1_800_000_000_000);
    assert!(matches!(
        state.take_log()[..],
        [LogStep {
            entry: LogEntry::Restarted { voided: None },
            ..
        }]
    ));
    let snapshot = state.snapshot(t(&game), 0);
    assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Commit));
    assert_eq!(snapshot.committed, SeatPair::new(true, false));
    let mut events = Vec::new();
    state.attach(Seat::One, t(&game), &mut events);
    state.attach(Seat::Two, t(&game), &mut events);
    let mut again = Game {
        state,
        t0: game.t0,
        events: Vec::new(),
    };
    again.commit(Seat::Two, 2, 2, 1001 * SEC).unwrap();
    again.reveal(Seat::Two, 2, 2, 1001 * SEC).unwrap();
    let round = &again.state.rounds()[1];
    assert_eq!((round.picks.one, round.picks.two), (4, 2));
    assert_eq!(round.escrowed, SeatPair::new(true, false));

    // A plain commit beside an escrowed one: its client may have lost the nonce, so voided.
    let mut game = Game::new();
    escrow(&mut game, Seat::One, 1, 4, SEC);
    game.commit(Seat::Two, 1, 2, SEC).unwrap();
    let steps = game.state.take_log();
    let mut state = GameState::replay(&steps, TIMING, t(&game)).unwrap();
    state.resume(t(&game), 1_800_000_000_000);
    let snapshot = state.snapshot(t(&game), 0);
    assert_eq!(snapshot.committed, SeatPair::new(false, false));
    assert_eq!(snapshot.revealed, SeatPair::new(false, false));
    let mut again = Game {
        state,
        t0: game.t0,
        events: Vec::new(),
    };
    // The void took the escrow too: the seat commits (and reveals) afresh.
    again.state.attach(Seat::One, t(&game), &mut again.events);
    again.state.attach(Seat::Two, t(&game), &mut again.events);
    again.play(1, 3, 2, 1001 * SEC);
    assert_eq!(
        again.state.rounds()[0].escrowed,
        SeatPair::new(false, false)
    );
}
