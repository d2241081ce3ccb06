//! A client's mirror of one game: it starts from `game_start` or a snapshot and applies
//! the game's numbered events in order, noticing any it missed.
//!
//! The mirror is a [`GameSnapshot`] kept up to date, so a resync simply replaces it. It
//! does no I/O: the player driver and the CLI feed it events and ask it what to show.

use elementals_protocol::messages::{
    Clocks, GameId, GameInfo, GameResult, GameSnapshot, Phase, RoundRecord, SeatPair,
};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::{Seat, ServerMsg};

use elementals_protocol::strategy::GameView;

/// What [`GameState::apply`] made of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The state changed (or the message was a repeat `game_start` of this game).
    Applied,
    /// About another game, or not a game message at all.
    Ignored,
    /// A numbered event already included (for example, one queued before a resync).
    Stale,
    /// Events between the last applied and this one are missing: ask for a snapshot
    /// (`sync`) and apply this event again after it.
    Gap { expected: u64, got: u64 },
}

/// One game as a player or spectator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GameState {
    snapshot: GameSnapshot,
    /// The receiver's seat; `None` for a spectator.
    seat: Option<Seat>,
    /// Whether the ended game is rated, as `game_over` says.
    rated_result: Option<bool>,
    ratings: Option<SeatPair<RatingChange>>,
    /// Milliseconds the disconnected opponent has left, from the last `presence` event.
    grace_ms: Option<u64>,
    /// The reveal window of the current round, from `reveal_phase`.
    reveal_ms: Option<u64>,
}

impl GameState {
    /// A game that has just started (from `game_start`): every element at the centre, no
    /// event seen yet.
    pub fn new(game: GameInfo, seat: Option<Seat>) -> GameState {
        let number = usize::from(game.variant.number);
        // A correspondence game's clocks are each seat's time to the phase's deadline.
        let tc = game.time_control;
        let bank = tc.per_phase_ms.unwrap_or(tc.initial_ms);
        let snapshot = GameSnapshot {
            seq: 0,
            round: 0,
            phase: Phase::Commit,
            committed: SeatPair::default(),
            revealed: SeatPair::default(),
            positions: vec![0; number],
            clocks: Clocks {
                one_ms: bank,
                two_ms: bank,
                running: SeatPair::default(),
            },
            rounds: Vec::new(),
            connected: SeatPair::new(true, true),
            spectators: 0,
            draw_offer: None,
            result: None,
            game,
        };
        GameState::from_snapshot(snapshot, seat)
    }

    /// A game joined part-way (a `watch` or `sync` reply, or a resumed session).
    pub fn from_snapshot(snapshot: GameSnapshot, seat: Option<Seat>) -> GameState {
        GameState {
            snapshot,
            seat,
            rated_result: None,
            ratings: None,
            grace_ms: None,
            reveal_ms: None,
        }
    }

    pub fn game_id(&self) -> GameId {
        self.snapshot.game.game_id
    }
    pub fn info(&self) -> &GameInfo {
        &self.snapshot.game
    }
    pub fn snapshot(&self) -> &GameSnapshot {
        &self.snapshot
    }
    pub fn seat(&self) -> Option<Seat> {
        self.seat
    }
    pub fn seq(&self) -> u64 {
        self.snapshot.seq
    }
    pub fn round(&self) -> u32 {
        self.snapshot.round
    }
    pub fn phase(&self) -> Phase {
        self.snapshot.phase
    }
    /// Every element's position, index `element - 1`.
    pub fn positions(&self) -> &[i16] {
        &self.snapshot.positions
    }
    pub fn clocks(&self) -> &Clocks {
        &self.snapshot.clocks
    }
    pub fn history(&self) -> &[RoundRecord] {
        &self.snapshot.rounds
    }
    pub fn committed(&self, seat: Seat) -> bool {
        *self.snapshot.committed.get(seat)
    }
    pub fn revealed(&self, seat: Seat) -> bool {
        *self.snapshot.revealed.get(seat)
    }
    pub fn connected(&self, seat: Seat) -> bool {
        *self.snapshot.connected.get(seat)
    }
    pub fn draw_offer(&self) -> Option<Seat> {
        self.snapshot.draw_offer
    }
    pub fn spectators(&self) -> u32 {
        self.snapshot.spectators
    }
    pub fn result(&self) -> Option<GameResult> {
        self.snapshot.result
    }
    pub fn is_over(&self) -> bool {
        self.snapshot.result.is_some() || self.snapshot.phase == Phase::Over
    }
    /// Whether the game's result changes ratings: known once `game_over` has come.
    pub fn rated_result(&self) -> Option<bool> {
        self.rated_result
    }
    pub fn ratings(&self) -> Option<&SeatPair<RatingChange>> {
        self.ratings.as_ref()
    }
    pub fn grace_ms(&self) -> Option<u64> {
        self.grace_ms
    }
    pub fn reveal_ms(&self) -> Option<u64> {
        self.reveal_ms
    }

