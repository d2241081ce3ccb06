//! What players do besides picking: coming and going, draw offers, claiming an abandoned game.

use std::time::Instant;

use elementals_protocol::messages::{EndReason, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

use super::{duration_ms, refuse, GameState};
use crate::game::GameError;

impl GameState {
    /// A seat's connection arrived; announced if the seat was away and the game is on.
    pub fn attach(&mut self, seat: Seat, now: Instant, out: &mut Vec<ServerMsg>) {
        self.tick(now, out);
        if !std::mem::replace(self.connected.get_mut(seat), true) {
            self.emit_presence(seat, true, out);
        }
        self.release_if_both_back(now, out);
    }

    /// A seat's connection left; the grace period starts now.
    pub fn detach(&mut self, seat: Seat, now: Instant, out: &mut Vec<ServerMsg>) {
        self.tick(now, out);
        if std::mem::replace(self.connected.get_mut(seat), false) {
            *self.away_since.get_mut(seat) = now;
            self.emit_presence(seat, false, out);
        }
    }

    pub(super) fn offer_draw(&mut self, seat: Seat, now: Instant, out: &mut Vec<ServerMsg>) {
        match self.draw_offer {
            Some(by) if by == seat.other() => self.finish(now, None, EndReason::DrawAgreed, out),
            // Repeating one's own standing offer changes nothing.
            Some(_) => {}
            None => {
                self.draw_offer = Some(seat);
                let (game_id, seq) = (self.info.game_id, self.next_seq());
                out.push(ServerMsg::DrawOffered {
                    game_id,
                    seq,
                    by: seat,
                });
            }
        }
    }

    pub(super) fn decline_draw(
        &mut self,
        seat: Seat,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        if self.draw_offer != Some(seat.other()) {
            return refuse(
                ErrorCode::NoDrawOffer,
                "the opponent has not offered a draw",
            );
        }
        self.draw_offer = None;
        let (game_id, seq) = (self.info.game_id, self.next_seq());
        out.push(ServerMsg::DrawDeclined {
            game_id,
            seq,
            by: seat,
        });
        Ok(())
    }

    /// Either player may call the game off until both have committed in round 1, as the
    /// first-commit window does when it runs out: no winner, no rating change.
    pub(super) fn abort(
        &mut self,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        if !self.in_first_commit_window() {
            return refuse(
                ErrorCode::AbortNotAllowed,
                "both players have committed in round 1: resign instead",
            );
        }
        self.finish(now, None, EndReason::Aborted, out);
        Ok(())
    }

    pub(super) fn claim_win(
        &mut self,
        seat: Seat,
        now: Instant,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), GameError> {
        // A correspondence player is away most of the time: the deadline decides.
        if self.per_phase().is_some() {
            return refuse(
                ErrorCode::ClaimNotAllowed,
                "a correspondence game is decided by its deadlines, not by absence",
            );
        }
        // Only absence that holds the game up counts: time away while the opponent's own
        // move was done and only this seat's was outstanding blames nobody.
        let opponent = seat.other();
        let waited = self.outstanding_since(opponent).map(|since| {
            let from = since.max(*self.away_since.get(opponent));
            now.saturating_duration_since(from)
        });
        let abandoned = waited.is_some_and(|waited| waited >= self.timing.grace);
        if *self.connected.get(opponent) || !abandoned {
            return refuse(
                ErrorCode::ClaimNotAllowed,
                "the opponent is connected, owes no move, or is still within the grace period",
            );
        }
        self.finish(now, Some(seat), EndReason::Abandoned, out);
        Ok(())
    }

    fn emit_presence(&mut self, seat: Seat, connected: bool, out: &mut Vec<ServerMsg>) {
        // Comings and goings after the end concern nobody: the snapshot still shows them.
        if self.record.is_some() {
            return;
        }
        // No grace in a correspondence game: nobody may claim it (`claim_win`).
        let grace = match self.per_phase() {
            Some(_) => std::time::Duration::ZERO,
            None => self.timing.grace,
        };
        out.push(ServerMsg::Presence {
            game_id: self.info.game_id,
            seq: self.next_seq(),
            seat,
            connected,
            grace_ms: duration_ms(grace),
        });
    }
}
