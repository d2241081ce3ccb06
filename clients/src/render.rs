//! Plain-text pictures of a game for terminals: the board as one track per element,
//! the clocks, a resolved round and the result.
//!
//! The track runs from `-D` on the left (player one's edge, where player two wins) to
//! `+D` on the right (where player one wins), as in RULES.md.

use std::fmt::Write;

use elementals_protocol::messages::{Clocks, EndReason, GameInfo, GameResult, RoundRecord};
use elementals_protocol::{Seat, Variant};

use crate::state::GameState;

/// The board: a header of squares, then one line per element.
///
/// ```text
///      two wins           one wins
///        -3 -2 -1  0 +1 +2 +3
///    1    .  .  .  o  .  .  .     0
///    2    .  o  .  :  .  .  .    -2
/// ```
pub fn board(variant: Variant, positions: &[i16]) -> String {
    let d = i32::from(variant.distance);
    let width = (2 * d + 1) as usize * 3;
    let mut out = String::new();
    let _ = writeln!(out, "     {:<w$}", "two wins", w = width.saturating_sub(8));
    let _ = writeln!(out, "{:>w$}", "one wins", w = width + 5);
    out.push_str("     ");
    for square in -d..=d {
        let _ = write!(out, "{:>3}", signed(square));
    }
    out.push('\n');
    for element in variant.elements() {
        let at = positions
            .get(usize::from(element) - 1)
            .map_or(0, |&p| i32::from(p));
        let _ = write!(out, "{element:>4} ");
        for square in -d..=d {
            let mark = match (square == at, square.abs() == d, square == 0) {
                (true, true, _) => '#',
                (true, false, _) => 'o',
                (false, _, true) => ':',
                (false, _, false) => '.',
            };
            let _ = write!(out, "  {mark}");
        }
        let _ = writeln!(out, "  {:>4}", signed(at));
    }
    out
}

fn signed(n: i32) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

/// `m:ss` (or `h:mm:ss`, or `Nd h:mm:ss` for a correspondence deadline days away) from
/// milliseconds, rounded down.
pub fn clock(ms: u64) -> String {
    let seconds = ms / 1000;
    let (d, h, m, s) = (
        seconds / 86_400,
        (seconds / 3600) % 24,
        (seconds / 60) % 60,
        seconds % 60,
    );
    if d > 0 {
        format!("{d}d {h}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Who sits where with their ratings and banks; `*` marks a running clock.
pub fn players_line(game: &GameInfo, clocks: &Clocks) -> String {
    let side = |seat: Seat, ms: u64| {
        let p = game.players.get(seat);
        let running = if *clocks.running.get(seat) { "*" } else { "" };
        format!(
            "{} {} ({:.3}) {}{}",
            seat_name(seat),
            p.name,
            p.rating,
            clock(ms),
            running
        )
    };
    format!(
        "{}   vs   {}",
        side(Seat::One, clocks.one_ms),
        side(Seat::Two, clocks.two_ms)
    )
}

/// `one` or `two`.
pub fn seat_name(seat: Seat) -> &'static str {
    match seat {
        Seat::One => "one",
        Seat::Two => "two",
    }
}

/// One resolved round: both picks and what moved.
pub fn round_line(record: &RoundRecord) -> String {
    let picks = format!(
        "round {}: one picked {}, two picked {}",
        record.round, record.picks.one, record.picks.two
    );
    match (record.outcome.winner, record.outcome.moved) {
        (Some(winner), Some(m)) => format!(
            "{picks} -> {} wins the round, {} moves {} to {}",
            seat_name(winner),
            m.element,
            signed(i32::from(m.from)),
            signed(i32::from(m.to))
        ),
        (Some(winner), None) => format!("{picks} -> {} wins the round", seat_name(winner)),
        (None, _) => format!("{picks} -> tie, nothing moves"),
    }
}

/// The result in words, with names.
pub fn result_line(game: &GameInfo, result: &GameResult) -> String {
    let reason = match result.reason {
        EndReason::Edge => "an element reached the edge",
        EndReason::Time => "on time",
        EndReason::NoReveal => "the opponent did not reveal",
        EndReason::Resignation => "by resignation",
        EndReason::Abandoned => "the opponent abandoned the game",
        EndReason::DrawAgreed => "draw agreed",
        EndReason::Aborted => "aborted before the first commit",
        EndReason::ServerAborted => "aborted by the server",
        EndReason::MaxRounds => "the round limit was reached",
    };
    match result.winner {
        Some(seat) => format!(
            "{} ({}) wins: {reason}",
            game.players.get(seat).name,
            seat_name(seat)
        ),
        None => format!("no winner: {reason}"),
    }
}

/// Everything a spectator or player needs at a glance.
pub fn game(state: &GameState) -> String {
    let info = state.info();
    let mut out = format!(
        "game {}  variant {}/{}/{}{}  round {}  spectators {}\n",
        info.game_id,
        info.variant.number,
        info.variant.range,
        info.variant.distance,
        if info.rated { "  rated" } else { "" },
        state.round(),
        state.spectators()
    );
    out.push_str(&players_line(info, state.clocks()));
    out.push('\n');
    out.push_str(&board(info.variant, state.positions()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_marks_each_element_on_its_track() {
        let text = board(Variant::CLASSIC, &[0, -2, 3, 0, 1]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3 + 5);
        assert_eq!(lines[2].trim(), "-3 -2 -1  0 +1 +2 +3");
        assert_eq!(lines[3].trim(), "1   .  .  .  o  .  .  .     0");
        assert_eq!(lines[4].trim(), "2   .  o  .  :  .  .  .    -2");
        // An element on an edge is drawn as `#`.
        assert_eq!(lines[5].trim(), "3   .  .  .  :  .  .  #    +3");
        assert_eq!(lines[7].trim(), "5   .  .  .  :  o  .  .    +1");
    }

    #[test]
    fn clocks_read_as_minutes_and_seconds() {
        assert_eq!(clock(0), "0:00");
        assert_eq!(clock(59_999), "0:59");
        assert_eq!(clock(180_000), "3:00");
        assert_eq!(clock(3_723_000), "1:02:03");
        assert_eq!(clock(3 * 86_400_000 + 3_723_000), "3d 1:02:03");
    }
}
