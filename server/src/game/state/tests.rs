//! The state machine driven by hand with explicit instants: no runtime, no sleeps.

use std::time::{Duration, Instant};

use elementals_protocol::commitment::{self, NONCE_LEN};
use elementals_protocol::messages::{EndReason, GameId, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};
use uuid::Uuid;

use super::{GameState, Timing};
use crate::game::{GameSetup, SeatAction};
use crate::record::RecordPlayer;

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// 60 s banks, 2 s increment, 15 s to reveal.
const TC: TimeControl = TimeControl {
    initial_ms: 60_000,
    increment_ms: 2_000,
    reveal_ms: 15_000,
    per_phase_ms: None,
};

const TIMING: Timing = Timing {
    first_commit_window: Duration::from_secs(30),
    grace: Duration::from_secs(40),
    max_rounds: 1_000,
};

fn player(id: i64, guest: bool) -> RecordPlayer {
    RecordPlayer {
        account_id: id,
        name: format!("p{id}"),
        guest,
        rating: 1.0,
    }
}

fn setup(guest_two: bool) -> GameSetup {
    GameSetup {
        game_id: GameId(Uuid::from_u128(0x1234)),
        variant: Variant::CLASSIC,
        time_control: TC,
        rated: true,
        players: SeatPair::new(player(1, false), player(2, guest_two)),
    }
}

/// A game under test: the state, its start instant, and every event it has pushed.
struct Game {
    state: GameState,
    t0: Instant,
    events: Vec<ServerMsg>,
}

fn nonce(round: u32, seat: Seat) -> [u8; NONCE_LEN] {
    [round as u8 ^ (seat.number() << 6); NONCE_LEN]
}

impl Game {
    fn new() -> Game {
        Game::with(setup(false))
    }

    fn with(setup: GameSetup) -> Game {
        Game::with_timing(setup, TIMING)
    }

    fn with_timing(setup: GameSetup, timing: Timing) -> Game {
        let t0 = Instant::now();
        let mut events = Vec::new();
        let state = GameState::new(&setup, 1_700_000_000_000, t0, timing, &mut events);
        Game { state, t0, events }
    }

    fn at(&self, offset: Duration) -> Instant {
        self.t0 + offset
    }

    fn act(&mut self, seat: Seat, action: SeatAction, at: Duration) -> Result<(), ErrorCode> {
        let now = self.at(at);
        let result = self.state.act(seat, action, now, &mut self.events);
        result.map_err(|e| e.code)
    }

    fn commit(
        &mut self,
        seat: Seat,
        round: u32,
        pick: Element,
        at: Duration,
    ) -> Result<(), ErrorCode> {
        let id = self.state.info.game_id.0;
        let commitment = commitment::make(&id, round, seat, pick, &nonce(round, seat)).to_vec();
        self.act(
            seat,
            SeatAction::Commit {
                round,
                commitment,
                pick: None,
                nonce: None,
            },
            at,
        )
    }

    fn reveal(
        &mut self,
        seat: Seat,
        round: u32,
        pick: Element,
        at: Duration,
    ) -> Result<(), ErrorCode> {
        let nonce = nonce(round, seat).to_vec();
        self.act(seat, SeatAction::Reveal { round, pick, nonce }, at)
    }

    /// Both commit and reveal at `at`.
    fn play(&mut self, round: u32, one: Element, two: Element, at: Duration) {
        self.commit(Seat::One, round, one, at).unwrap();
        self.commit(Seat::Two, round, two, at).unwrap();
        self.reveal(Seat::One, round, one, at).unwrap();
        self.reveal(Seat::Two, round, two, at).unwrap();
    }

    fn tick(&mut self, at: Duration) {
        let now = self.at(at);
        self.state.tick(now, &mut self.events);
    }

    fn result(&self) -> Option<(Option<Seat>, EndReason)> {
        self.state.result().map(|r| (r.winner, r.reason))
    }

    fn bank_ms(&self, at: Duration) -> SeatPair<u64> {
        self.state.clocks_ms(self.at(at))
    }
}

