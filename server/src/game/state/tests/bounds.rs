//! Every game is bounded: it ends drawn at the bound on rounds, its log's `End` step does
//! not grow with it, and the snapshot of the longest game possible fits a client's frame.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{EndReason, GameResult, ServerMsg};
use elementals_protocol::rules::{Seat, Variant, MAX_DISTANCE, MAX_NUMBER, MAX_ROUNDS};
use elementals_protocol::wire::{self, MAX_SERVER_MESSAGE_BYTES};
use elementals_protocol::ErrorCode;

use super::{setup, Game, Timing, MS, SEC, TIMING};
use crate::game::state::GameState;
use crate::game::SeatAction;
use crate::record::{GameLog, LogEntry, LogStep};

fn bounded(max_rounds: u32) -> Timing {
    Timing {
        max_rounds,
        ..TIMING
    }
}

/// The `End` step's bytes, as the journal writes a step (MessagePack with named fields).
fn encoded_len(step: &LogStep) -> usize {
    rmp_serde::to_vec_named(step).unwrap().len()
}

fn end_step(log: &[LogStep]) -> &LogStep {
    let last = log.last().unwrap();
    assert!(last.entry.is_end(), "{last:?}");
    last
}

#[test]
fn a_game_reaching_max_rounds_ends_drawn_unrated_and_logs_its_end() {
    let mut game = Game::with_timing(setup(false), bounded(3));
    // Ties: nothing moves, so only the bound ends the game.
    game.play(1, 1, 1, SEC);
    game.play(2, 2, 2, 2 * SEC);
    assert_eq!(game.result(), None, "two rounds of three");
    game.play(3, 3, 3, 3 * SEC);
    assert_eq!(game.result(), Some((None, EndReason::MaxRounds)));
    assert!(matches!(
        game.events.last(),
        Some(ServerMsg::GameOver {
            rated: false,
            result: GameResult {
                winner: None,
                reason: EndReason::MaxRounds
            },
            ..
        })
    ));
    let record = game.state.record().unwrap();
    assert_eq!(record.rounds.len(), 3);
    assert!(!record.changes_ratings(), "a draw changes no rating");
    assert_eq!(
        game.commit(Seat::One, 4, 1, 4 * SEC),
        Err(ErrorCode::GameOver)
    );
    let log = game.state.take_log();
    assert!(matches!(
        end_step(&log).entry,
        LogEntry::End {
            result: GameResult {
                reason: EndReason::MaxRounds,
                ..
            },
            ..
        }
    ));
}

#[test]
fn an_edge_reached_in_the_last_round_is_still_a_win() {
    let mut game = Game::with_timing(setup(false), bounded(5));
    for (round, (one, two)) in [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)]
        .into_iter()
        .enumerate()
    {
        let round = round as u32 + 1;
        game.play(round, one, two, round * SEC);
    }
    assert_eq!(game.result(), Some((Some(Seat::Two), EndReason::Edge)));
}

#[test]
fn the_end_step_carries_no_rounds_and_the_log_rebuilds_the_record() {
    let mut sizes = Vec::new();
    for rounds in [1u32, 400] {
        let mut game = Game::new();
        let mut log = Vec::new();
        for round in 1..=rounds {
            game.play(round, 1, 1, round * MS);
            log.extend(game.state.take_log());
        }
        game.act(Seat::Two, SeatAction::Resign, (rounds + 1) * MS)
            .unwrap();
        log.extend(game.state.take_log());
        sizes.push(encoded_len(end_step(&log)));

        // The record stored at a restart is the one the game built.
        let log = GameLog {
            game_id: game.state.info.game_id,
            steps: log,
        };
        let rebuilt = log.ended().unwrap().expect("the end is logged");
        assert_eq!(&rebuilt, game.state.record().unwrap().as_ref());
        assert_eq!(rebuilt.rounds.len(), rounds as usize);
    }
    // The outcome, the end time and two clocks: the same few dozen bytes however long the
    // game (only the step's numbers take a few bytes more).
    assert!(sizes[1] - sizes[0] < 16, "{sizes:?}");
    assert!(sizes[1] < 200, "{sizes:?}");
}

