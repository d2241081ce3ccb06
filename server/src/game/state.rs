//! The pure state of one game: rounds of commit and reveal, the clocks, presence, draw offers
//! and how the game ends.
//!
//! No tokio and no I/O: every method takes the current `Instant`, so the actor supplies time
//! and tests drive it by hand. Mutating methods first settle any deadline that has passed
//! (`tick`), then apply the command, and push the numbered events to publish into `out`,
//! `seq` assigned here so that the event stream and snapshots always agree.
//!
//! Clock rules beyond `RULES.md`, chosen here:
//! - Round 1's commit phase is governed by the first-commit window, not by the banks: until
//!   both have committed once, no bank runs, and a seat missing at the window's end aborts the
//!   game (unrated) instead of losing it.
//! - In the reveal phase a seat must reveal by the earlier of the reveal window and the end of
//!   its bank: missing the bank's end loses on `Time`, missing the window on `NoReveal`.
//! - Deadlines are settled earliest first; when both seats miss theirs at the same instant the
//!   game is drawn (winner `None`) with reason `Time` if both banks ran out, else `NoReveal`.
//! - A deadline is missed at its instant: an action arriving exactly at it is too late.
//!
//! A correspondence game (`TimeControl::per_phase_ms`) reuses the banks as deadlines: each
//! phase's start (round 1's included: no first-commit window) refills both banks to the
//! time per phase, and only the seats that owe the phase's action run, so a bank at zero
//! is a missed deadline and loses on `Time` like a live bank's. It has no reveal window, no
//! increment, no grace to claim a win by, and is neither held nor voided after a restart:
//! its deadlines are re-anchored on the wall clock (see `hold.rs`).
//!
//! Every accepted commitment and reveal, every round result and the end are also written to
//! the game's log (`take_log`), which the actor makes durable before it publishes anything;
//! `replay` rebuilds a game from that log after a restart and `hold` (see `hold.rs`) keeps
//! the clocks still until the players are back.

mod clock;
mod deadlines;
mod hibernate;
mod hold;
mod owed;
mod players;
mod replay;
mod round;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use elementals_protocol::commitment::{COMMITMENT_LEN, NONCE_LEN};
use elementals_protocol::messages::{
    EndReason, GameInfo, GameResult, GameSnapshot, LiveGame, Phase, PlayerInfo, SeatPair, ServerMsg,
};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::{Board, Element, Seat};
use elementals_protocol::ErrorCode;

use super::{GameError, GameSetup, SeatAction};
use crate::record::{GameRecord, LogEntry, LogStep, RecordPlayer, RoundLog};
pub(in crate::game) use clock::{duration_ms, Banks};
pub(in crate::game) use replay::ReplayError;
use round::round_record;

/// The durations a game runs under that are not part of its time control.
#[derive(Debug, Clone, Copy)]
pub(in crate::game) struct Timing {
    pub first_commit_window: Duration,
    pub grace: Duration,
    /// Resolved rounds after which the game ends drawn (`EndReason::MaxRounds`).
    pub max_rounds: u32,
}

#[derive(Debug, Clone)]
pub(in crate::game) struct GameState {
    info: GameInfo,
    players: SeatPair<RecordPlayer>,
    timing: Timing,
    /// When the first-commit window opened: the start, or the end of a hold in round 1.
    started: Instant,
    /// An instant and the Unix milliseconds it corresponds to, for `ended_at` and the log.
    wall: (Instant, u64),
    /// While set, the game is held (after a restart or a server-side incident): no bank or
    /// window runs until both players are connected or this instant passes.
    hold: Option<Instant>,
    /// While set, the game's log cannot be written: no bank or window runs (see `stall`).
    stalled: bool,
    board: Board,
    round: u32,
    phase: Phase,
    /// When the current phase began (or the round was voided): a seat that has not acted
    /// in it has had its move outstanding since then.
    phase_since: Instant,
    commits: SeatPair<Option<[u8; COMMITMENT_LEN]>>,
    reveals: SeatPair<Option<(Element, [u8; NONCE_LEN])>>,
    /// Reveals escrowed with this round's commits: secret until the server reveals them
    /// when the reveal phase opens, then also in `reveals`.
    escrows: SeatPair<Option<(Element, [u8; NONCE_LEN])>>,
    /// End of the reveal window, during the reveal phase.
    reveal_by: Option<Instant>,
    banks: Banks,
    rounds: Vec<RoundLog>,
    draw_offer: Option<Seat>,
    connected: SeatPair<bool>,
    /// When each seat was last seen leaving (or the game's start, before a first attach).
    away_since: SeatPair<Instant>,
    seq: u64,
    /// Set once, when the game ends.
    record: Option<Arc<GameRecord>>,
    /// Steps not yet handed to the actor for the durable log.
    log: Vec<LogStep>,
    /// The number the next logged step gets.
    next_step: u64,
    /// Set by `replay` for a correspondence game: the Unix milliseconds at which its
    /// current phase began, from which `resume` re-anchors its deadlines.
    replayed_phase_at: Option<u64>,
}

fn refuse<T>(code: ErrorCode, message: &str) -> Result<T, GameError> {
    Err(GameError::new(code, message))
}