    /// The game as a strategy sees it; `None` for a spectator.
    pub fn view(&self) -> Option<GameView<'_>> {
        Some(GameView {
            variant: self.snapshot.game.variant,
            seat: self.seat?,
            round: self.snapshot.round,
            positions: &self.snapshot.positions,
            history: &self.snapshot.rounds,
        })
    }

    /// Replace everything with a fresh snapshot (after a gap, or a resumed session). A
    /// seat of `None` keeps the seat already known.
    pub fn reset(&mut self, snapshot: GameSnapshot, seat: Option<Seat>) {
        self.snapshot = snapshot;
        self.seat = seat.or(self.seat);
        if self.snapshot.result.is_none() {
            self.rated_result = None;
            self.ratings = None;
        }
    }

    /// Apply one message from the server.
    pub fn apply(&mut self, msg: &ServerMsg) -> Applied {
        match msg {
            ServerMsg::Snapshot { snapshot, seat, .. } => {
                if snapshot.game.game_id != self.game_id() {
                    return Applied::Ignored;
                }
                self.reset(snapshot.clone(), *seat);
                Applied::Applied
            }
            ServerMsg::GameStart { game, .. } if game.game_id == self.game_id() => Applied::Applied,
            ServerMsg::Spectators { game_id, count } if *game_id == self.game_id() => {
                self.snapshot.spectators = *count;
                Applied::Applied
            }
            _ => self.apply_event(msg),
        }
    }

    fn apply_event(&mut self, msg: &ServerMsg) -> Applied {
        let (Some(game_id), Some(seq)) = (event_game(msg), msg.seq()) else {
            return Applied::Ignored;
        };
        if game_id != self.game_id() {
            return Applied::Ignored;
        }
        let expected = self.snapshot.seq + 1;
        if seq < expected {
            return Applied::Stale;
        }
        if seq > expected {
            return Applied::Gap { expected, got: seq };
        }
        self.snapshot.seq = seq;
        let s = &mut self.snapshot;
        match msg {
            ServerMsg::RoundStart { round, clocks, .. } => {
                s.round = *round;
                s.phase = Phase::Commit;
                s.committed = SeatPair::default();
                s.revealed = SeatPair::default();
                s.clocks = *clocks;
                self.reveal_ms = None;
            }
            ServerMsg::Committed { seat, clocks, .. } => {
                *s.committed.get_mut(*seat) = true;
                s.clocks = *clocks;
            }
            ServerMsg::RevealPhase {
                reveal_ms, clocks, ..
            } => {
                s.phase = Phase::Reveal;
                s.clocks = *clocks;
                self.reveal_ms = Some(*reveal_ms);
            }
            ServerMsg::Revealed { seat, clocks, .. } => {
                *s.revealed.get_mut(*seat) = true;
                s.clocks = *clocks;
            }
            ServerMsg::RoundResult { record, clocks, .. } => {
                s.positions.clone_from(&record.positions);
                s.rounds.push(record.clone());
                s.clocks = *clocks;
            }
            ServerMsg::DrawOffered { by, .. } => s.draw_offer = Some(*by),
            ServerMsg::DrawDeclined { .. } => s.draw_offer = None,
            ServerMsg::Presence {
                seat,
                connected,
                grace_ms,
                ..
            } => {
                *s.connected.get_mut(*seat) = *connected;
                self.grace_ms = (!*connected).then_some(*grace_ms);
            }
            ServerMsg::GameOver {
                result,
                rated,
                clocks,
                ..
            } => {
                s.result = Some(*result);
                s.phase = Phase::Over;
                s.clocks = *clocks;
                s.draw_offer = None;
                self.rated_result = Some(*rated);
            }
            ServerMsg::RatingUpdate { ratings, .. } => self.ratings = Some(*ratings),
            _ => {}
        }
        Applied::Applied
    }
}

/// The game a numbered event belongs to.
fn event_game(msg: &ServerMsg) -> Option<GameId> {
    use ServerMsg::*;
    match msg {
        RoundStart { game_id, .. }
        | Committed { game_id, .. }
        | RevealPhase { game_id, .. }
        | Revealed { game_id, .. }
        | RoundResult { game_id, .. }
        | DrawOffered { game_id, .. }
        | DrawDeclined { game_id, .. }
        | Presence { game_id, .. }
        | GameOver { game_id, .. }
        | RatingUpdate { game_id, .. } => Some(*game_id),
        _ => None,
    }
}

/// The game a message is about, if any: numbered events, `game_start`, snapshots,
/// spectator counts, `your_move`, and a rematch of it offered or declined.
pub fn message_game(msg: &ServerMsg) -> Option<GameId> {
    match msg {
        ServerMsg::GameStart { game, .. } => Some(game.game_id),
        ServerMsg::Snapshot { snapshot, .. } => Some(snapshot.game.game_id),
        ServerMsg::Spectators { game_id, .. }
        | ServerMsg::YourMove { game_id, .. }
        | ServerMsg::RematchOffered { game_id, .. }
        | ServerMsg::RematchDeclined { game_id, .. } => Some(*game_id),
        _ => event_game(msg),
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