#[test]
fn a_replayed_game_obeys_the_bound_even_when_lowered_since() {
    let mut game = Game::new();
    let mut log = Vec::new();
    for round in 1..=4 {
        game.play(round, 1, 1, round * SEC);
    }
    log.extend(game.state.take_log());
    let now = game.at(3600 * SEC);

    // Under the same bound (4 of 1,000), the game goes on where it stood.
    let mut same = GameState::replay(&log, TIMING, now).unwrap();
    same.resume(now, 1_800_000_000_000);
    assert!(!same.end_at_max_rounds(now, &mut Vec::new()));
    assert_eq!(same.rounds().len(), 4);

    // Restarted with a bound of 3: the log is not broken, and the game ends there.
    let mut lowered = GameState::replay(&log, bounded(3), now).unwrap();
    lowered.resume(now, 1_800_000_000_000);
    assert!(lowered.end_at_max_rounds(now, &mut Vec::new()));
    let record = lowered.record().unwrap();
    assert_eq!(
        (record.result.winner, record.result.reason),
        (None, EndReason::MaxRounds)
    );
    assert_eq!(record.rounds.len(), 4);

    // With a bound of 5, the fifth round ends it, after the restart as before.
    let mut later = GameState::replay(&log, bounded(5), now).unwrap();
    later.resume(now, 1_800_000_000_000);
    let mut out = Vec::new();
    later.release(now, &mut out);
    let id = game.state.info.game_id.0;
    for seat in Seat::BOTH {
        let nonce = super::nonce(5, seat);
        let commitment = elementals_protocol::commitment::make(&id, 5, seat, 2, &nonce).to_vec();
        let commit = SeatAction::Commit {
            round: 5,
            commitment,
            pick: None,
            nonce: None,
        };
        later.act(seat, commit, now, &mut out).unwrap();
    }
    for seat in Seat::BOTH {
        let reveal = SeatAction::Reveal {
            round: 5,
            pick: 2,
            nonce: super::nonce(5, seat).to_vec(),
        };
        later.act(seat, reveal, now, &mut out).unwrap();
    }
    assert_eq!(later.result().map(|r| r.reason), Some(EndReason::MaxRounds));
}

#[test]
fn the_snapshot_of_the_longest_game_fits_a_clients_frame() {
    let variant = Variant {
        number: MAX_NUMBER,
        range: 1,
        distance: MAX_DISTANCE,
    };
    variant.validate().unwrap();
    let mut longest = setup(false);
    longest.variant = variant;
    for (seat, p) in [(0, &mut longest.players.one), (1, &mut longest.players.two)] {
        // The longest names there are.
        p.name = format!("{seat}").repeat(20);
    }
    let mut game = Game::with_timing(longest, bounded(MAX_ROUNDS));
    // The largest picks, and a move every round that never reaches an edge: 99 beats 98,
    // first for seat one (+1), then for seat two (back to 0).
    let t = |round: u32| Duration::from_micros(u64::from(round) * 100);
    for round in 1..=MAX_ROUNDS {
        let (one, two) = if round % 2 == 1 { (99, 98) } else { (98, 99) };
        game.play(round, one, two, t(round));
        assert!(
            round == MAX_ROUNDS || game.result().is_none(),
            "ended early, in round {round}"
        );
    }
    assert_eq!(game.result(), Some((None, EndReason::MaxRounds)));
    let now: Instant = game.at(t(MAX_ROUNDS));
    let snapshot = game.state.snapshot(now, u32::MAX);
    assert_eq!(snapshot.rounds.len(), MAX_ROUNDS as usize);
    assert!(snapshot.rounds.iter().all(|r| r.outcome.moved.is_some()));
    let frame = wire::encode(&ServerMsg::Snapshot {
        id: Some(u32::MAX),
        snapshot,
        seat: Some(Seat::One),
    });
    // Measured: about 0.2 MiB, a twentieth of the cap.
    assert!(
        frame.len() < MAX_SERVER_MESSAGE_BYTES,
        "{} bytes of {MAX_SERVER_MESSAGE_BYTES}",
        frame.len()
    );
    eprintln!("longest snapshot: {} bytes", frame.len());
}
