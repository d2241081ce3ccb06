//! `Watcher`: one lean spectator's cycle of list, watch and follow, as `spectator.rs`
//! runs it: each `round_result` timed by the read that brought it, a gap in the event
//! numbers answered with `sync`.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use elementals_client::protocol::messages::{GameId, RequestId};
use elementals_client::protocol::wire;
use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg};
use mio::net::TcpStream;
use tokio::time::Instant;

use crate::ctx::Ctx;
use crate::spectator::{GAME_OVER_LINGER, NO_GAME_BACKOFF};
use crate::stats::{Gauge, Stats};

use super::frame::{client_frame, parse_frame, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG};

/// Where one spectator is in its cycle of list, watch, follow.
#[derive(Debug, Clone, Copy)]
pub(super) enum State {
    /// Just adopted.
    Idle,
    /// `list_games` sent with this id.
    Listing(RequestId),
    /// To be queued for another listing after about this long (no game was live, or
    /// the one watched ended).
    Backoff(Duration),
    /// Queued for another listing.
    Waiting,
    /// `watch` or `sync` sent with this id, for this game.
    Joining(RequestId, GameId),
    /// Following this game's events.
    Watching(GameId),
}

pub(super) struct Watcher {
    pub(super) index: u64,
    pub(super) stream: TcpStream,
    /// Bytes read but not yet a whole frame.
    pub(super) pending: Vec<u8>,
    /// For each read whose bytes are still in `pending`: where they end, and when.
    pub(super) reads: VecDeque<(usize, Instant)>,
    /// Why the socket ended, once it has (handled after the frames before it).
    pub(super) ended: Option<&'static str>,
    /// Read and waiting to be handled.
    pub(super) touched: bool,
    pub(super) next_id: RequestId,
    pub(super) state: State,
    /// The last event number applied in the watched game.
    pub(super) seq: u64,
    /// Counts this spectator in `watching` while its state is `Watching`.
    pub(super) watching: Option<Gauge>,
    pub(super) stats: Arc<Stats>,
}

