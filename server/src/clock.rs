//! Wall-clock helpers. Game timing uses `tokio::time::Instant` (pausable in tests);
//! wall-clock time is only for records and expiry stamps.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