impl GameState {
    /// A game at the start of round 1; pushes its `RoundStart`.
    pub fn new(
        setup: &GameSetup,
        started_at_ms: u64,
        now: Instant,
        timing: Timing,
        out: &mut Vec<ServerMsg>,
    ) -> GameState {
        let player = |p: &RecordPlayer| PlayerInfo {
            name: p.name.clone(),
            rating: p.rating,
            guest: p.guest,
            bot: crate::bots::is_bot_name(&p.name),
        };
        let info = GameInfo {
            game_id: setup.game_id,
            variant: setup.variant,
            time_control: setup.time_control,
            rated: setup.rated,
            players: SeatPair::new(player(&setup.players.one), player(&setup.players.two)),
            started_at: started_at_ms,
        };
        let tc = setup.time_control;
        let initial = Duration::from_millis(tc.per_phase_ms.unwrap_or(tc.initial_ms));
        let mut state = GameState {
            info,
            players: setup.players.clone(),
            timing,
            started: now,
            wall: (now, started_at_ms),
            hold: None,
            stalled: false,
            board: Board::new(setup.variant),
            round: 1,
            phase: Phase::Commit,
            phase_since: now,
            commits: SeatPair::default(),
            reveals: SeatPair::default(),
            escrows: SeatPair::default(),
            reveal_by: None,
            banks: Banks::new(initial, now),
            rounds: Vec::new(),
            draw_offer: None,
            connected: SeatPair::new(false, false),
            away_since: SeatPair::new(now, now),
            seq: 0,
            record: None,
            log: Vec::new(),
            next_step: 0,
            replayed_phase_at: None,
        };
        state.log_step(
            now,
            LogEntry::Start {
                setup: setup.clone(),
                started_at: started_at_ms,
            },
        );
        state.start_round(now, out);
        state
    }

    /// The steps to make durable before publishing the events that came with them.
    pub fn take_log(&mut self) -> Vec<LogStep> {
        std::mem::take(&mut self.log)
    }

    pub fn started_at(&self) -> u64 {
        self.info.started_at
    }

    pub fn result(&self) -> Option<GameResult> {
        self.record.as_ref().map(|r| r.result)
    }

    /// The finished game's record, once it has ended (shared with the database's request).
    pub fn record(&self) -> Option<&Arc<GameRecord>> {
        self.record.as_ref()
    }

    /// Every round played, in order.
    pub fn rounds(&self) -> &[RoundLog] {
        match &self.record {
            Some(record) => &record.rounds,
            None => &self.rounds,
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn clocks_ms(&self, now: Instant) -> SeatPair<u64> {
        self.banks.ms_at(now)
    }

    /// One seat's action. The caller has bound `seat` to the connection that sent it.
    pub fn act(
        &mut self,
        seat: Seat,
        action: SeatAction,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        self.tick(now, out);
        if self.record.is_some() {
            return refuse(ErrorCode::GameOver, "the game has ended");
        }
        match action {
            SeatAction::Commit {
                round,
                commitment,
                pick,
                nonce,
            } => self.commit(seat, round, &commitment, (pick, nonce.as_deref()), now, out),
            SeatAction::Reveal { round, pick, nonce } => {
                self.reveal(seat, round, pick, &nonce, now, out)
            }
            SeatAction::Resign => {
                self.finish(now, Some(seat.other()), EndReason::Resignation, out);
                Ok(())
            }
            SeatAction::Abort => self.abort(now, out),
            SeatAction::OfferDraw => {
                self.offer_draw(seat, now, out);
                Ok(())
            }
            SeatAction::DeclineDraw => self.decline_draw(seat, out),
            SeatAction::ClaimWin => self.claim_win(seat, now, out),
        }
    }

    /// The `RatingUpdate` event for durably recorded rating changes.
    pub fn rating_update(&mut self, ratings: SeatPair<RatingChange>) -> ServerMsg {
        ServerMsg::RatingUpdate {
            game_id: self.info.game_id,
            seq: self.next_seq(),
            ratings,
        }
    }

    pub fn snapshot(&self, now: Instant, spectators: u32) -> GameSnapshot {
        GameSnapshot {
            game: self.info.clone(),
            seq: self.seq,
            round: self.round,
            phase: self.phase,
            committed: self.commits.map(|c| c.is_some()),
            revealed: self.reveals.map(|r| r.is_some()),
            positions: self.board.positions().to_vec(),
            clocks: self.banks.wire(now),
            rounds: self.rounds().iter().map(round_record).collect(),
            connected: self.connected,
            spectators,
            draw_offer: self.draw_offer,
            result: self.result(),
        }
    }

    /// The game as the live-games listing shows it.
    pub fn summary(&self, spectators: u32) -> LiveGame {
        LiveGame {
            game_id: self.info.game_id,
            variant: self.info.variant,
            time_control: self.info.time_control,
            rated: self.info.rated,
            players: self.info.players.clone(),
            round: self.round,
            positions: self.board.positions().to_vec(),
            spectators,
            correspondence: self.per_phase().is_some(),
        }
    }

    /// Queues a step for the durable log, stamped with the clocks and `seq` as they are now.
    fn log_step(&mut self, now: Instant, entry: LogEntry) {
        let step = LogStep {
            step: self.next_step,
            at: self.wall_ms(now),
            banks_us: self.banks.us_at(now),
            seq: self.seq,
            entry,
        };
        self.next_step += 1;
        self.log.push(step);
    }

    /// `now` in Unix milliseconds, as measured from the game's wall-clock basis.
    fn wall_ms(&self, now: Instant) -> u64 {
        let (basis, basis_ms) = self.wall;
        basis_ms.saturating_add(duration_ms(now.saturating_duration_since(basis)))
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}
