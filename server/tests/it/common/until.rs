//! `until`: how a test waits for what nothing tells it of (another process's state, a row
//! in the database, a gauge catching up with a connection that ended). It looks, and
//! looks again every `POLL`, until the look holds or the deadline passes, and then fails
//! saying what it waited for and what it saw last. Every poll in these tests goes through
//! it; the named waits (`until_metric`, `Node::until_listed`, …) only say what to look at.

use std::fmt::{Debug, Display};
use std::time::Duration;

use tokio::time::Instant;

/// Between two looks, unless the caller says otherwise.
pub const POLL: Duration = Duration::from_millis(25);

/// When a wait gives up: a time from now, or an instant fixed earlier (the kill a
/// failover's bound runs from).
pub trait Deadline {
    fn instant(self) -> Instant;
}

impl Deadline for Duration {
    fn instant(self) -> Instant {
        Instant::now() + self
    }
}

impl Deadline for Instant {
    fn instant(self) -> Instant {
        self
    }
}

/// What one look answers: a `bool`; an `Option`, whose value `until` returns; or a
/// `Result` whose error says what the look saw instead, which a failed wait shows.
pub trait Look {
    type Output;
    fn held(self) -> Result<Self::Output, String>;
}

impl Look for bool {
    type Output = ();
    fn held(self) -> Result<(), String> {
        self.then_some(()).ok_or_else(String::new)
    }
}

impl<T> Look for Option<T> {
    type Output = T;
    fn held(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T> Look for Result<T, String> {
    type Output = T;
    fn held(self) -> Result<T, String> {
        self
    }
}

/// A look that holds when `now` is `expected`; otherwise it says what `now` is.
pub fn equal<T: PartialEq + Debug>(now: T, expected: T) -> Result<(), String> {
    if now == expected {
        Ok(())
    } else {
        Err(format!("{now:?}, not {expected:?}"))
    }
}

/// Looks with `look` every `POLL` until it holds, and returns what it held with; panics
/// with `what` (and what the last look saw) once `by` has passed.
pub async fn until<L: Look>(
    what: impl Display,
    by: impl Deadline,
    look: impl AsyncFnMut() -> L,
) -> L::Output {
    until_every(what, by, POLL, look).await
}

/// `until`, looking every `every`: a look that is a request the server acts on, or one
/// that a rate limit counts, keeps the pace it was given.
pub async fn until_every<L: Look>(
    what: impl Display,
    by: impl Deadline,
    every: Duration,
    mut look: impl AsyncFnMut() -> L,
) -> L::Output {
    let deadline = by.instant();
    loop {
        match look().await.held() {
            Ok(output) => return output,
            Err(seen) if Instant::now() >= deadline => {
                if seen.is_empty() {
                    panic!("gave up waiting: {what}");
                }
                panic!("gave up waiting: {what} (last seen: {seen})");
            }
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}
