//! Seeks, challenges and rematch offers: what one player opens and another accepts.

use elementals_protocol::messages::{Challenge, GameId, PlayerInfo, Seek, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

use super::start::new_game_id;
use super::{Lobby, OpenChallenge, OpenSeek, Result, MAX_OPEN_PER_ACCOUNT};
use crate::bus::ConnId;
use crate::lobby::{LobbyError, Member};
use crate::record::AccountId;
use crate::registry::FinishedGame;

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
        self.seeks.remove(&seek_id);
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
        self.ready_for_new_game(member.account)?;
        if !self.maker_free(&open.member) {
            self.seeks.remove(&seek_id);
            return Err(seek_gone());
        }
        let open = self.seeks.remove(&seek_id).expect("checked above");
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

    pub(super) fn challenge(
        &mut self,
        member: Member,
        opponent: String,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Challenge> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        let Some((to, user)) = self.services.registry.online_by_name(&opponent) else {
            return Err(LobbyError::new(
                ErrorCode::UnknownPlayer,
                format!("{opponent} is not online"),
            ));
        };
        let challenge =
            self.open_challenge(member, (to, user.conn_id, user.name), variant, tc, rated)?;
        let _ = self.bus.send_msg(
            user.conn_id,
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
        self.check_challenged(&member, open.challenge.rated)?;
        let open = self
            .challenges
            .remove(&challenge_id)
            .expect("checked above");
        if !self.maker_free(&open.from) {
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

    pub(super) fn offer_rematch(&mut self, member: Member, game_id: GameId) -> Result<()> {
        let (seat, now) = self.note_rematch_offer(&member, game_id)?;
        let opponent = *now.players.get(seat.other());
        let Some(user) = self.services.registry.online(opponent) else {
            return Err(opponent_offline());
        };
        let opponent = (user.conn_id, user.info);
        self.rematch(member, (game_id, new_game_id()), seat, &now, opponent)
    }

    /// Records `member`'s offer of a rematch of finished game `game_id`; returns their
    /// seat in it and the game as it now stands.
    pub(super) fn note_rematch_offer(
        &mut self,
        member: &Member,
        game_id: GameId,
    ) -> Result<(Seat, FinishedGame)> {
        let registry = self.services.registry.clone();
        let no = || {
            LobbyError::new(
                ErrorCode::NoRematch,
                "no finished game of yours with that id",
            )
        };
        let finished = registry.finished_game(&game_id).ok_or_else(no)?;
        let seat = if finished.players.one == member.account {
            Seat::One
        } else if finished.players.two == member.account {
            Seat::Two
        } else {
            return Err(no());
        };
        self.ready_for_new_game(member.account)?;
        let now = registry.offer_rematch(&game_id, seat).ok_or_else(no)?;
        Ok((seat, now))
    }

    /// Tells the opponent (connected at `opponent.0`, as `opponent.1`) of the offer from
    /// `seat` in finished game `game_id`, or, if they have offered too, starts the rematch
    /// as game `rematch`.
    pub(super) fn rematch(
        &mut self,
        member: Member,
        (game_id, rematch): (GameId, GameId),
        seat: Seat,
        now: &FinishedGame,
        (opponent_conn, opponent_info): (ConnId, PlayerInfo),
    ) -> Result<()> {
        let registry = self.services.registry.clone();
        let opponent = *now.players.get(seat.other());
        if !*now.rematch_offers.get(seat.other()) {
            let _ = self.bus.send_msg(
                opponent_conn,
                &ServerMsg::RematchOffered { game_id, by: seat },
            );
            return Ok(());
        }
        if registry.is_seated(opponent) {
            return Err(opponent_in_game());
        }
        registry.forget_finished(&game_id);
        // Both carry their ratings as the game left them (the connection's own are as of
        // its sign-in).
        let mut member = member;
        member.info.rating = *now.ratings.get(seat);
        let mut info = opponent_info;
        info.rating = *now.ratings.get(seat.other());
        let opp = Member {
            account: opponent,
            info,
            conn_id: opponent_conn,
        };
        // Seats swap: the old seat two now plays seat one.
        let (one, two) = match seat {
            Seat::One => (opp, member),
            Seat::Two => (member, opp),
        };
        let (variant, tc) = (now.variant, now.time_control);
        self.start_game_seated(rematch, one, two, variant, tc, now.rated)
            .map(drop)
    }
}

impl Lobby {
    /// What accepting a challenge requires of the challenged `member`, here or on any node.
    pub(super) fn check_challenged(&self, member: &Member, rated: bool) -> Result<()> {
        if rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot play rated games",
            ));
        }
        self.ready_for_new_game(member.account)
    }

    /// Whether the maker of a seek or challenge, as this node sees them, can still play
    /// it (not seated in a game, still connected).
    pub(super) fn maker_free(&self, maker: &Member) -> bool {
        !self.services.registry.is_seated(maker.account) && !self.bus.is_closed(maker.conn_id)
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
