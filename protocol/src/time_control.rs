//! Time controls: the clock settings of a game, their bounds and the named presets.

use serde::{Deserialize, Serialize};

/// How a game's clocks run. All durations in milliseconds.
///
/// Each player has a bank of `initial_ms`; the bank runs only while that player's commit
/// or reveal is outstanding; `increment_ms` is added after each resolved round. Once both
/// players have committed, each has at most `reveal_ms` (and no more than the bank) to
/// reveal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimeControl {
    pub initial_ms: u64,
    pub increment_ms: u64,
    pub reveal_ms: u64,
}

/// Bounds a server enforces on custom time controls.
pub const MIN_INITIAL_MS: u64 = 10_000;
pub const MAX_INITIAL_MS: u64 = 2 * 60 * 60 * 1000;
pub const MAX_INCREMENT_MS: u64 = 60_000;
pub const MIN_REVEAL_MS: u64 = 2_000;
pub const MAX_REVEAL_MS: u64 = 120_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeControlError {
    #[error("initial_ms must be between {MIN_INITIAL_MS} and {MAX_INITIAL_MS}")]
    Initial,
    #[error("increment_ms must be at most {MAX_INCREMENT_MS}")]
    Increment,
    #[error("reveal_ms must be between {MIN_REVEAL_MS} and {MAX_REVEAL_MS}")]
    Reveal,
    #[error("unknown time control preset {0:?}")]
    UnknownPreset(String),
}

impl TimeControl {
    /// 3 minutes + 2 s per round; 15 s to reveal.
    pub const BLITZ: TimeControl = TimeControl {
        initial_ms: 3 * 60_000,
        increment_ms: 2_000,
        reveal_ms: 15_000,
    };
    /// 10 minutes + 5 s per round; 30 s to reveal.
    pub const RAPID: TimeControl = TimeControl {
        initial_ms: 10 * 60_000,
        increment_ms: 5_000,
        reveal_ms: 30_000,
    };
    /// The live match of about 45 minutes: 20 minutes each + 10 s per round; 60 s to reveal.
    pub const LIVE: TimeControl = TimeControl {
        initial_ms: 20 * 60_000,
        increment_ms: 10_000,
        reveal_ms: 60_000,
    };

    /// The named presets, in the order clients should list them.
    pub const PRESETS: [(&'static str, TimeControl); 3] = [
        ("blitz", TimeControl::BLITZ),
        ("rapid", TimeControl::RAPID),
        ("live", TimeControl::LIVE),
    ];

    pub fn preset(name: &str) -> Result<TimeControl, TimeControlError> {
        Self::PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, tc)| *tc)
            .ok_or_else(|| TimeControlError::UnknownPreset(name.to_owned()))
    }

    pub fn validate(&self) -> Result<(), TimeControlError> {
        if !(MIN_INITIAL_MS..=MAX_INITIAL_MS).contains(&self.initial_ms) {
            return Err(TimeControlError::Initial);
        }
        if self.increment_ms > MAX_INCREMENT_MS {
            return Err(TimeControlError::Increment);
        }
        if !(MIN_REVEAL_MS..=MAX_REVEAL_MS).contains(&self.reveal_ms) {
            return Err(TimeControlError::Reveal);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_live_is_about_45_minutes() {
        for (name, tc) in TimeControl::PRESETS {
            tc.validate().unwrap();
            assert_eq!(TimeControl::preset(name).unwrap(), tc);
        }
        let live = TimeControl::LIVE.initial_ms * 2;
        assert!((40 * 60_000..=50 * 60_000).contains(&live));
    }

    #[test]
    fn out_of_bounds_rejected() {
        let mut tc = TimeControl::BLITZ;
        tc.initial_ms = 1;
        assert_eq!(tc.validate(), Err(TimeControlError::Initial));
        let mut tc = TimeControl::BLITZ;
        tc.increment_ms = MAX_INCREMENT_MS + 1;
        assert_eq!(tc.validate(), Err(TimeControlError::Increment));
        let mut tc = TimeControl::BLITZ;
        tc.reveal_ms = 0;
        assert_eq!(tc.validate(), Err(TimeControlError::Reveal));
        assert!(TimeControl::preset("bullet").is_err());
    }
}
