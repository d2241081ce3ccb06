use super::*;
use elementals_protocol::messages::{EndReason, PlayerInfo};
use elementals_protocol::rules::{Move, Outcome};
use elementals_protocol::{TimeControl, Variant};

fn info() -> GameInfo {
    let player = |name: &str| PlayerInfo {
        name: name.into(),
        rating: 1.0,
        guest: false,
        bot: false,
    };
    GameInfo {
        game_id: GameId::new_random_from([7; 16]),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player("ann"), player("bob")),
        started_at: 0,
    }
}

fn clocks() -> Clocks {
    Clocks {
        one_ms: 1000,
        two_ms: 2000,
        running: SeatPair::new(true, true),
    }
}

fn round_start(state: &GameState, seq: u64, round: u32) -> ServerMsg {
    ServerMsg::RoundStart {
        game_id: state.game_id(),
        seq,
        round,
        clocks: clocks(),
    }
}

fn result(
    state: &GameState,
    seq: u64,
    round: u32,
    one: u16,
    two: u16,
    positions: Vec<i16>,
) -> ServerMsg {
    ServerMsg::RoundResult {
        game_id: state.game_id(),
        seq,
        record: RoundRecord {
            round,
            picks: SeatPair::new(one, two),
            outcome: Outcome {
                winner: Some(Seat::Two),
                moved: Some(Move {
                    element: two,
                    by: Seat::Two,
                    from: 0,
                    to: -1,
                }),
            },
            positions,
        },
        clocks: clocks(),
    }
}

#[test]
fn a_round_moves_through_commit_reveal_and_result() {
    let mut s = GameState::new(info(), Some(Seat::One));
    assert_eq!((s.seq(), s.round(), s.positions()), (0, 0, &[0i16; 5][..]));
    assert_eq!(s.apply(&round_start(&s, 1, 1)), Applied::Applied);
    assert_eq!((s.round(), s.phase()), (1, Phase::Commit));
    let committed = ServerMsg::Committed {
        game_id: s.game_id(),
        seq: 2,
        round: 1,
        seat: Seat::Two,
        clocks: clocks(),
    };
    assert_eq!(s.apply(&committed), Applied::Applied);
    assert!(s.committed(Seat::Two) && !s.committed(Seat::One));
    let reveal = ServerMsg::RevealPhase {
        game_id: s.game_id(),
        seq: 3,
        round: 1,
        reveal_ms: 15_000,
        clocks: clocks(),
    };
    s.apply(&reveal);
    assert_eq!((s.phase(), s.reveal_ms()), (Phase::Reveal, Some(15_000)));
    s.apply(&result(&s, 4, 1, 5, 2, vec![0, -1, 0, 0, 0]));
    assert_eq!(s.positions(), &[0, -1, 0, 0, 0]);
    assert_eq!(s.history().len(), 1);
    assert_eq!(s.clocks(), &clocks());
    // The next round clears the per-round flags.
    s.apply(&round_start(&s, 5, 2));
    assert!(!s.committed(Seat::Two));
    assert_eq!(s.phase(), Phase::Commit);
}

#[test]
fn repeats_are_stale_and_skips_are_gaps() {
    let mut s = GameState::new(info(), None);
    s.apply(&round_start(&s, 1, 1));
    assert_eq!(s.apply(&round_start(&s, 1, 1)), Applied::Stale);
    let gap = result(&s, 4, 1, 5, 2, vec![0, -1, 0, 0, 0]);
    assert_eq!(
        s.apply(&gap),
        Applied::Gap {
            expected: 2,
            got: 4
        }
    );
    // A gap changes nothing.
    assert_eq!(s.seq(), 1);
    assert_eq!(s.positions(), &[0; 5]);
}

#[test]
fn other_games_and_lobby_pushes_are_ignored() {
    let mut s = GameState::new(info(), Some(Seat::Two));
    let mut other = round_start(&s, 1, 1);
    if let ServerMsg::RoundStart { game_id, .. } = &mut other {
        *game_id = GameId::new_random_from([8; 16]);
    }
    assert_eq!(s.apply(&other), Applied::Ignored);
    let push = ServerMsg::QueueStatus {
        players_waiting: 1,
        rating_window: 0.5,
        waited_ms: 10,
    };
    assert_eq!(s.apply(&push), Applied::Ignored);
    assert_eq!(s.seq(), 0);
}

#[test]
fn a_snapshot_replaces_everything_and_keeps_the_seat() {
    let mut s = GameState::new(info(), Some(Seat::Two));
    let mut snap = s.snapshot().clone();
    snap.seq = 9;
    snap.round = 3;
    snap.positions = vec![1, 0, 0, -2, 0];
    let msg = ServerMsg::Snapshot {
        id: None,
        snapshot: snap,
        seat: None,
    };
    assert_eq!(s.apply(&msg), Applied::Applied);
    assert_eq!((s.seq(), s.round(), s.seat()), (9, 3, Some(Seat::Two)));
    assert_eq!(s.positions(), &[1, 0, 0, -2, 0]);
    assert_eq!(s.apply(&round_start(&s, 10, 4)), Applied::Applied);
}

#[test]
fn game_over_then_rating_update() {
    let mut s = GameState::new(info(), Some(Seat::One));
    s.apply(&round_start(&s, 1, 1));
    let over = ServerMsg::GameOver {
        game_id: s.game_id(),
        seq: 2,
        result: GameResult {
            winner: Some(Seat::One),
            reason: EndReason::Resignation,
        },
        rated: true,
        clocks: clocks(),
    };
    s.apply(&over);
    assert!(s.is_over());
    assert_eq!(s.rated_result(), Some(true));
    assert!(s.ratings().is_none());
    let change = |before, after| RatingChange { before, after };
    let update = ServerMsg::RatingUpdate {
        game_id: s.game_id(),
        seq: 3,
        ratings: SeatPair::new(change(1.0, 1.5), change(1.0, 1.0)),
    };
    s.apply(&update);
    assert_eq!(s.ratings().unwrap().one.after, 1.5);
}

#[test]
fn presence_records_the_grace_period() {
    let mut s = GameState::new(info(), Some(Seat::One));
    let away = ServerMsg::Presence {
        game_id: s.game_id(),
        seq: 1,
        seat: Seat::Two,
        connected: false,
        grace_ms: 30_000,
    };
    s.apply(&away);
    assert!(!s.connected(Seat::Two));
    assert_eq!(s.grace_ms(), Some(30_000));
    let back = ServerMsg::Presence {
        game_id: s.game_id(),
        seq: 2,
        seat: Seat::Two,
        connected: true,
        grace_ms: 0,
    };
    s.apply(&back);
    assert!(s.connected(Seat::Two));
    assert_eq!(s.grace_ms(), None);
}

#[test]
fn a_spectator_has_no_view() {
    let s = GameState::new(info(), None);
    assert!(s.view().is_none());
    let p = GameState::new(info(), Some(Seat::One));
    assert_eq!(p.view().unwrap().seat, Seat::One);
}
