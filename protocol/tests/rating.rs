//! The rating formula against the FAQ's table and worked example, and its invariants.

use elementals_protocol::rating::{
    expected_gain, rate_win, RatingChange, INITIAL_RATING, RATING_FLOOR,
};
use proptest::prelude::*;

#[test]
fn faq_table_to_two_decimals() {
    let table = [
        (3.0, "0.05"),
        (2.0, "0.12"),
        (1.0, "0.27"),
        (0.0, "0.50"),
        (-1.0, "0.73"),
        (-2.0, "0.88"),
        (-3.0, "0.95"),
    ];
    for (diff, adjustment) in table {
        assert_eq!(
            format!("{:.2}", expected_gain(diff)),
            adjustment,
            "D = {diff}"
        );
    }
}

#[test]
fn faq_example_both_at_one_point_three() {
    let (winner, loser) = rate_win(1.3, 1.3);
    assert!((winner.after - 1.8).abs() < 1e-12, "{winner:?}");
    assert_eq!(winner.before, 1.3);
    // 1.3 - 0.5 = 0.8 is raised to the floor.
    assert_eq!(
        loser,
        RatingChange {
            before: 1.3,
            after: 1.0
        }
    );
}

#[test]
fn a_loser_above_the_floor_loses_what_the_winner_gains() {
    let (winner, loser) = rate_win(2.0, 3.0);
    let gain = expected_gain(-1.0);
    assert_eq!(winner.after, 2.0 + gain);
    assert_eq!(loser.after, 3.0 - gain);
}

#[test]
fn a_loser_on_the_floor_stays_there() {
    let (winner, loser) = rate_win(5.0, RATING_FLOOR);
    assert!(winner.after > 5.0);
    assert_eq!(loser.after, RATING_FLOOR);
    assert_eq!(INITIAL_RATING, RATING_FLOOR);
}

#[test]
fn huge_differences_are_finite() {
    let extremes = [
        1e3,
        -1e3,
        1e308,
        -1e308,
        f64::MAX,
        f64::MIN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    for diff in extremes {
        let a = expected_gain(diff);
        assert!((0.0..=1.0).contains(&a), "D = {diff}: {a}");
    }
    assert_eq!(expected_gain(f64::INFINITY), 0.0);
    assert_eq!(expected_gain(f64::NEG_INFINITY), 1.0);
    // Far past where e^D overflows, the tail is still there rather than rounded to zero.
    assert!(expected_gain(700.0) > 0.0);
    let (winner, loser) = rate_win(1e300, 1.0);
    assert_eq!((winner.after, loser.after), (1e300, 1.0));
    let (winner, loser) = rate_win(1.0, 1e300);
    assert_eq!((winner.after, loser.after), (2.0, 1e300 - 1.0));
}

fn rating() -> impl Strategy<Value = f64> {
    RATING_FLOOR..1e6
}

proptest! {
    #[test]
    fn no_one_falls_below_the_floor(w in rating(), l in rating()) {
        let (winner, loser) = rate_win(w, l);
        prop_assert!(winner.after >= RATING_FLOOR);
        prop_assert!(loser.after >= RATING_FLOOR);
        prop_assert!(winner.after >= winner.before);
        prop_assert!(loser.after <= loser.before);
        prop_assert!(!winner.after.is_nan() && !loser.after.is_nan());
    }

    #[test]
    fn gains_equal_losses_above_the_floor(w in rating(), l in rating()) {
        let gain = expected_gain(w - l);
        prop_assume!(l - gain >= RATING_FLOOR);
        let (winner, loser) = rate_win(w, l);
        let won = winner.after - winner.before;
        let lost = loser.before - loser.after;
        // Both are `gain` up to the rounding of adding it to ratings of different sizes.
        let tolerance = 1e-15 * w.max(l) * 4.0;
        prop_assert!((won - lost).abs() <= tolerance, "won {} lost {}", won, lost);
    }

    #[test]
    fn the_adjustment_is_a_probability_falling_with_the_difference(d in -1e6f64..1e6, e in 0f64..10.0) {
        let a = expected_gain(d);
        prop_assert!((0.0..=1.0).contains(&a));
        prop_assert!(expected_gain(d + e) <= a);
        prop_assert!((a + expected_gain(-d) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn any_finite_difference_gives_a_number(d in any::<f64>().prop_filter("finite", |d| d.is_finite())) {
        let a = expected_gain(d);
        prop_assert!((0.0..=1.0).contains(&a), "D = {}: {}", d, a);
    }
}
