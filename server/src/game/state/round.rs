//! One round: commitments, reveals, and playing the picks on the board.

use std::time::{Duration, Instant};

use elementals_protocol::commitment::{self, COMMITMENT_LEN, NONCE_LEN};
use elementals_protocol::messages::{EndReason, Phase, RoundRecord, SeatPair, ServerMsg};
use elementals_protocol::rules::{Element, Seat};
use elementals_protocol::ErrorCode;

use super::{duration_ms, refuse, GameState};
use crate::game::GameError;
use crate::record::{Escrow, Hash32, LogEntry, RoundLog};

impl GameState {
    /// A commitment, with the reveal escrowed if `escrow` holds a pick and a nonce.
    pub(super) fn commit(
        &mut self,
        seat: Seat,
        round: u32,
        commitment: &[u8],
        escrow: (Option<Element>, Option<&[u8]>),
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        self.check_round(round)?;
        let Ok(commitment) = <[u8; COMMITMENT_LEN]>::try_from(commitment) else {
            return refuse(ErrorCode::BadCommitment, "a commitment is exactly 32 bytes");
        };
        if self.phase != Phase::Commit || self.commits.get(seat).is_some() {
            return refuse(ErrorCode::AlreadyCommitted, "already committed this round");
        }
        if *self.commits.get(seat.other()) == Some(commitment) {
            return refuse(
                ErrorCode::DuplicateCommitment,
                "the commitment equals the opponent's",
            );
        }
        let escrow = self.check_escrow(seat, round, &commitment, escrow)?;
        *self.commits.get_mut(seat) = Some(commitment);
        *self.escrows.get_mut(seat) = escrow;
        self.banks.set_running(self.outstanding(), now);
        let (game_id, clocks, seq) = (self.info.game_id, self.banks.wire(now), self.next_seq());
        out.push(ServerMsg::Committed {
            game_id,
            seq,
            round,
            seat,
            clocks,
        });
        self.log_step(
            now,
            LogEntry::Commit {
                round,
                seat,
                commitment: Hash32(commitment),
                escrow: escrow.map(|(pick, nonce)| Escrow {
                    pick,
                    nonce: Hash32(nonce),
                }),
            },
        );
        if self.commits.one.is_some() && self.commits.two.is_some() {
            self.phase = Phase::Reveal;
            self.phase_since = now;
            let reveal = match self.per_phase() {
                Some(per_phase) => {
                    self.banks.refill(per_phase, now);
                    per_phase
                }
                None => {
                    let window = Duration::from_millis(self.info.time_control.reveal_ms);
                    self.reveal_by = Some(now + window);
                    window
                }
            };
            self.banks.set_running(self.outstanding(), now);
            let (clocks, seq) = (self.banks.wire(now), self.next_seq());
            out.push(ServerMsg::RevealPhase {
                game_id,
                seq,
                round,
                reveal_ms: duration_ms(reveal),
                clocks,
            });
            // The server reveals for each seat that escrowed; when both did, the second
            // reveal resolves the round (and clears `escrows`, hence the copy).
            let escrows = self.escrows;
            for seat in Seat::BOTH {
                if let Some((pick, nonce)) = *escrows.get(seat) {
                    self.accept_reveal(seat, round, pick, nonce, false, now, out);
                }
            }
        }
        Ok(())
    }

    /// The escrow sent with a commit, checked against its commitment: none, or a pick and a
    /// nonce that open it. Refused (nothing changes) with the code a reveal would get, or
    /// `EscrowMismatch` when they do not open it or only one of them was sent.
    fn check_escrow(
        &self,
        seat: Seat,
        round: u32,
        commitment: &[u8; COMMITMENT_LEN],
        escrow: (Option<Element>, Option<&[u8]>),
    ) -> Result<Option<(Element, [u8; NONCE_LEN])>, GameError> {
        let (pick, nonce) = match escrow {
            (None, None) => return Ok(None),
            (Some(pick), Some(nonce)) => (pick, nonce),
            _ => {
                return refuse(
                    ErrorCode::EscrowMismatch,
                    "an escrow holds both a pick and a nonce",
                )
            }
        };
        let Ok(nonce) = <[u8; NONCE_LEN]>::try_from(nonce) else {
            return refuse(ErrorCode::BadNonce, "a nonce is exactly 32 bytes");
        };
        if !self.info.variant.is_element(pick) {
            return refuse(ErrorCode::InvalidPick, "not an element of this game");
        }
        let game_id = self.info.game_id;
        if !commitment::verify(commitment, &game_id.0, round, seat, pick, &nonce) {
            return refuse(
                ErrorCode::EscrowMismatch,
                "the escrowed pick and nonce do not match the commitment",
            );
        }
        Ok(Some((pick, nonce)))
    }

