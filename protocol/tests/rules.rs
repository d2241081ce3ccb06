//! The rules engine against the seed's own examples and, by property tests, against `RULES.md`
//! for every valid variant.

use elementals_protocol::rules::{
    outcome, Board, Element, Move, Outcome, PlayError, Seat, Variant, VariantError, MAX_DISTANCE,
    MAX_NUMBER,
};
use proptest::prelude::*;

#[test]
fn seed_beats_list_for_five_elements_range_two() {
    let v = Variant::CLASSIC;
    let seed: [(Element, [Element; 2]); 5] = [
        (5, [4, 3]),
        (4, [3, 2]),
        (3, [2, 1]),
        (2, [1, 5]),
        (1, [5, 4]),
    ];
    for (a, beaten) in seed {
        let mut expected = beaten.to_vec();
        expected.sort_unstable();
        let actual: Vec<Element> = v.elements().filter(|&b| v.beats(a, b)).collect();
        assert_eq!(actual, expected, "what {a} beats");
    }
}

#[test]
fn seed_example_game_replayed_move_by_move() {
    let mut board = Board::new(Variant::CLASSIC);
    assert_eq!(board.positions(), &[0; 5]);
    // (player one's pick, player two's pick, element that moves, where it lands)
    let rounds = [
        (5, 2, 2, -1),
        (1, 2, 2, -2),
        (2, 3, 3, -1),
        (3, 2, 3, 0),
        (5, 2, 2, -3),
    ];
    for (i, (one, two, element, to)) in rounds.into_iter().enumerate() {
        assert!(!board.is_over(), "over before round {}", i + 1);
        let from = board.position(element).unwrap();
        let result = board.play(one, two).unwrap();
        let by = if to < from { Seat::Two } else { Seat::One };
        assert_eq!(
            result,
            Outcome {
                winner: Some(by),
                moved: Some(Move {
                    element,
                    by,
                    from,
                    to
                }),
            },
            "round {}",
            i + 1
        );
        assert_eq!(board.position(element), Some(to));
    }
    assert_eq!(board.positions(), &[0, -3, 0, 0, 0]);
    assert_eq!(board.winner(), Some(Seat::Two));
    assert!(board.is_over());
    assert_eq!(board.play(1, 1), Err(PlayError::GameOver));
}

#[test]
fn player_one_wins_at_the_right_edge() {
    let v = Variant::new(3, 1, 2).unwrap();
    let mut board = Board::new(v);
    assert_eq!(outcome(&v, 2, 1), Some(Seat::One));
    board.play(2, 1).unwrap();
    assert!(!board.is_over());
    board.play(2, 1).unwrap();
    assert_eq!(board.winner(), Some(Seat::One));
    assert_eq!(board.positions(), &[0, 2, 0]);
}

#[test]
fn a_tie_moves_nothing() {
    let mut board = Board::new(Variant::CLASSIC);
    let result = board.play(4, 4).unwrap();
    assert_eq!(
        result,
        Outcome {
            winner: None,
            moved: None
        }
    );
    assert_eq!(board, Board::new(Variant::CLASSIC));
    // Range 1 of 5: 5 and 3 are out of range of each other.
    let narrow = Variant::new(5, 1, 3).unwrap();
    assert_eq!(outcome(&narrow, 5, 3), None);
}

#[test]
fn plain_data_round_trips_through_messagepack() {
    let variant = Variant::CLASSIC;
    let bytes = rmp_serde::to_vec_named(&variant).unwrap();
    assert_eq!(rmp_serde::from_slice::<Variant>(&bytes).unwrap(), variant);
    let result = Outcome {
        winner: Some(Seat::One),
        moved: Some(Move {
            element: 3,
            by: Seat::One,
            from: 0,
            to: 1,
        }),
    };
    let bytes = rmp_serde::to_vec_named(&result).unwrap();
    assert_eq!(rmp_serde::from_slice::<Outcome>(&bytes).unwrap(), result);
}

