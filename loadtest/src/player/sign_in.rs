//! Signing in: registering (or logging in, on a rerun) the first time, resuming with the
//! token after a storm, and the retries the protocol asks of clients for each.

use std::sync::atomic::Ordering::Relaxed;

use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg};
use tokio::time::{Duration, Instant};

use crate::conn::{source_address, Conn, ConnError};
use crate::ctx::{jittered, Storm};

use super::Player;

const PASSWORD: &str = "loadtest-password";

/// Reconnect attempts after a storm before the player gives up (and counts an error).
const RESUME_ATTEMPTS: u32 = 20;

/// How often a first sign-in refused `rate_limited` is tried, in all: about a minute at
/// `SIGN_IN_RETRY` each, as long as the run waits for its players to sign in
/// (`run::SETTLE_TIMEOUT`). A server refusing that long is overloaded, and the player an
/// error; one refusing for a while (the hashing slots busy with a burst) is waited out.
const SIGN_IN_ATTEMPTS: u32 = 30;

/// The mean wait before a refused first sign-in is tried again (jittered by half either
/// way): PROTOCOL.md asks for "a few seconds, with jitter".
const SIGN_IN_RETRY: Duration = Duration::from_secs(2);

impl Player {
    /// After a dropped connection, retry refused or failed reconnects with a growing,
    /// jittered backoff, as the protocol asks of clients after a restart. A first sign-in
    /// is retried only when refused `rate_limited` (its password check would wait too
    /// long), a few seconds later, as the protocol asks too.
    pub(super) async fn sign_in_with_retries(
        &mut self,
        resumed_from: Option<Instant>,
    ) -> Result<Conn, ConnError> {
        let mut backoff = Duration::from_millis(100);
        let mut attempt = 1;
        loop {
            match self.sign_in(resumed_from).await {
                Err(ConnError::Server {
                    code: ErrorCode::RateLimited,
                }) if resumed_from.is_none()
                    && attempt < SIGN_IN_ATTEMPTS
                    && !self.ctx.stop.is_cancelled() =>
                {
                    self.ctx.stats.sign_in_retries.fetch_add(1, Relaxed);
                    tokio::select! {
                        () = tokio::time::sleep(jittered(SIGN_IN_RETRY)) => {}
                        () = self.ctx.stop.cancelled() => return Err(ConnError::Closed),
                    }
                    attempt += 1;
                }
                Err(ConnError::Server { code }) => return Err(ConnError::Server { code }),
                // Its node is gone and no other has claimed the game yet: PROTOCOL.md
                // asks for a new sign-in a few seconds later (here, every second).
                Err(ConnError::GameNotBack) => {
                    tracing::debug!(player = self.index, "game not back");
                    self.ctx.stats.game_not_back_retries.fetch_add(1, Relaxed);
                    tokio::select! {
                        () = tokio::time::sleep(jittered(Duration::from_secs(1))) => {}
                        () = self.ctx.stop.cancelled() => return Err(ConnError::Closed),
                    }
                }
                Err(_) if resumed_from.is_some() && attempt < RESUME_ATTEMPTS => {
                    if self.ctx.failover {
                        // This node may be the dead one: try the next.
                        self.hop += 1;
                    }
                    self.ctx.stats.resume_retries.fetch_add(1, Relaxed);
                    tokio::time::sleep(jittered(backoff)).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Connect and sign in: register the first time, resume with the token after.
    async fn sign_in(&mut self, resumed_from: Option<Instant>) -> Result<Conn, ConnError> {
        let source = source_address(self.index);
        let server = self.ctx.server_for(self.index, self.hop);
        let mut conn = Conn::open(server, source, self.ctx.stats.clone()).await?;
        let reply = match &self.token {
            Some(token) => {
                let token = token.clone();
                conn.request(|id| ClientMsg::Resume { id, token }).await?
            }
            None => {
                let name = self.ctx.player_name(self.index);
                let reply = conn
                    .request(|id| ClientMsg::Register {
                        id,
                        name: name.clone(),
                        password: PASSWORD.into(),
                    })
                    .await;
                match reply {
                    // A rerun against the same server: the account exists already.
                    Err(ConnError::Server {
                        code: ErrorCode::NameTaken,
                    }) => {
                        conn.request(|id| ClientMsg::Login {
                            id,
                            name,
                            password: PASSWORD.into(),
                        })
                        .await?
                    }
                    other => other?,
                }
            }
        };
        let ServerMsg::Authenticated { token, game_id, .. } = reply else {
            return Err(ConnError::Unexpected);
        };
        self.token = Some(token);
        if let Some(from) = resumed_from {
            tracing::debug!(player = self.index, ?game_id, %server, "resumed");
            // A dropped connection left the pool; a seat is kept.
            self.queued = false;
            match game_id {
                // Seated: back in the game means its snapshot has arrived.
                Some(game_id) => {
                    if self.game.as_ref().map(|g| g.state.game_id()) != Some(game_id) {
                        // Not the game it knew of: that one ended while it was away.
                        self.leave_game();
                    }
                    self.await_snapshot(&mut conn).await?
                }
                // Not seated, after a lost node, although its game was live: no node
                // has claimed the game yet.
                None if self.ctx.failover
                    && self.game.as_ref().is_some_and(|g| !g.state.is_over())
                    && from.elapsed() < super::failover::GAME_BACK_WITHIN =>
                {
                    return Err(ConnError::GameNotBack);
                }
                // Not seated: a game it was in ended while it was away (its `game_over`
                // lost with the old socket). It is back, with no game.
                None => {
                    if self.ctx.failover && self.game.as_ref().is_some_and(|g| !g.state.is_over()) {
                        self.ctx.stats.error("failover: game not back within 30 s");
                    }
                    self.leave_game()
                }
            }
            self.ctx.stats.resume.record(from.elapsed());
        }
        Ok(conn)
    }

    /// The snapshot follows `authenticated` at once when the player is seated (it may be
    /// of a game paired as the old connection dropped, whose `game_start` was lost).
    async fn await_snapshot(&mut self, conn: &mut Conn) -> Result<(), ConnError> {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut scratch = Vec::new();
        loop {
            let msg = match tokio::time::timeout_at(deadline, conn.recv()).await {
                Ok(msg) => msg?,
                Err(_) => return Err(ConnError::Timeout),
            };
            let snapshot = matches!(msg, ServerMsg::Snapshot { .. });
            self.handle(conn, msg, &mut scratch).await?;
            if snapshot {
                return Ok(());
            }
        }
    }

    pub(super) async fn wait_for_return(&mut self) -> Option<Instant> {
        let mut storm = self.ctx.storm.clone();
        loop {
            if let Storm::Return(at) = *storm.borrow_and_update() {
                return Some(at);
            }
            tokio::select! {
                _ = self.ctx.stop.cancelled() => return None,
                changed = storm.changed() => changed.ok()?,
            }
        }
    }
}