    pub(super) fn reveal(
        &mut self,
        seat: Seat,
        round: u32,
        pick: Element,
        nonce: &[u8],
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        self.check_round(round)?;
        if self.escrows.get(seat).is_some() {
            return refuse(
                ErrorCode::AlreadyRevealed,
                "the reveal was escrowed with the commit",
            );
        }
        let commitment = match (self.phase, *self.commits.get(seat)) {
            (Phase::Reveal, Some(commitment)) => commitment,
            _ => {
                return refuse(
                    ErrorCode::WrongPhase,
                    "reveal only after both have committed",
                )
            }
        };
        if self.reveals.get(seat).is_some() {
            return refuse(ErrorCode::AlreadyRevealed, "already revealed this round");
        }
        let Ok(nonce) = <[u8; NONCE_LEN]>::try_from(nonce) else {
            return refuse(ErrorCode::BadNonce, "a nonce is exactly 32 bytes");
        };
        if !self.info.variant.is_element(pick) {
            return refuse(ErrorCode::InvalidPick, "not an element of this game");
        }
        let game_id = self.info.game_id;
        if !commitment::verify(&commitment, &game_id.0, round, seat, pick, &nonce) {
            return refuse(
                ErrorCode::RevealMismatch,
                "pick and nonce do not match the commitment",
            );
        }
        self.accept_reveal(seat, round, pick, nonce, true, now, out);
        Ok(())
    }

    /// A checked reveal: `Revealed`, the log step if `logged` (an escrowed reveal's pick and
    /// nonce are logged with its commit), and the round's result once both have revealed.
    #[allow(clippy::too_many_arguments)]
    fn accept_reveal(
        &mut self,
        seat: Seat,
        round: u32,
        pick: Element,
        nonce: [u8; NONCE_LEN],
        logged: bool,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) {
        let game_id = self.info.game_id;
        *self.reveals.get_mut(seat) = Some((pick, nonce));
        self.banks.set_running(self.outstanding(), now);
        let (clocks, seq) = (self.banks.wire(now), self.next_seq());
        out.push(ServerMsg::Revealed {
            game_id,
            seq,
            round,
            seat,
            clocks,
        });
        if logged {
            self.log_step(
                now,
                LogEntry::Reveal {
                    round,
                    seat,
                    pick,
                    nonce: Hash32(nonce),
                },
            );
        }
        // Both revealed, so both committed: the reveal phase opens only then.
        if let (Some(one), Some(two), Some(c1), Some(c2)) = (
            self.reveals.one,
            self.reveals.two,
            self.commits.one,
            self.commits.two,
        ) {
            self.resolve(SeatPair::new(c1, c2), SeatPair::new(one, two), now, out);
        }
    }