#[test]
fn the_seed_example_is_won_by_player_two_at_the_edge() {
    let mut game = Game::new();
    // (one's pick, two's pick, the round's winner, where the moved element ends).
    let rounds = [
        (5, 2, Seat::Two, -1),
        (1, 2, Seat::Two, -2),
        (2, 3, Seat::Two, -1),
        (3, 2, Seat::One, 0),
        (5, 2, Seat::Two, -3),
    ];
    for (i, (one, two, winner, pos)) in rounds.into_iter().enumerate() {
        let round = i as u32 + 1;
        game.play(round, one, two, round * SEC);
        let log = game.state.rounds().last().unwrap();
        assert_eq!(log.outcome.winner, Some(winner), "round {round}");
        let mover = log.outcome.moved.unwrap().element;
        assert_eq!(log.positions[usize::from(mover) - 1], pos, "round {round}");
    }
    assert_eq!(game.result(), Some((Some(Seat::Two), EndReason::Edge)));
    let record = game.state.record().unwrap();
    assert_eq!(record.rounds.len(), 5);
    assert_eq!(record.rounds[0].nonces.one.0, nonce(1, Seat::One));
    assert_eq!(
        record.rounds[0].commitments.two.0.as_slice(),
        commitment::make(
            &game.state.info.game_id.0,
            1,
            Seat::Two,
            2,
            &nonce(1, Seat::Two)
        )
        .as_slice()
    );
    assert!(record.changes_ratings());
    // Every event is numbered 1, 2, 3, ... and the game ends with a rated GameOver.
    let seqs: Vec<u64> = game.events.iter().filter_map(|e| e.seq()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(matches!(
        game.events.last(),
        Some(ServerMsg::GameOver { rated: true, .. })
    ));
    assert_eq!(
        game.commit(Seat::One, 6, 1, 6 * SEC),
        Err(ErrorCode::GameOver)
    );
}

#[test]
fn commitments_are_checked() {
    let mut game = Game::new();
    let short = SeatAction::Commit {
        round: 1,
        commitment: vec![0; 31],
        pick: None,
        nonce: None,
    };
    assert_eq!(
        game.act(Seat::One, short, SEC),
        Err(ErrorCode::BadCommitment)
    );
    assert_eq!(
        game.commit(Seat::One, 2, 1, SEC),
        Err(ErrorCode::WrongRound)
    );
    assert_eq!(
        game.reveal(Seat::One, 1, 1, SEC),
        Err(ErrorCode::WrongPhase)
    );
    let copied = SeatAction::Commit {
        round: 1,
        commitment: vec![7; 32],
        pick: None,
        nonce: None,
    };
    game.act(Seat::One, copied, SEC).unwrap();
    let copy = SeatAction::Commit {
        round: 1,
        commitment: vec![7; 32],
        pick: None,
        nonce: None,
    };
    assert_eq!(
        game.act(Seat::Two, copy, SEC),
        Err(ErrorCode::DuplicateCommitment)
    );
    assert_eq!(
        game.commit(Seat::One, 1, 1, SEC),
        Err(ErrorCode::AlreadyCommitted)
    );
    // A commit sets only its own seat.
    let snapshot = game.state.snapshot(game.at(SEC), 0);
    assert_eq!(snapshot.committed, SeatPair::new(true, false));
    assert_eq!(snapshot.phase, Phase::Commit);
}

#[test]
fn a_wrong_reveal_may_be_corrected_before_the_deadline() {
    let mut game = Game::new();
    game.commit(Seat::One, 1, 3, SEC).unwrap();
    game.commit(Seat::Two, 1, 4, SEC).unwrap();
    assert_eq!(
        game.commit(Seat::One, 1, 3, SEC),
        Err(ErrorCode::AlreadyCommitted)
    );
    let bad_nonce = SeatAction::Reveal {
        round: 1,
        pick: 3,
        nonce: vec![0; 5],
    };
    assert_eq!(
        game.act(Seat::One, bad_nonce, 2 * SEC),
        Err(ErrorCode::BadNonce)
    );
    assert_eq!(
        game.reveal(Seat::One, 1, 9, 2 * SEC),
        Err(ErrorCode::InvalidPick)
    );
    assert_eq!(
        game.reveal(Seat::One, 1, 2, 2 * SEC),
        Err(ErrorCode::RevealMismatch)
    );
    // The opponent's pick and nonce do not open this seat's commitment either.
    assert_eq!(
        game.reveal(Seat::One, 1, 4, 2 * SEC),
        Err(ErrorCode::RevealMismatch)
    );
    game.reveal(Seat::One, 1, 3, 15 * SEC).unwrap();
    assert_eq!(
        game.reveal(Seat::One, 1, 3, 15 * SEC),
        Err(ErrorCode::AlreadyRevealed)
    );
    game.reveal(Seat::Two, 1, 4, 15 * SEC).unwrap();
    assert_eq!(game.state.rounds().len(), 1);
    assert_eq!(game.state.round, 2);
}

mod bounds;
mod clocks;
mod correspondence;
mod escrow;
mod owed;
mod players;
mod recovery;
mod stall;
