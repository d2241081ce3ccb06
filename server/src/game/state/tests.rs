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
        self.act(seat, SeatAction::Commit { round, commitment }, at)
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
    };
    game.act(Seat::One, copied, SEC).unwrap();
    let copy = SeatAction::Commit {
        round: 1,
        commitment: vec![7; 32],
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

#[test]
fn resigning_hands_the_win_to_the_opponent() {
    let mut game = Game::new();
    game.act(Seat::Two, SeatAction::Resign, SEC).unwrap();
    assert_eq!(
        game.result(),
        Some((Some(Seat::One), EndReason::Resignation))
    );
    assert_eq!(
        game.act(Seat::One, SeatAction::Resign, SEC),
        Err(ErrorCode::GameOver)
    );
}

#[test]
fn draws_are_offered_declined_cleared_and_agreed() {
    let mut game = Game::new();
    assert_eq!(
        game.act(Seat::One, SeatAction::DeclineDraw, SEC),
        Err(ErrorCode::NoDrawOffer)
    );
    game.act(Seat::One, SeatAction::OfferDraw, SEC).unwrap();
    // The offerer cannot decline its own offer; repeating it is a no-op.
    assert_eq!(
        game.act(Seat::One, SeatAction::DeclineDraw, SEC),
        Err(ErrorCode::NoDrawOffer)
    );
    game.act(Seat::One, SeatAction::OfferDraw, SEC).unwrap();
    game.act(Seat::Two, SeatAction::DeclineDraw, SEC).unwrap();
    game.act(Seat::Two, SeatAction::OfferDraw, SEC).unwrap();
    game.play(1, 1, 1, 2 * SEC);
    assert_eq!(game.state.snapshot(game.at(2 * SEC), 0).draw_offer, None);
    game.act(Seat::Two, SeatAction::OfferDraw, 3 * SEC).unwrap();
    game.act(Seat::One, SeatAction::OfferDraw, 3 * SEC).unwrap();
    assert_eq!(game.result(), Some((None, EndReason::DrawAgreed)));
    let kinds: Vec<&str> = game
        .events
        .iter()
        .filter_map(|e| match e {
            ServerMsg::DrawOffered { .. } => Some("offered"),
            ServerMsg::DrawDeclined { .. } => Some("declined"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["offered", "declined", "offered", "offered"]);
}

#[test]
fn a_win_is_claimable_only_after_the_grace_period() {
    let mut game = Game::new();
    let mut out = Vec::new();
    game.state.attach(Seat::One, game.at(SEC), &mut out);
    game.state.attach(Seat::Two, game.at(SEC), &mut out);
    game.play(1, 1, 1, 2 * SEC);
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, 3 * SEC),
        Err(ErrorCode::ClaimNotAllowed)
    );
    game.state.detach(Seat::Two, game.at(10 * SEC), &mut out);
    let away = 10 * SEC + TIMING.grace;
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, away - MS),
        Err(ErrorCode::ClaimNotAllowed)
    );
    game.act(Seat::One, SeatAction::ClaimWin, away).unwrap();
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Abandoned)));
    let presence: Vec<bool> = out
        .iter()
        .filter_map(|e| match e {
            ServerMsg::Presence { connected, .. } => Some(*connected),
            _ => None,
        })
        .collect();
    assert_eq!(presence, [true, true, false]);
}

#[test]
fn a_player_away_while_only_the_opponent_owes_a_move_is_not_blamed() {
    let mut game = Game::new();
    let mut out = Vec::new();
    game.state.attach(Seat::One, game.at(SEC), &mut out);
    game.state.attach(Seat::Two, game.at(SEC), &mut out);
    game.play(1, 1, 1, 2 * SEC);
    // Two commits round 2 and leaves; the game now waits for one, not for two.
    game.commit(Seat::Two, 2, 3, 3 * SEC).unwrap();
    game.state.detach(Seat::Two, game.at(4 * SEC), &mut out);
    let long_after = 4 * SEC + TIMING.grace + SEC;
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, long_after),
        Err(ErrorCode::ClaimNotAllowed)
    );
    // Once two owes a move (its reveal), its absence counts from then: here the reveal
    // window, shorter than the grace period, decides first.
    game.commit(Seat::One, 2, 1, long_after).unwrap();
    game.reveal(Seat::One, 2, 1, long_after + SEC).unwrap();
    game.tick(long_after + Duration::from_millis(TC.reveal_ms));
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::NoReveal)));
}

#[test]
fn a_game_with_a_guest_is_not_rated() {
    let mut game = Game::with(setup(true));
    game.act(Seat::Two, SeatAction::Resign, SEC).unwrap();
    assert!(!game.state.record().unwrap().changes_ratings());
    assert!(matches!(
        game.events.last(),
        Some(ServerMsg::GameOver { rated: false, .. })
    ));
}

mod bounds;
mod recovery;
mod stall;
