//! Time controls: the clock settings of a game, their bounds and the named presets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a game's clocks run. All durations in milliseconds.
///
/// A live control (`per_phase_ms` absent): each player has a bank of `initial_ms`; the bank
/// runs only while that player's commit or reveal is outstanding; `increment_ms` is added
/// after each resolved round. Once both players have committed, each has at most
/// `reveal_ms` (and no more than the bank) to reveal.
///
/// A correspondence control (`per_phase_ms` present, the three live fields 0): no bank;
/// each phase (a round's commit, then its reveal) must be done within `per_phase_ms` of the
/// phase's start, and whoever still owes it then loses on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct TimeControl {
    pub initial_ms: u64,
    pub increment_ms: u64,
    pub reveal_ms: u64,
    /// Left out for a live control, so its bytes (and every record and transcript that
    /// holds one) are what they were before correspondence existed; last, so that the
    /// MessagePack array form of stored records still reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_phase_ms: Option<u64>,
}

/// Bounds a server enforces on custom time controls.
pub const MIN_INITIAL_MS: u64 = 10_000;
pub const MAX_INITIAL_MS: u64 = 2 * 60 * 60 * 1000;
pub const MAX_INCREMENT_MS: u64 = 60_000;
pub const MIN_REVEAL_MS: u64 = 2_000;
pub const MAX_REVEAL_MS: u64 = 120_000;
/// Bounds on a correspondence control's time per phase: an hour to two weeks.
pub const MIN_PER_PHASE_MS: u64 = 60 * 60 * 1000;
pub const MAX_PER_PHASE_MS: u64 = 14 * DAY_MS;

const DAY_MS: u64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeControlError {
    #[error("initial_ms must be between {MIN_INITIAL_MS} and {MAX_INITIAL_MS}")]
    Initial,
    #[error("increment_ms must be at most {MAX_INCREMENT_MS}")]
    Increment,
    #[error("reveal_ms must be between {MIN_REVEAL_MS} and {MAX_REVEAL_MS}")]
    Reveal,
    #[error("per_phase_ms must be between {MIN_PER_PHASE_MS} and {MAX_PER_PHASE_MS}")]
    PerPhase,
    #[error(
        "a correspondence control (per_phase_ms) has initial_ms, increment_ms and reveal_ms 0"
    )]
    Mixed,
    #[error("unknown time control preset {0:?}")]
    UnknownPreset(String),
}

impl TimeControl {
    /// 3 minutes + 2 s per round; 15 s to reveal.
    pub const BLITZ: TimeControl = TimeControl {
        initial_ms: 3 * 60_000,
        increment_ms: 2_000,
        reveal_ms: 15_000,
        per_phase_ms: None,
    };
    /// 10 minutes + 5 s per round; 30 s to reveal.
    pub const RAPID: TimeControl = TimeControl {
        initial_ms: 10 * 60_000,
        increment_ms: 5_000,
        reveal_ms: 30_000,
        per_phase_ms: None,
    };
    /// The live match of about 45 minutes: 20 minutes each + 10 s per round; 60 s to reveal.
    pub const LIVE: TimeControl = TimeControl {
        initial_ms: 20 * 60_000,
        increment_ms: 10_000,
        reveal_ms: 60_000,
        per_phase_ms: None,
    };
    /// Correspondence: a day for each phase, so a round takes at most two days.
    pub const CORR_1D: TimeControl = TimeControl::correspondence(DAY_MS);
    /// Correspondence: three days for each phase.
    pub const CORR_3D: TimeControl = TimeControl::correspondence(3 * DAY_MS);
    /// Correspondence: a week for each phase.
    pub const CORR_7D: TimeControl = TimeControl::correspondence(7 * DAY_MS);

