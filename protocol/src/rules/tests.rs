//! Unit tests of the rules engine; the property tests live in `tests/rules.rs`.

use super::*;

#[test]
fn classic_is_valid_and_at_max_range() {
    assert_eq!(Variant::CLASSIC.validate(), Ok(()));
    assert_eq!(Variant::max_range(5), Variant::CLASSIC.range);
    assert_eq!(Variant::new(5, 2, 3), Ok(Variant::CLASSIC));
}

#[test]
fn max_range_follows_the_seed_formula() {
    let cases = [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (5, 2),
        (7, 3),
        (8, 3),
        (99, 49),
    ];
    for (number, max) in cases {
        assert_eq!(Variant::max_range(number), max, "number {number}");
    }
}

#[test]
fn validation_names_the_first_broken_bound() {
    use VariantError::*;
    let max = MAX_NUMBER;
    assert_eq!(Variant::new(2, 1, 3), Err(NumberTooSmall { number: 2 }));
    assert_eq!(
        Variant::new(max + 1, 1, 3),
        Err(NumberTooLarge {
            number: max + 1,
            max
        })
    );
    assert_eq!(Variant::new(5, 0, 3), Err(RangeTooSmall));
    assert_eq!(
        Variant::new(5, 3, 3),
        Err(RangeTooLarge { range: 3, max: 2 })
    );
    assert_eq!(Variant::new(5, 2, 0), Err(DistanceTooSmall));
    assert_eq!(
        Variant::new(5, 2, MAX_DISTANCE + 1),
        Err(DistanceTooLarge {
            distance: MAX_DISTANCE + 1,
            max: MAX_DISTANCE
        })
    );
    assert!(Variant::new(MAX_NUMBER, 49, MAX_DISTANCE).is_ok());
}

#[test]
fn error_messages_are_readable() {
    let err = Variant::new(5, 3, 3).unwrap_err();
    assert_eq!(
        err.to_string(),
        "range must be at most 2 for this number, got 3"
    );
    let err = PlayError::InvalidPick {
        seat: Seat::Two,
        pick: 9,
    };
    assert_eq!(
        err.to_string(),
        "player 2 picked 9, which is not an element of this game"
    );
}

#[test]
fn beats_refuses_non_elements_without_panicking() {
    let v = Variant::CLASSIC;
    assert!(!v.beats(0, 1));
    assert!(!v.beats(1, 6));
    assert!(!v.beats(u16::MAX, 1));
    let broken = Variant {
        number: 0,
        range: 0,
        distance: 0,
    };
    assert!(!broken.beats(0, 0));
    assert_eq!(broken.elements().count(), 0);
}

#[test]
fn seats_number_and_index() {
    assert_eq!(Seat::BOTH.map(Seat::index), [0, 1]);
    assert_eq!(Seat::BOTH.map(Seat::number), [1, 2]);
    assert_eq!(Seat::One.other(), Seat::Two);
    assert_eq!(Seat::Two.other(), Seat::One);
}

#[test]
fn invalid_picks_are_refused_and_change_nothing() {
    let mut board = Board::new(Variant::CLASSIC);
    assert_eq!(
        board.play(0, 2),
        Err(PlayError::InvalidPick {
            seat: Seat::One,
            pick: 0
        })
    );
    assert_eq!(
        board.play(1, 6),
        Err(PlayError::InvalidPick {
            seat: Seat::Two,
            pick: 6
        })
    );
    assert_eq!(board, Board::new(Variant::CLASSIC));
}

#[test]
fn from_positions_checks_shape_and_track() {
    let v = Variant::CLASSIC;
    assert!(Board::from_positions(v, vec![0; 4]).is_none());
    assert!(Board::from_positions(v, vec![0, 0, 4, 0, 0]).is_none());
    assert!(Board::from_positions(v, vec![3, 0, 0, 0, -3]).is_none());
    let bad = Variant { range: 3, ..v };
    assert!(Board::from_positions(bad, vec![0; 5]).is_none());
    let board = Board::from_positions(v, vec![-2, 1, 0, 0, 3]).unwrap();
    assert_eq!(board.position(5), Some(3));
    assert_eq!(board.position(6), None);
    assert_eq!(board.winner(), Some(Seat::One));
}

#[test]
fn seat_serializes_lowercase() {
    let bytes = rmp_serde::to_vec(&Seat::Two).unwrap();
    assert_eq!(rmp_serde::from_slice::<String>(&bytes).unwrap(), "two");
}