fn valid_variant() -> impl Strategy<Value = Variant> {
    (3..=MAX_NUMBER, 1..=MAX_DISTANCE).prop_flat_map(|(number, distance)| {
        (1..=Variant::max_range(number)).prop_map(move |range| Variant {
            number,
            range,
            distance,
        })
    })
}

/// A valid variant and a sequence of legal picks for it, long enough to finish many games.
fn game() -> impl Strategy<Value = (Variant, Vec<(Element, Element)>)> {
    valid_variant().prop_flat_map(|v| {
        let pick = 1..=v.number;
        (Just(v), prop::collection::vec((pick.clone(), pick), 0..400))
    })
}

/// Small variants picking among a few elements, so that most runs finish a game.
fn short_game() -> impl Strategy<Value = (Variant, Vec<(Element, Element)>)> {
    (3..=7u16, 1..=4u16).prop_flat_map(|(number, distance)| {
        let v = Variant {
            number,
            range: Variant::max_range(number),
            distance,
        };
        let pick = 1..=number.min(4);
        (Just(v), prop::collection::vec((pick.clone(), pick), 0..200))
    })
}

/// Plays `picks` on a fresh board, checking every round against the rules; picks after the end
/// must be refused without changing the board.
fn play_out(v: Variant, picks: Vec<(Element, Element)>) -> Result<(), TestCaseError> {
    let mut board = Board::new(v);
    let edge = v.distance as i16;
    for (one, two) in picks {
        if board.is_over() {
            let before = board.clone();
            prop_assert_eq!(board.play(one, two), Err(PlayError::GameOver));
            prop_assert_eq!(&board, &before);
            continue;
        }
        let before = board.clone();
        let result = board.play(one, two).unwrap();
        prop_assert_eq!(result.winner, outcome(&v, one, two));
        match result.moved {
            None => prop_assert_eq!(&board, &before),
            Some(m) => {
                prop_assert_eq!(Some(m.by), result.winner);
                prop_assert_eq!(m.element, if m.by == Seat::One { one } else { two });
                prop_assert_eq!(m.to - m.from, if m.by == Seat::One { 1 } else { -1 });
                prop_assert_eq!(before.position(m.element), Some(m.from));
                prop_assert_eq!(board.position(m.element), Some(m.to));
                let others_still = v
                    .elements()
                    .filter(|&e| e != m.element)
                    .all(|e| board.position(e) == before.position(e));
                prop_assert!(others_still);
            }
        }
        prop_assert!(board.positions().iter().all(|p| (-edge..=edge).contains(p)));
        let at_right = board.positions().contains(&edge);
        let at_left = board.positions().contains(&-edge);
        prop_assert!(!(at_right && at_left));
        let expected = if at_right {
            Some(Seat::One)
        } else if at_left {
            Some(Seat::Two)
        } else {
            None
        };
        prop_assert_eq!(board.winner(), expected);
        prop_assert_eq!(board.is_over(), expected.is_some());
        // The move that ends the game is the one that reaches the edge.
        if let Some(winner) = expected {
            let m = result.moved.unwrap();
            prop_assert_eq!(m.by, winner);
            prop_assert_eq!(m.to.abs(), edge);
        }
        prop_assert_eq!(
            Board::from_positions(v, board.positions().to_vec()),
            Some(board.clone())
        );
    }
    Ok(())
}

fn distinct_pairs(v: Variant) -> impl Iterator<Item = (Element, Element)> {
    v.elements()
        .flat_map(move |a| v.elements().map(move |b| (a, b)))
        .filter(|(a, b)| a != b)
}

