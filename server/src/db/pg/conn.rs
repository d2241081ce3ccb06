//! A thread's connection that comes back: when PostgreSQL restarts or the connection
//! drops, the next request finds it closed (a connection idle for a while is checked
//! before use) and connects again, then no sooner than a backoff (50 ms doubling to 2 s)
//! after the last failed attempt; meanwhile requests fail at once with
//! [`DbError::Unavailable`], which the callers answer as they answer any failed write
//! (moves `unavailable`, games stalled and retrying, HTTP reads 503). An outage is logged
//! once when it starts and once when it ends.

use std::time::{Duration, Instant};

use postgres::Client;

use super::{connect, Cache};
use crate::db::{DbError, DbResult};

pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(50);
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// A connection unused for this long is checked before use. Under load, batches follow
/// each other closer than this, and a connection lost while in use is found closed by
/// the request that failed on it.
const IDLE_CHECK: Duration = Duration::from_millis(50);
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The step log's and the lease renewal's set-up: a statement fails once it has waited
/// this long for a lock, or run this long, and is tried again, instead of holding every
/// game on the node behind one row that another session has locked
/// (`step_write.rs`).
pub(super) const BOUNDED: &str = "SET lock_timeout = '2s'; SET statement_timeout = '10s'";
/// The writer's: a record waits no longer for its game's lease row. Its statements are
/// not bounded, since pruning may run long.
pub(super) const LOCK_BOUNDED: &str = "SET lock_timeout = '2s'";

/// A connection, its prepared statements, and how it reconnects.
pub(super) struct Conn {
    url: std::sync::Arc<str>,
    /// Which thread's, for the log.
    what: &'static str,
    /// Run on every new connection (a reader's read-only setting).
    setup: &'static str,
    client: Option<Client>,
    /// Prepared statements belong to their connection: emptied when it is replaced.
    cache: Cache,
    /// The outage under way: when the next attempt may be made, and the pause after it.
    down: Option<(Instant, Duration)>,
    /// When the connection was last asked for.
    used: Instant,
}

impl Conn {
    /// Connects now: at startup an unreachable database is an error, not an outage.
    pub(super) fn open(
        url: std::sync::Arc<str>,
        what: &'static str,
        setup: &'static str,
    ) -> DbResult<Conn> {
        let client = connect_with(&url, setup)?;
        Ok(Conn {
            url,
            what,
            setup,
            client: Some(client),
            cache: Cache::default(),
            down: None,
            used: Instant::now(),
        })
    }

    /// The connection, made again if it is closed and the backoff allows; else
    /// `Unavailable`.
    pub(super) fn get(&mut self) -> DbResult<(&mut Client, &mut Cache)> {
        let idle = self.used.elapsed();
        self.used = Instant::now();
        if self
            .client
            .as_mut()
            .is_some_and(|client| !alive(client, idle))
        {
            self.client = None;
            self.cache = Cache::default();
            tracing::warn!(
                connection = self.what,
                "the database connection is lost; reconnecting"
            );
            self.down = Some((Instant::now(), FIRST_BACKOFF));
        }
        if self.client.is_none() {
            let (at, backoff) = self.down.unwrap_or((Instant::now(), FIRST_BACKOFF));
            if Instant::now() < at {
                return Err(unavailable("reconnecting"));
            }
            match connect_with(&self.url, self.setup) {
                Ok(client) => {
                    tracing::info!(connection = self.what, "the database connection is back");
                    self.client = Some(client);
                    self.down = None;
                }
                Err(e) => {
                    self.down = Some((Instant::now() + backoff, (backoff * 2).min(MAX_BACKOFF)));
                    return Err(unavailable(&e.to_string()));
                }
            }
        }
        match self.client.as_mut() {
            Some(client) => Ok((client, &mut self.cache)),
            None => Err(unavailable("reconnecting")),
        }
    }

    /// `answer`, or `Unavailable` if it failed because the connection is lost.
    pub(super) fn settle<T>(&self, answer: DbResult<T>) -> DbResult<T> {
        match answer {
            Err(error) if self.client.as_ref().is_some_and(Client::is_closed) => {
                Err(unavailable(&error.to_string()))
            }
            answer => answer,
        }
    }

    /// The session ended under a request (its socket failed): the next request
    /// connects again at once, whether or not the client has noticed.
    pub(super) fn ended(&mut self) {
        if self.client.take().is_some() {
            tracing::warn!(
                connection = self.what,
                "the database session ended; reconnecting"
            );
        }
        self.cache = Cache::default();
        self.down = None;
    }

    pub(super) fn close(self) -> DbResult<()> {
        if let Some(client) = self.client {
            client.close()?;
        }
        Ok(())
    }
}

/// Whether the connection is still there. The blocking client reads its socket only
/// while it runs a request, so a connection that dropped while idle looks open until it
/// is used: after a pause, it is asked (one round trip) before a request is sent on it.
fn alive(client: &mut Client, idle: Duration) -> bool {
    !client.is_closed() && (idle < IDLE_CHECK || client.is_valid(CHECK_TIMEOUT).is_ok())
}

fn connect_with(url: &str, setup: &str) -> DbResult<Client> {
    let mut client = connect(url)?;
    if !setup.is_empty() {
        client.batch_execute(setup)?;
    }
    Ok(client)
}

fn unavailable(why: &str) -> DbError {
    DbError::Unavailable(why.to_owned())
}
