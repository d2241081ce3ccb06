//! Seeks, challenges and rematch offers: what one player opens and another accepts.

use elementals_protocol::messages::{Challenge, GameId, PlayerInfo, SeatPair, Seek, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::rematches::Rematchable;
use super::start::new_game_id;
use super::{Lobby, OpenChallenge, OpenSeek, Result, MAX_OPEN_PER_ACCOUNT};
use crate::bus::ConnId;
use crate::lobby::{LobbyError, Member};
use crate::record::AccountId;

impl Lobby {
    pub(super) fn create_seek(
        &mut self,
        member: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Seek> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        if self.queued.contains_key(&member.account) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyQueued,
                "already waiting in a pool: leave it first",
            ));
        }
        let open = self
            .seeks
            .values()
            .filter(|s| s.member.account == member.account)
            .count();
        if open >= MAX_OPEN_PER_ACCOUNT {
            return Err(LobbyError::new(
                ErrorCode::TooManyRequests,
                "too many open seeks",
            ));
        }
        let seek = Seek {
            seek_id: self.next_id(),
            by: member.info.clone(),
            variant,
            time_control: tc,
            rated,
        };
        self.touch(&member);
        self.seeks.insert(
            seek.seek_id,
            OpenSeek {
                seek: seek.clone(),
                member,
            },
        );
        Ok(seek)
    }

    pub(super) fn cancel_seek(&mut self, account: AccountId, seek_id: u64) -> Result<()> {
        self.own_seek(account, seek_id)?;
        self.drop_seeks(|s| s.seek.seek_id == seek_id);
        Ok(())
    }

    /// Whether `seek_id` is an open seek of `account`'s.
    pub(super) fn own_seek(&self, account: AccountId, seek_id: u64) -> Result<()> {
        match self.seeks.get(&seek_id) {
            Some(s) if s.member.account == account => Ok(()),
            _ => Err(LobbyError::new(
                ErrorCode::UnknownSeek,
                "no such seek of yours",
            )),
        }
    }

    pub(super) fn accept_seek(&mut self, member: Member, seek_id: u64) -> Result<()> {
        let Some(open) = self.seeks.get(&seek_id) else {
            return Err(LobbyError::new(ErrorCode::UnknownSeek, "no such open seek"));
        };
        if open.member.account == member.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "you cannot accept your own seek",
            ));
        }
        if open.seek.rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot accept rated seeks",
            ));
        }
        self.ready_for_new_game(member.account, &open.seek.time_control)?;
        if !self.maker_free(&open.member, &open.seek.time_control) {
            self.drop_seeks(|s| s.seek.seek_id == seek_id);
            return Err(seek_gone());
        }
        let open = self.seeks.remove(&seek_id).expect("checked above");
        self.touch(&open.member);
        let _ = self
            .bus
            .send_msg(open.member.conn_id, &ServerMsg::SeekRemoved { seek_id });
        self.start_game(
            new_game_id(),
            open.member,
            member,
            open.seek.variant,
            open.seek.time_control,
            open.seek.rated,
        )
    }

    /// Challenges `opponent`, online as `found` (account, connection, name) on any node.
    pub(super) fn challenge(
        &mut self,
        member: Member,
        opponent: &str,
        found: Option<(AccountId, ConnId, String)>,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Challenge> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        let Some((to, to_conn, to_name)) = found else {
            return Err(LobbyError::new(
                ErrorCode::UnknownPlayer,
                format!("{opponent} is not online"),
            ));
        };
        let challenge = self.open_challenge(member, (to, to_conn, to_name), variant, tc, rated)?;
        let _ = self.bus.send_msg(
            to_conn,
            &ServerMsg::ChallengeReceived {
                challenge: challenge.clone(),
            },
        );
        Ok(challenge)
    }

    /// Opens a challenge from `member` to `to` (account, connection, name), who has not
    /// been told yet.
    pub(super) fn open_challenge(
        &mut self,
        member: Member,
        (to, to_conn, to_name): (AccountId, ConnId, String),
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Challenge> {
        if to == member.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "you cannot challenge yourself",
            ));
        }
        let open = self
            .challenges
            .values()
            .filter(|c| c.from.account == member.account)
            .count();
        if open >= MAX_OPEN_PER_ACCOUNT {
            return Err(LobbyError::new(
                ErrorCode::TooManyRequests,
                "too many open challenges",
            ));
        }
        let challenge = Challenge {
            challenge_id: self.next_id(),
            from: member.info.clone(),
            to: to_name,
            variant,
            time_control: tc,
            rated,
        };
        self.touch(&member);
        self.challenges.insert(
            challenge.challenge_id,
            OpenChallenge {
                challenge: challenge.clone(),
                from: member,
                to,
                to_conn,
            },
        );
        Ok(challenge)
    }

    pub(super) fn accept_challenge(&mut self, member: Member, challenge_id: u64) -> Result<()> {
        let Some(open) = self
            .challenges
            .get(&challenge_id)
            .filter(|c| c.to == member.account)
        else {
            return Err(no_such_challenge());
        };
        let tc = open.challenge.time_control;
        self.check_challenged(&member, open.challenge.rated, &tc)?;
        let open = self
            .challenges
            .remove(&challenge_id)
            .expect("checked above");
        self.touch(&open.from);
        if !self.maker_free(&open.from, &tc) {
            return Err(challenger_gone());
        }
        let c = open.challenge;
        self.start_game(
            new_game_id(),
            open.from,
            member,
            c.variant,
            c.time_control,
            c.rated,
        )
    }

    pub(super) fn decline_challenge(
        &mut self,
        account: AccountId,
        challenge_id: u64,
    ) -> Result<()> {
        match self.challenges.get(&challenge_id) {
            Some(c) if c.to == account => {
                let c = self
                    .challenges
                    .remove(&challenge_id)
                    .expect("checked above");
                self.touch(&c.from);
                let _ = self.bus.send_msg(
                    c.from.conn_id,
                    &ServerMsg::ChallengeDeclined { challenge_id },
                );
                Ok(())
            }
            _ => Err(no_such_challenge()),
        }
    }

    pub(super) fn cancel_challenge(&mut self, account: AccountId, challenge_id: u64) -> Result<()> {
        match self.challenges.get(&challenge_id) {
            Some(c) if c.from.account == account => {
                self.withdraw_challenge(challenge_id);
                Ok(())
            }
            _ => Err(LobbyError::new(
                ErrorCode::UnknownChallenge,
                "no such challenge from you",
            )),
        }
    }

    /// A rematch offer for an ended game (on any node: its node told the lobby); the
    /// opponent is found by name on any node.
    pub(super) async fn offer_rematch(&mut self, member: Member, game_id: GameId) -> Result<()> {
        let (seat, now) = self.note_rematch_offer(&member, game_id)?;
        let opponent = *now.game.players.get(seat.other());
        let name = &now.game.infos.get(seat.other()).name;
        let Some((account, conn, _)) = self.services.registry.find_online(name).await else {
            return Err(opponent_offline());
        };
        if account != opponent {
            return Err(opponent_offline());
        }
        let info = now.game.infos.get(seat.other()).clone();
        self.rematch(member, new_game_id(), seat, &now, (conn, info))
    }

    /// `member`'s seat in ended game `game_id`, as the lobby remembers it.
    fn seat_in_ended(&self, member: &Member, game_id: GameId) -> Option<Seat> {
        let players = self.ended.get(&game_id)?.game.players;
        if players.one == member.account {
            Some(Seat::One)
        } else if players.two == member.account {
            Some(Seat::Two)
        } else {
            None
        }
    }

    /// Records `member`'s offer of a rematch of ended game `game_id`; returns their seat
    /// in it and the game as it now stands.
    pub(super) fn note_rematch_offer(
        &mut self,
        member: &Member,
        game_id: GameId,
    ) -> Result<(Seat, Rematchable)> {
        let no = || {
            LobbyError::new(
                ErrorCode::NoRematch,
                "no finished game of yours with that id",
            )
        };
        let seat = self.seat_in_ended(member, game_id).ok_or_else(no)?;
        let tc = self.ended.get(&game_id).ok_or_else(no)?.game.time_control;
        self.ready_for_new_game(member.account, &tc)?;
        let now = self.ended.set_offer(&game_id, seat, true).ok_or_else(no)?;
        Ok((seat, now))
    }

    /// `decline_rematch`: withdraws the opponent's offer of a rematch of `game_id`, and
    /// tells them wherever they are connected (found as an offer finds them). An offerer
    /// who has left is told nothing: the offer is withdrawn all the same.
    pub(super) async fn decline_rematch(&mut self, member: Member, game_id: GameId) -> Result<()> {
        let (seat, now) = self.note_rematch_declined(&member, game_id)?;
        let opponent = *now.game.players.get(seat.other());
        let name = &now.game.infos.get(seat.other()).name;
        if let Some((account, conn, _)) = self.services.registry.find_online(name).await {
            if account == opponent {
                let declined = ServerMsg::RematchDeclined { game_id, by: seat };
                let _ = self.bus.send_msg(conn, &declined);
            }
        }
        Ok(())
    }

    /// Withdraws the standing rematch offer of `member`'s opponent in ended game
    /// `game_id`; returns `member`'s seat and the game as it now stands.
    pub(super) fn note_rematch_declined(
        &mut self,
        member: &Member,
        game_id: GameId,
    ) -> Result<(Seat, Rematchable)> {
        let no = || {
            LobbyError::new(
                ErrorCode::NoRematch,
                "no rematch offer from your opponent in that game",
            )
        };
        let seat = self.seat_in_ended(member, game_id).ok_or_else(no)?;
        let offered = self.ended.get(&game_id).ok_or_else(no)?.offers;
        if !*offered.get(seat.other()) {
            return Err(no());
        }
        let now = self
            .ended
            .set_offer(&game_id, seat.other(), false)
            .ok_or_else(no)?;
        Ok((seat, now))
    }

    /// Tells the opponent (connected at `opponent.0`, as `opponent.1`) of the offer from
    /// `seat` in ended game `now`, or, if they have offered too, starts the rematch as
    /// game `rematch`.
    pub(super) fn rematch(
        &mut self,
        member: Member,
        rematch: GameId,
        seat: Seat,
        now: &Rematchable,
        (opponent_conn, opponent_info): (ConnId, PlayerInfo),
    ) -> Result<()> {
        let ended = &now.game;
        let game_id = ended.game_id;
        let opponent = *ended.players.get(seat.other());
        if !*now.offers.get(seat.other()) {
            let _ = self.bus.send_msg(
                opponent_conn,
                &ServerMsg::RematchOffered { game_id, by: seat },
            );
            return Ok(());
        }
        if self.has_room(opponent, &ended.time_control).is_err() {
            return Err(opponent_in_game());
        }
        self.ended.forget(&game_id);
        // Both carry their ratings as the game left them (the connection's own are as of
        // its sign-in).
        let mut member = member;
        member.info.rating = *ended.ratings.get(seat);
        let mut info = opponent_info;
        info.rating = *ended.ratings.get(seat.other());
        let opp = Member {
            account: opponent,
            info,
            conn_id: opponent_conn,
        };
        // Seats swap: the old seat two now plays seat one.
        let players = match seat {
            Seat::One => SeatPair::new(opp, member),
            Seat::Two => SeatPair::new(member, opp),
        };
        let settings = (ended.variant, ended.time_control, ended.rated);
        self.start_game_seated(rematch, players, None, settings)
    }
}