proptest! {
    #[test]
    fn validation_matches_the_documented_bounds(number: u16, range: u16, distance: u16) {
        let ok = (3..=MAX_NUMBER).contains(&number)
            && range >= 1
            && range <= (number - 1) / 2
            && (1..=MAX_DISTANCE).contains(&distance);
        let checked = Variant::new(number, range, distance);
        prop_assert_eq!(checked.is_ok(), ok, "{:?}", checked);
        if let Ok(v) = checked {
            prop_assert_eq!(v, Variant { number, range, distance });
        }
    }

    #[test]
    fn out_of_bounds_variants_are_refused_with_a_reason(
        v in valid_variant(),
        field in 0..3usize,
        over in 1u16..1000,
    ) {
        let mut bad = v;
        let expected = match field {
            0 => {
                bad.number = MAX_NUMBER.saturating_add(over);
                VariantError::NumberTooLarge { number: bad.number, max: MAX_NUMBER }
            }
            1 => {
                let max = Variant::max_range(v.number);
                bad.range = max + over;
                VariantError::RangeTooLarge { range: bad.range, max }
            }
            _ => {
                bad.distance = MAX_DISTANCE + over;
                VariantError::DistanceTooLarge { distance: bad.distance, max: MAX_DISTANCE }
            }
        };
        prop_assert_eq!(bad.validate(), Err(expected));
    }

    #[test]
    fn at_most_one_of_two_different_elements_beats_the_other(v in valid_variant()) {
        for (a, b) in distinct_pairs(v) {
            prop_assert!(!(v.beats(a, b) && v.beats(b, a)), "{} and {} beat each other", a, b);
        }
    }

    #[test]
    fn an_element_ties_with_itself_and_beats_exactly_range_others(v in valid_variant()) {
        for a in v.elements() {
            prop_assert!(!v.beats(a, a));
            prop_assert_eq!(outcome(&v, a, a), None);
            prop_assert_eq!(v.elements().filter(|&b| v.beats(a, b)).count(), usize::from(v.range));
        }
    }

    #[test]
    fn distinct_pairs_tie_exactly_when_range_or_number_leave_a_gap(v in valid_variant()) {
        let full = v.number % 2 == 1 && v.range == Variant::max_range(v.number);
        let ties = distinct_pairs(v).filter(|&(a, b)| outcome(&v, a, b).is_none()).count();
        if full {
            prop_assert_eq!(ties, 0);
        } else {
            prop_assert!(ties > 0);
        }
    }

    #[test]
    fn outcome_agrees_with_beats_and_swaps_with_the_seats(v in valid_variant(), a: u16, b: u16) {
        let (a, b) = (a % v.number + 1, b % v.number + 1);
        let expected = if v.beats(a, b) {
            Some(Seat::One)
        } else if v.beats(b, a) {
            Some(Seat::Two)
        } else {
            None
        };
        prop_assert_eq!(outcome(&v, a, b), expected);
        prop_assert_eq!(outcome(&v, b, a), expected.map(Seat::other));
    }

    #[test]
    fn games_stay_on_the_track_and_end_exactly_at_an_edge((v, picks) in game()) {
        play_out(v, picks)?;
    }

    #[test]
    fn short_games_reach_an_edge_and_then_refuse_play((v, picks) in short_game()) {
        play_out(v, picks)?;
    }

    #[test]
    fn a_run_of_wins_ends_the_game_after_distance_rounds(v in valid_variant(), e: u16, seat in prop_oneof![Just(Seat::One), Just(Seat::Two)]) {
        let strong = e % v.number + 1;
        let weak = if strong == 1 { v.number } else { strong - 1 };
        prop_assert!(v.beats(strong, weak));
        let (one, two) = if seat == Seat::One { (strong, weak) } else { (weak, strong) };
        let mut board = Board::new(v);
        for _ in 0..v.distance {
            prop_assert!(!board.is_over());
            prop_assert_eq!(board.play(one, two).unwrap().winner, Some(seat));
        }
        prop_assert_eq!(board.winner(), Some(seat));
        prop_assert_eq!(board.play(one, two), Err(PlayError::GameOver));
    }

    #[test]
    fn invalid_picks_are_refused_for_either_seat(v in valid_variant(), bad in any::<u16>(), good: u16) {
        let good = good % v.number + 1;
        prop_assume!(!v.is_element(bad));
        let mut board = Board::new(v);
        prop_assert_eq!(board.play(bad, good), Err(PlayError::InvalidPick { seat: Seat::One, pick: bad }));
        prop_assert_eq!(board.play(good, bad), Err(PlayError::InvalidPick { seat: Seat::Two, pick: bad }));
        prop_assert_eq!(board, Board::new(v));
    }
}
