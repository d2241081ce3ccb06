//! A simulated spectator: signs in as a guest (no password hash), picks a live game,
//! watches it to its end, and picks another, until the run stops. Each `round_result`
//! is timed from the moment the round's last reveal was sent.

use std::sync::atomic::Ordering::Relaxed;

use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg};
use elementals_client::{Applied, GameState};
use tokio::time::{Duration, Instant};

use crate::conn::{source_address, Conn, ConnError};
use crate::ctx::{jittered, Shared};
use crate::stats::Gauge;

/// How long a spectator waits before asking again when no game is live.
pub const NO_GAME_BACKOFF: Duration = Duration::from_millis(500);

/// How long a spectator stays on a finished game before choosing another (each pause drawn
/// from 0.5–1.5 times this). People look at the final position before moving on; without
/// it every spectator of a game asks for the game list in the same millisecond as its
/// last round's result goes out, a stampede no real audience makes.
pub const GAME_OVER_LINGER: Duration = Duration::from_secs(2);

/// A watched game that sends nothing for this long counts as a timeout.
const SILENCE: Duration = Duration::from_secs(120);

pub struct Spectator {
    ctx: Shared,
    index: u64,
}

impl Spectator {
    pub fn new(ctx: Shared, index: u64) -> Spectator {
        Spectator { ctx, index }
    }

    pub async fn run(self) {
        let stats = self.ctx.stats.clone();
        let source = source_address(self.index);
        let signed_in = async {
            let mut conn =
                Conn::open(self.ctx.server_for(self.index, 0), source, stats.clone()).await?;
            conn.request(|id| ClientMsg::Guest { id }).await?;
            Ok::<_, ConnError>(conn)
        };
        let mut conn = match signed_in.await {
            Ok(conn) => conn,
            Err(e) => {
                if !self.ctx.stop.is_cancelled() {
                    stats.error(e.kind("spectator sign in"));
                }
                return;
            }
        };
        stats.spectator_in();
        if let Some(lean) = &self.ctx.lean {
            // From here on its socket is read by the lean spectators' thread, which counts
            // it out when it ends.
            if let Err(e) = lean.adopt(self.index, conn) {
                stats.error(e.kind("spectator adopt"));
                stats.spectator_out();
            }
            return;
        }
        let stop = self.ctx.stop.clone();
        let watched = tokio::select! {
            _ = stop.cancelled() => Ok(()),
            r = self.watch_games(&mut conn) => r,
        };
        stats.spectator_out();
        if let Err(e) = watched {
            if !self.ctx.stop.is_cancelled() {
                stats.error(e.kind("spectating"));
            }
        }
        conn.close().await;
    }

    async fn watch_games(&self, conn: &mut Conn) -> Result<(), ConnError> {
        loop {
            let Some(game_id) = self.choose_game(conn).await? else {
                tokio::time::sleep(jittered(NO_GAME_BACKOFF)).await;
                continue;
            };
            let snapshot = match conn.request(|id| ClientMsg::Watch { id, game_id }).await {
                Ok(ServerMsg::Snapshot { snapshot, .. }) => snapshot,
                // It ended between the list and the watch: choose again.
                Err(ConnError::Server {
                    code: ErrorCode::UnknownGame,
                }) => continue,
                Ok(_) => return Err(ConnError::Unexpected),
                Err(e) => return Err(e),
            };
            let state = GameState::from_snapshot(snapshot, None);
            self.follow(conn, state).await?;
            tokio::time::sleep(jittered(GAME_OVER_LINGER)).await;
        }
    }

    /// Spread spectators over the live games by their number.
    async fn choose_game(&self, conn: &mut Conn) -> Result<Option<GameId>, ConnError> {
        match conn.request(|id| ClientMsg::ListGames { id }).await? {
            ServerMsg::LiveGames { games, .. } if games.is_empty() => Ok(None),
            ServerMsg::LiveGames { games, .. } => {
                let pick = (self.index as usize) % games.len();
                Ok(Some(games[pick].game_id))
            }
            _ => Err(ConnError::Unexpected),
        }
    }

    /// Apply the game's events until it ends.
    async fn follow(&self, conn: &mut Conn, mut state: GameState) -> Result<(), ConnError> {
        let stats = &self.ctx.stats;
        let _watching = Gauge::up(stats.clone(), |s| &s.watching);
        // One timer per game watched, not one per frame: 10,000 spectators each arming and
        // cancelling a timer for every frame was about 7 % of the load generator's samples
        // in the fan-out run, on the cores the server shares. The timer only fires to check.
        let mut heard = Instant::now();
        let watchdog = tokio::time::sleep(SILENCE);
        tokio::pin!(watchdog);
        while !state.is_over() {
            let msg = tokio::select! {
                msg = conn.recv() => msg?,
                () = &mut watchdog => {
                    if heard.elapsed() >= SILENCE {
                        return Err(ConnError::Timeout);
                    }
                    watchdog.as_mut().reset(heard + SILENCE);
                    continue;
                }
            };
            heard = Instant::now();
            match state.apply(&msg) {
                Applied::Applied => {}
                Applied::Gap { .. } => {
                    // Allowed by the protocol for a spectator that fell behind.
                    stats.spectator_resyncs.fetch_add(1, Relaxed);
                    let game_id = state.game_id();
                    match conn.request(|id| ClientMsg::Sync { id, game_id }).await {
                        Ok(ServerMsg::Snapshot { snapshot, .. }) => state.reset(snapshot, None),
                        Err(ConnError::Server {
                            code: ErrorCode::UnknownGame,
                        }) => return Ok(()),
                        Ok(_) => return Err(ConnError::Unexpected),
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                Applied::Stale | Applied::Ignored => continue,
            }
            if let ServerMsg::RoundResult {
                game_id, record, ..
            } = &msg
            {
                if let Some(sent) = self.ctx.reveals.last(*game_id, record.round) {
                    let now = Instant::now();
                    let delay = now - sent;
                    stats.spectator_result.record(delay);
                    self.ctx
                        .fanout
                        .arrived(*game_id, record.round, sent, delay, &self.ctx.reveals);
                }
            }
        }
        Ok(())
    }
}