impl Lobby {
    /// What accepting a challenge requires of the challenged `member`, here or on any node.
    pub(super) fn check_challenged(
        &self,
        member: &Member,
        rated: bool,
        tc: &TimeControl,
    ) -> Result<()> {
        if rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot play rated games",
            ));
        }
        self.ready_for_new_game(member.account, tc)
    }

    /// Whether the maker of a seek or challenge of time control `tc`, as this node sees
    /// them, can still play it (room for it, still connected).
    pub(super) fn maker_free(&self, maker: &Member, tc: &TimeControl) -> bool {
        self.has_room(maker.account, tc).is_ok() && !self.bus.is_closed(maker.conn_id)
    }
}

pub(super) fn no_such_challenge() -> LobbyError {
    LobbyError::new(ErrorCode::UnknownChallenge, "no such challenge to you")
}

pub(super) fn challenger_gone() -> LobbyError {
    LobbyError::new(
        ErrorCode::UnknownChallenge,
        "the challenger is no longer available",
    )
}

pub(super) fn seek_gone() -> LobbyError {
    LobbyError::new(ErrorCode::UnknownSeek, "the seek is no longer open")
}

/// A rematch accepted while the opponent is in (or being seated in) another game.
pub(super) fn opponent_in_game() -> LobbyError {
    LobbyError::new(ErrorCode::AlreadyInGame, "your opponent is in another game")
}

/// A rematch offered to an opponent who is not online.
pub(super) fn opponent_offline() -> LobbyError {
    LobbyError::new(ErrorCode::UnknownPlayer, "your opponent is not online")
}