impl Watcher {
    pub(super) fn handle_frames(&mut self, ctx: &Ctx) -> Result<(), &'static str> {
        let mut at = 0;
        while let Some(frame) = parse_frame(&self.pending[at..])? {
            let payload = at + frame.payload.start..at + frame.payload.end;
            at += frame.len;
            // The read that brought the frame's last byte.
            let read_at = self
                .reads
                .iter()
                .find(|(end, _)| *end >= at)
                .map_or_else(Instant::now, |(_, when)| *when);
            match frame.opcode {
                OP_BINARY => {
                    self.stats.frames_in.fetch_add(1, Relaxed);
                    // One message, or a batch of them.
                    for msg in wire::decode_server_frame(&self.pending[payload]) {
                        match msg {
                            Ok(msg) => self.on_message(msg, ctx, read_at)?,
                            Err(_) => self.stats.error("decode: undecodable server message"),
                        }
                    }
                }
                OP_PING => {
                    let pong = client_frame(OP_PONG, &self.pending[payload]);
                    self.write(&pong)?;
                }
                OP_CLOSE => return Err("spectating: connection closed"),
                OP_PONG => {}
                _ => return Err("spectating: unexpected frame"),
            }
        }
        self.pending.drain(..at);
        self.reads.retain_mut(|(end, _)| {
            *end = end.saturating_sub(at);
            *end > 0
        });
        Ok(())
    }

    fn on_message(
        &mut self,
        msg: ServerMsg,
        ctx: &Ctx,
        read_at: Instant,
    ) -> Result<(), &'static str> {
        match (self.state, msg.reply_id()) {
            (State::Listing(id), Some(got)) if got == id => {
                let ServerMsg::LiveGames { games, .. } = msg else {
                    return Err("spectating: unexpected reply");
                };
                if games.is_empty() {
                    self.enter(State::Backoff(NO_GAME_BACKOFF));
                    return Ok(());
                }
                let game_id = games[(self.index as usize) % games.len()].game_id;
                self.join(game_id, false)
            }
            (State::Joining(id, game_id), Some(got)) if got == id => match msg {
                ServerMsg::Snapshot { snapshot, .. } if snapshot.game.game_id == game_id => {
                    self.seq = snapshot.seq;
                    self.enter(State::Watching(game_id));
                    Ok(())
                }
                // It ended between the list and the watch: choose again.
                ServerMsg::Error {
                    code: ErrorCode::UnknownGame,
                    ..
                } => self.list(),
                ServerMsg::Error { .. } => Err("spectating: server error"),
                _ => Err("spectating: unexpected reply"),
            },
            (_, Some(_)) => Err("spectating: unexpected reply"),
            (State::Watching(game_id), None) => self.on_event(game_id, msg, ctx, read_at),
            // Pushes for a game no longer followed, or before one is.
            (_, None) => Ok(()),
        }
    }

    fn on_event(
        &mut self,
        game_id: GameId,
        msg: ServerMsg,
        ctx: &Ctx,
        read_at: Instant,
    ) -> Result<(), &'static str> {
        let Some(seq) = msg.seq() else {
            return Ok(());
        };
        if seq <= self.seq {
            return Ok(());
        }
        if seq > self.seq + 1 {
            // Allowed by the protocol for a spectator that fell behind.
            self.stats.spectator_resyncs.fetch_add(1, Relaxed);
            return self.join(game_id, true);
        }
        self.seq = seq;
        match msg {
            ServerMsg::RoundResult {
                game_id, record, ..
            } => {
                if let Some(sent) = ctx.reveals.last(game_id, record.round) {
                    let delay = read_at.saturating_duration_since(sent);
                    self.stats.spectator_result.record(delay);
                    ctx.fanout
                        .arrived(game_id, record.round, sent, delay, &ctx.reveals);
                }
                Ok(())
            }
            ServerMsg::GameOver { .. } => {
                self.enter(State::Backoff(GAME_OVER_LINGER));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Move to `state`, keeping the `watching` gauge in step with it.
    pub(super) fn enter(&mut self, state: State) {
        self.state = state;
        match state {
            State::Watching(_) => {
                if self.watching.is_none() {
                    self.watching = Some(Gauge::up(self.stats.clone(), |s| &s.watching));
                }
            }
            _ => self.watching = None,
        }
    }

    pub(super) fn list(&mut self) -> Result<(), &'static str> {
        let id = self.request(|id| ClientMsg::ListGames { id })?;
        self.enter(State::Listing(id));
        Ok(())
    }

    /// `watch` the game, or `sync` it after a gap.
    fn join(&mut self, game_id: GameId, sync: bool) -> Result<(), &'static str> {
        let id = self.request(|id| match sync {
            true => ClientMsg::Sync { id, game_id },
            false => ClientMsg::Watch { id, game_id },
        })?;
        self.enter(State::Joining(id, game_id));
        Ok(())
    }

    fn request(
        &mut self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<RequestId, &'static str> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let frame = client_frame(OP_BINARY, &wire::encode_client(&build(id)));
        self.write(&frame)?;
        self.stats.frames_out.fetch_add(1, Relaxed);
        Ok(id)
    }

    pub(super) fn send_frame(&mut self, opcode: u8, payload: &[u8]) -> Result<(), &'static str> {
        let frame = client_frame(opcode, payload);
        self.write(&frame)
    }

    /// Frames sent are a few dozen bytes into a socket this client rarely writes to: one
    /// that does not fit at once is a broken connection, not back-pressure to wait out.
    fn write(&mut self, frame: &[u8]) -> Result<(), &'static str> {
        match self.stream.write(frame) {
            Ok(n) if n == frame.len() => Ok(()),
            Ok(_) | Err(_) => Err("spectating: send failed"),
        }
    }
}
