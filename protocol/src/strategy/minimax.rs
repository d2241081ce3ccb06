//! Mixed-strategy equilibria of small zero-sum matrix games, by regret matching.
//!
//! Both players repeatedly play the strategy proportional to their positive accumulated
//! regrets (regret matching+, which clamps regrets at zero and weights later iterations
//! more); the averages of those strategies converge to an equilibrium. No LP solver is
//! needed for matrices of at most 99×99, and the result is deterministic.

/// Work budget: iterations × cells (each visited twice). A 99-element game gets 100
/// iterations (milliseconds of CPU), a 5-element game the full 1,000.
const CELL_BUDGET: usize = 1_000_000;
const MIN_ITERATIONS: usize = 100;
const MAX_ITERATIONS: usize = 1_000;

/// An approximate equilibrium of a zero-sum game.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The maximising row player's mixed strategy.
    pub row: Vec<f64>,
    /// The minimising column player's mixed strategy.
    pub col: Vec<f64>,
    /// What `row` guarantees against any column: a lower bound on the game's value.
    pub lower: f64,
    /// What `col` concedes against any row: an upper bound on the game's value.
    pub upper: f64,
}

/// Solve the game where the row player gets `payoff[r][c]` from the column player.
/// `payoff` must be non-empty and rectangular.
pub fn solve(payoff: &[Vec<f64>]) -> Solution {
    let rows = payoff.len();
    let cols = payoff.first().map_or(0, Vec::len);
    assert!(rows > 0 && cols > 0, "an empty game has no solution");
    let iterations = (CELL_BUDGET / (rows * cols)).clamp(MIN_ITERATIONS, MAX_ITERATIONS);

    let mut row_regret = vec![0.0; rows];
    let mut col_regret = vec![0.0; cols];
    let mut row_sum = vec![0.0; rows];
    let mut col_sum = vec![0.0; cols];
    let mut row = vec![1.0 / rows as f64; rows];
    let mut col = vec![1.0 / cols as f64; cols];
    let mut gains = vec![0.0; rows];
    let mut losses = vec![0.0; cols];
    // Alternating updates (the row player answers the column's current strategy, then
    // the column answers the row's new one) converge much faster than simultaneous ones.
    for t in 1..=iterations {
        for (gain, line) in gains.iter_mut().zip(payoff) {
            *gain = dot(line, &col);
        }
        let value = dot(&gains, &row);
        for (regret, gain) in row_regret.iter_mut().zip(&gains) {
            *regret = (*regret + gain - value).max(0.0);
        }
        regret_matching(&row_regret, &mut row);

        for (c, loss) in losses.iter_mut().enumerate() {
            *loss = payoff.iter().zip(&row).map(|(line, p)| line[c] * p).sum();
        }
        let value = dot(&losses, &col);
        // The column player minimises: its regret for `c` is how much less it would lose.
        for (regret, loss) in col_regret.iter_mut().zip(&losses) {
            *regret = (*regret + value - loss).max(0.0);
        }
        regret_matching(&col_regret, &mut col);

        // Linear averaging: later, better strategies count more.
        let weight = t as f64;
        for (sum, p) in row_sum.iter_mut().zip(&row) {
            *sum += weight * p;
        }
        for (sum, p) in col_sum.iter_mut().zip(&col) {
            *sum += weight * p;
        }
    }
    let row = normalised(row_sum);
    let col = normalised(col_sum);
    let lower = (0..cols)
        .map(|c| (0..rows).map(|r| payoff[r][c] * row[r]).sum::<f64>())
        .fold(f64::INFINITY, f64::min);
    let upper = payoff
        .iter()
        .map(|line| dot(line, &col))
        .fold(f64::NEG_INFINITY, f64::max);
    Solution {
        row,
        col,
        lower,
        upper,
    }
}

/// The strategy proportional to positive regrets, uniform when there are none.
fn regret_matching(regret: &[f64], strategy: &mut [f64]) {
    let total: f64 = regret.iter().sum();
    for (p, r) in strategy.iter_mut().zip(regret) {
        *p = if total > 0.0 {
            r / total
        } else {
            1.0 / regret.len() as f64
        };
    }
}

fn normalised(weights: Vec<f64>) -> Vec<f64> {
    let total: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / total).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(a: f64, b: f64, tolerance: f64) {
        assert!(
            (a - b).abs() <= tolerance,
            "{a} is not within {tolerance} of {b}"
        );
    }

    #[test]
    fn rock_paper_scissors_is_uniform_with_value_zero() {
        let rps = vec![
            vec![0.0, -1.0, 1.0],
            vec![1.0, 0.0, -1.0],
            vec![-1.0, 1.0, 0.0],
        ];
        let s = solve(&rps);
        for p in s.row.iter().chain(&s.col) {
            assert_close(*p, 1.0 / 3.0, 0.01);
        }
        assert!(s.lower <= 0.0 + 1e-9 && s.upper >= -1e-9);
        assert!(s.upper - s.lower < 0.02);
    }

    #[test]
    fn a_dominant_row_is_played_purely() {
        let game = vec![vec![3.0, 2.0], vec![1.0, 0.0]];
        let s = solve(&game);
        assert!(s.row[0] > 0.99, "{:?}", s.row);
        assert!(s.col[1] > 0.99, "{:?}", s.col);
        assert_close(s.lower, 2.0, 0.02);
    }

    #[test]
    fn matching_pennies_with_unequal_stakes() {
        // Row wins 3 on (H,H), 1 on (T,T), loses 2 otherwise: row plays H with p where
        // 3p - 2(1-p) = -2p + (1-p), so p = 3/8; the value is -1/8.
        let game = vec![vec![3.0, -2.0], vec![-2.0, 1.0]];
        let s = solve(&game);
        assert_close(s.row[0], 3.0 / 8.0, 0.01);
        assert_close(s.lower, -1.0 / 8.0, 0.02);
        assert_close(s.upper, -1.0 / 8.0, 0.02);
    }
}