    /// Both have revealed: play the round, then end the game or start the next round.
    fn resolve(
        &mut self,
        commitments: SeatPair<[u8; COMMITMENT_LEN]>,
        reveals: SeatPair<(Element, [u8; NONCE_LEN])>,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) {
        let picks = reveals.map(|(pick, _)| pick);
        let outcome = match self.board.play(picks.one, picks.two) {
            Ok(outcome) => outcome,
            // Unreachable: both picks were checked and the board had no winner. End the game
            // without blaming anyone rather than panic.
            Err(_) => return self.finish(now, None, EndReason::ServerAborted, out),
        };
        self.banks
            .add(Duration::from_millis(self.info.time_control.increment_ms));
        self.rounds.push(RoundLog {
            round: self.round,
            commitments: commitments.map(Hash32),
            nonces: reveals.map(|(_, nonce)| Hash32(nonce)),
            picks,
            outcome,
            positions: self.board.positions().to_vec(),
            clocks_ms: self.banks.ms_at(now),
            escrowed: self.escrows.map(|e| e.is_some()),
        });
        self.draw_offer = None;
        let record = self.rounds.last().map(round_record);
        let (game_id, clocks, seq) = (self.info.game_id, self.banks.wire(now), self.next_seq());
        if let Some(record) = record {
            out.push(ServerMsg::RoundResult {
                game_id,
                seq,
                record,
                clocks,
            });
        }
        if let Some(played) = self.rounds.last().cloned() {
            self.log_step(now, LogEntry::Result { round: played });
        }
        if let Some(winner) = self.board.winner() {
            return self.finish(now, Some(winner), EndReason::Edge, out);
        }
        if self.end_at_max_rounds(now, out) {
            return;
        }
        self.round += 1;
        self.start_round(now, out);
    }

    /// The current round back to its commit phase with nothing committed or revealed, and
    /// the clocks of the seats that now owe a commitment running.
    pub(super) fn clear_round(&mut self, now: Instant) {
        self.phase = Phase::Commit;
        self.phase_since = now;
        self.commits = SeatPair::default();
        self.reveals = SeatPair::default();
        self.escrows = SeatPair::default();
        self.reveal_by = None;
        if let Some(per_phase) = self.per_phase() {
            self.banks.refill(per_phase, now);
        }
        self.banks.set_running(self.outstanding(), now);
    }

    pub(super) fn start_round(&mut self, now: Instant, out: &mut Vec<ServerMsg>) {
        self.clear_round(now);
        out.push(ServerMsg::RoundStart {
            game_id: self.info.game_id,
            seq: self.next_seq(),
            round: self.round,
            clocks: self.banks.wire(now),
        });
    }

    pub(super) fn check_round(&self, round: u32) -> Result<(), GameError> {
        if round != self.round {
            return refuse(ErrorCode::WrongRound, "that is not the current round");
        }
        Ok(())
    }

    pub(super) fn in_first_commit_window(&self) -> bool {
        self.round == 1 && self.phase == Phase::Commit
    }

    /// When round 1's first-commit window closes, while it governs (live games only: a
    /// correspondence game's round 1 has its phase deadline like every other).
    pub(super) fn first_commit_deadline(&self) -> Option<Instant> {
        (self.in_first_commit_window() && self.per_phase().is_none())
            .then(|| self.started + self.timing.first_commit_window)
    }

    /// A correspondence game's time for each phase.
    pub(super) fn per_phase(&self) -> Option<Duration> {
        self.info
            .time_control
            .per_phase_ms
            .map(Duration::from_millis)
    }

    /// Since when `seat`'s commit or reveal has been outstanding, if it is: what the game
    /// waits for from it.
    pub(super) fn outstanding_since(&self, seat: Seat) -> Option<Instant> {
        let acted = match self.phase {
            Phase::Commit => self.commits.get(seat).is_some(),
            Phase::Reveal => self.reveals.get(seat).is_some(),
            Phase::Over => true,
        };
        (!acted).then_some(self.phase_since)
    }

    /// Whose bank runs: each seat whose commit or reveal is outstanding (none in a live
    /// game's round 1 commit phase, which the first-commit window governs instead, and none
    /// while held).
    pub(super) fn outstanding(&self) -> SeatPair<bool> {
        if self.hold.is_some() || self.stalled {
            return SeatPair::new(false, false);
        }
        match self.phase {
            Phase::Commit if self.round > 1 || self.per_phase().is_some() => {
                self.commits.map(|c| c.is_none())
            }
            Phase::Reveal => self.reveals.map(|r| r.is_none()),
            _ => SeatPair::new(false, false),
        }
    }
}

pub(super) fn round_record(log: &RoundLog) -> RoundRecord {
    RoundRecord {
        round: log.round,
        picks: log.picks,
        outcome: log.outcome,
        positions: log.positions.clone(),
    }
}