    /// The named presets, in the order clients should list them: live, then correspondence.
    pub const PRESETS: [(&'static str, TimeControl); 6] = [
        ("blitz", TimeControl::BLITZ),
        ("rapid", TimeControl::RAPID),
        ("live", TimeControl::LIVE),
        ("corr-1d", TimeControl::CORR_1D),
        ("corr-3d", TimeControl::CORR_3D),
        ("corr-7d", TimeControl::CORR_7D),
    ];

    /// A correspondence control of `per_phase_ms` for each phase (not yet validated).
    pub const fn correspondence(per_phase_ms: u64) -> TimeControl {
        TimeControl {
            initial_ms: 0,
            increment_ms: 0,
            reveal_ms: 0,
            per_phase_ms: Some(per_phase_ms),
        }
    }

    /// Whether each phase has a deadline of its own instead of the players having banks.
    pub fn is_correspondence(&self) -> bool {
        self.per_phase_ms.is_some()
    }

    pub fn preset(name: &str) -> Result<TimeControl, TimeControlError> {
        Self::PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, tc)| *tc)
            .ok_or_else(|| TimeControlError::UnknownPreset(name.to_owned()))
    }

    pub fn validate(&self) -> Result<(), TimeControlError> {
        if let Some(per_phase_ms) = self.per_phase_ms {
            if !(MIN_PER_PHASE_MS..=MAX_PER_PHASE_MS).contains(&per_phase_ms) {
                return Err(TimeControlError::PerPhase);
            }
            if (self.initial_ms, self.increment_ms, self.reveal_ms) != (0, 0, 0) {
                return Err(TimeControlError::Mixed);
            }
            return Ok(());
        }
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

    #[test]
    fn correspondence_presets_give_each_phase_days() {
        let days = |name| TimeControl::preset(name).unwrap().per_phase_ms.unwrap() / DAY_MS;
        assert_eq!(
            (days("corr-1d"), days("corr-3d"), days("corr-7d")),
            (1, 3, 7)
        );
        for (name, tc) in TimeControl::PRESETS {
            assert_eq!(tc.is_correspondence(), name.starts_with("corr-"), "{name}");
        }
    }

    #[test]
    fn correspondence_bounds_and_no_bank_beside_a_deadline() {
        let ok = |ms| TimeControl::correspondence(ms).validate();
        assert_eq!(ok(MIN_PER_PHASE_MS), Ok(()));
        assert_eq!(ok(MAX_PER_PHASE_MS), Ok(()));
        assert_eq!(ok(MIN_PER_PHASE_MS - 1), Err(TimeControlError::PerPhase));
        assert_eq!(ok(MAX_PER_PHASE_MS + 1), Err(TimeControlError::PerPhase));
        assert_eq!(ok(0), Err(TimeControlError::PerPhase));
        for mixed in [
            TimeControl {
                initial_ms: 60_000,
                ..TimeControl::CORR_1D
            },
            TimeControl {
                increment_ms: 1,
                ..TimeControl::CORR_1D
            },
            TimeControl {
                reveal_ms: 15_000,
                ..TimeControl::CORR_1D
            },
            TimeControl {
                per_phase_ms: Some(DAY_MS),
                ..TimeControl::BLITZ
            },
        ] {
            assert_eq!(mixed.validate(), Err(TimeControlError::Mixed), "{mixed:?}");
        }
    }

    /// A live control's bytes are the three fields alone, as before correspondence, in both
    /// MessagePack forms and in JSON; a correspondence control adds `per_phase_ms` last.
    #[test]
    fn live_controls_keep_their_bytes() {
        let named = |tc: &TimeControl| {
            let mut bytes = Vec::new();
            rmp_serde::encode::write_named(&mut bytes, tc).unwrap();
            bytes
        };
        #[derive(Serialize)]
        struct Before {
            initial_ms: u64,
            increment_ms: u64,
            reveal_ms: u64,
        }
        let before = Before {
            initial_ms: 180_000,
            increment_ms: 2_000,
            reveal_ms: 15_000,
        };
        let mut expected = Vec::new();
        rmp_serde::encode::write_named(&mut expected, &before).unwrap();
        assert_eq!(named(&TimeControl::BLITZ), expected);
        assert_eq!(
            rmp_serde::to_vec(&TimeControl::BLITZ).unwrap(),
            rmp_serde::to_vec(&before).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&TimeControl::BLITZ).unwrap(),
            r#"{"initial_ms":180000,"increment_ms":2000,"reveal_ms":15000}"#
        );
        // The old array form reads as a live control.
        let old = rmp_serde::to_vec(&before).unwrap();
        assert_eq!(
            rmp_serde::from_slice::<TimeControl>(&old).unwrap(),
            TimeControl::BLITZ
        );
        let tc = TimeControl::CORR_3D;
        assert_eq!(
            rmp_serde::from_slice::<TimeControl>(&named(&tc)).unwrap(),
            tc
        );
        let array = rmp_serde::to_vec(&tc).unwrap();
        assert_eq!(rmp_serde::from_slice::<TimeControl>(&array).unwrap(), tc);
        assert_eq!(
            serde_json::to_string(&TimeControl::CORR_1D).unwrap(),
            r#"{"initial_ms":0,"increment_ms":0,"reveal_ms":0,"per_phase_ms":86400000}"#
        );
    }
}
