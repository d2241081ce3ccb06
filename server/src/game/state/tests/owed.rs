//! What a game waits for from whom, and by when (`my_games`), through a round, a stall and
//! the end.

use elementals_protocol::messages::{Owed, OwedAction, Phase};
use elementals_protocol::rules::Seat;

use super::{Game, SEC, TC, TIMING};
use crate::game::SeatAction;

/// The game's wall-clock basis (`Game::with_timing`): Unix ms at `t0`.
const T0_MS: u64 = 1_700_000_000_000;

fn owed(seat: Seat, action: OwedAction, deadline: Option<u64>) -> Owed {
    Owed {
        seat,
        action,
        deadline,
    }
}

#[test]
fn each_phase_names_the_seats_that_owe_and_their_deadlines() {
    use OwedAction::{Commit, Reveal};
    use Seat::{One, Two};
    let mut game = Game::new();
    let window = Some(T0_MS + TIMING.first_commit_window.as_millis() as u64);
    let now = game.state.owed();
    assert_eq!((now.round, now.phase), (1, Phase::Commit));
    assert_eq!(
        now.owed,
        [owed(One, Commit, window), owed(Two, Commit, window)]
    );

    game.commit(One, 1, 1, SEC).unwrap();
    assert_eq!(game.state.owed().owed, [owed(Two, Commit, window)]);
    game.commit(Two, 1, 2, 2 * SEC).unwrap();
    // The reveal window (15 s from 2 s) ends before either bank.
    let by = Some(T0_MS + 2_000 + TC.reveal_ms);
    let now = game.state.owed();
    assert_eq!((now.round, now.phase), (1, Phase::Reveal));
    assert_eq!(now.owed, [owed(One, Reveal, by), owed(Two, Reveal, by)]);
    game.reveal(One, 1, 1, 3 * SEC).unwrap();
    assert_eq!(game.state.owed().owed, [owed(Two, Reveal, by)]);
    game.reveal(Two, 1, 2, 4 * SEC).unwrap();

    // Round 2: each seat's own bank, running from 4 s.
    let banks = game.bank_ms(4 * SEC);
    let now = game.state.owed();
    assert_eq!((now.round, now.phase), (2, Phase::Commit));
    assert_eq!(
        now.owed,
        [
            owed(One, Commit, Some(T0_MS + 4_000 + banks.one)),
            owed(Two, Commit, Some(T0_MS + 4_000 + banks.two)),
        ]
    );

    // Stalled, the clocks are held: still owed, by no deadline.
    game.state.stall(game.at(5 * SEC));
    assert_eq!(
        game.state.owed().owed,
        [owed(One, Commit, None), owed(Two, Commit, None)]
    );
    let mut out = Vec::new();
    game.state.unstall(game.at(6 * SEC), &mut out);
    assert!(game.state.owed().owed.iter().all(|o| o.deadline.is_some()));

    game.act(Two, SeatAction::Resign, 7 * SEC).unwrap();
    let now = game.state.owed();
    assert_eq!(now.phase, Phase::Over);
    assert!(now.owed.is_empty());
}
