//! A connection's requests to games: moves for its own seat, `sync`, `watch` and
//! `unwatch`. Each goes to its game by the bus with where its answer goes (`ReplyTo`); the
//! game answers the connection itself, in order with its events, and tells the session
//! (`Notice::Answered`), which waits for that before it answers anything else.

use elementals_protocol::messages::{GameId, RequestId, ServerMsg};
use elementals_protocol::ErrorCode;

use super::{err, Reply, Session, MAX_WATCHED};
use crate::game::{Notice, PlayerHandle, ReplyTo, SeatAction};

impl Session {
    /// Waits until the last move handed to a game is answered, so that whatever the
    /// connection sends next follows that answer (requests are answered in order). A game
    /// answers at once, so this normally finds it done and waits for nothing.
    pub async fn settle(&mut self) {
        if std::mem::take(&mut self.pending) {
            self.answered().await;
        }
    }

    /// Waits for the game tier's word that the one request in flight to a game is
    /// answered (every command is: by its game, or by the bus if the game is gone);
    /// returns whether it took effect.
    pub(super) async fn answered(&mut self) -> bool {
        match self.notices.recv().await {
            Some(Notice::Answered { ok, .. }) => ok,
            // The connection is off the bus: nothing more will be answered.
            None => false,
        }
    }

    /// Where a game answers request `request_id` of this connection, the session waiting
    /// for it.
    pub(super) fn reply_to(&self, request_id: Option<RequestId>) -> ReplyTo {
        ReplyTo {
            conn: self.outbox.conn_id(),
            request_id,
            settle: true,
        }
    }

    /// This connection's seat in `game_id`.
    pub(super) fn seat(&self, game_id: GameId) -> Result<PlayerHandle, (ErrorCode, String)> {
        let user = self.user()?;
        let registry = &self.state.registry;
        if let Some((game, seat)) = registry.seat_in(user.account, game_id) {
            return Ok(game.player(seat));
        }
        // A game that has ended (its seats freed as it ended) may still run while it is
        // recorded: its players are told it ended.
        if registry.finished_game(&game_id).is_none() && registry.game(&game_id).is_some() {
            return Err(err(ErrorCode::NotSeated, "you have no seat in that game"));
        }
        Err(self.not_live(game_id))
    }

    /// The answer about `game_id`, which is not live, to a connection that does not watch
    /// it: a player of it is told that it ended, not that it never existed (for as long as
    /// the registry remembers finished games); anyone else that there is no such game.
    fn not_live(&self, game_id: GameId) -> (ErrorCode, String) {
        let finished = self.state.registry.finished_game(&game_id);
        let played = match (&self.user, finished) {
            (Some(user), Some(f)) => f.players.one == user.account || f.players.two == user.account,
            _ => false,
        };
        match played {
            true => err(ErrorCode::GameOver, "the game has ended"),
            false => err(ErrorCode::UnknownGame, "no live game with that id"),
        }
    }

    /// Hands a move to its game, which answers it (first in the same write as the events
    /// the move caused); the connection reads on meanwhile, and `settle`s before it
    /// answers anything else.
    pub(super) async fn act(
        &mut self,
        game_id: GameId,
        action: SeatAction,
        id: RequestId,
        arrived: tokio::time::Instant,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        let seat = self.seat(game_id)?;
        seat.act(action, self.reply_to(Some(id)), arrived).await;
        self.pending = true;
        Ok(None)
    }

    /// `sync`: a fresh snapshot, from the game itself, in order with its events.
    pub(super) async fn sync(
        &mut self,
        id: RequestId,
        game_id: GameId,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        let state = self.state.clone();
        // The game queues the snapshot itself, in order with its events.
        if let Some(spectator) = self.watching.get(&game_id) {
            // An ended game answers no snapshot (PROTOCOL.md section 7); its players
            // are told the same by `seat`.
            if state.registry.game(&game_id).is_none() {
                return Err(err(ErrorCode::GameOver, "the game has ended"));
            }
            spectator.watch(self.reply_to(Some(id))).await;
            self.answered().await;
        } else if self.user.is_none() {
            // No seat without an account: answered as for anyone who neither plays
            // nor watches the game, so that a client may try `watch` next.
            return Err(match state.registry.game(&game_id) {
                Some(_) => err(ErrorCode::NotSeated, "you have no seat in that game"),
                None => err(ErrorCode::UnknownGame, "no live game with that id"),
            });
        } else {
            let player = self.seat(game_id)?;
            player.attach(self.reply_to(Some(id)), None).await;
            self.answered().await;
        }
        Ok(None)
    }

    /// `watch`: the game queues the snapshot, and the connection is a subscriber of its topic.
    pub(super) async fn watch(
        &mut self,
        id: RequestId,
        game_id: GameId,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        let state = self.state.clone();
        if self.watching.contains_key(&game_id) {
            // An ended game is answered as `sync` answers it (PROTOCOL.md section 7).
            if state.registry.game(&game_id).is_none() {
                return Err(err(ErrorCode::GameOver, "the game has ended"));
            }
            // Already watching: nothing changes and the game is not asked (a
            // fresh snapshot is `sync`'s).
            return Ok(Some(ServerMsg::Ok { id }));
        }
        if self.watching.len() >= MAX_WATCHED {
            // Games that have ended since they were watched no longer count.
            self.watching
                .retain(|id, _| state.registry.game(id).is_some());
            if self.watching.len() >= MAX_WATCHED {
                return Err(err(ErrorCode::TooManyRequests, "watching too many games"));
            }
        }
        let Some(game) = state.registry.game(&game_id) else {
            return Err(self.not_live(game_id));
        };
        let spectator = game.spectator();
        // The game queues the snapshot itself, in order with its events (or the
        // bus its `unknown_game`, if it has just ended).
        spectator.watch(self.reply_to(Some(id))).await;
        if self.answered().await {
            self.watching.insert(game_id, spectator);
        }
        Ok(None)
    }

    pub(super) fn unwatch(&mut self, id: RequestId, game_id: GameId) -> Reply {
        let spectator = self
            .watching
            .remove(&game_id)
            .ok_or_else(|| err(ErrorCode::NotWatching, "not watching that game"))?;
        spectator.unwatch(self.outbox.conn_id());
        Ok(ServerMsg::Ok { id })
    }
}
