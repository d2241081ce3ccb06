//! Challenges in cluster mode: the challenged player may be online on another node
//! (presence by name says where); the challenge is kept by the challenger's node and in
//! Redis, where whichever node the challenged player answers from takes it, once.

use elementals_protocol::messages::{Challenge, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};

use super::cluster::{seating_elsewhere, unreachable_redis};
use super::offers::{challenger_gone, no_such_challenge};
use super::{Lobby, Result};
use crate::lobby::shared::{SharedChallenge, Taken};
use crate::lobby::{LobbyError, Member};
use crate::record::AccountId;

impl Lobby {
    pub(super) async fn challenge_shared(
        &mut self,
        member: Member,
        opponent: String,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Challenge> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        let shared = self.shared_pools();
        let to = match self.services.registry.online_by_name(&opponent) {
            Some((account, user)) => Some((account, user.conn_id, user.name)),
            None => shared
                .find_online(&opponent)
                .await
                .map_err(|e| unreachable_redis(&e))?,
        };
        let Some(to) = to else {
            return Err(LobbyError::new(
                ErrorCode::UnknownPlayer,
                format!("{opponent} is not online"),
            ));
        };
        let from = member.clone();
        let (to_account, to_conn) = (to.0, to.1);
        let challenge = self.open_challenge(member, to, variant, tc, rated)?;
        let stored = SharedChallenge {
            challenge: challenge.clone(),
            from,
            to: to_account,
            to_conn,
        };
        // Stored before the challenged player hears of it, so their answer finds it.
        if let Err(e) = shared.put_challenge(&stored).await {
            self.challenges.remove(&challenge.challenge_id);
            return Err(unreachable_redis(&e));
        }
        let _ = self.bus.send_msg(
            to_conn,
            &ServerMsg::ChallengeReceived {
                challenge: challenge.clone(),
            },
        );
        Ok(challenge)
    }

    /// Challenge `id` to `account`, from the cluster's store.
    async fn challenge_to(&mut self, account: AccountId, id: u64) -> Result<SharedChallenge> {
        let shared = self.shared_pools();
        let c = shared
            .get_challenge(id)
            .await
            .map_err(|e| unreachable_redis(&e))?
            .filter(|c| c.to == account)
            .ok_or_else(no_such_challenge)?;
        Ok(c)
    }

    async fn take(&mut self, id: u64) -> Result<()> {
        let taken = self
            .shared_pools()
            .take_challenge(id)
            .await
            .map_err(|e| unreachable_redis(&e))?;
        self.challenges.remove(&id);
        if taken {
            Ok(())
        } else {
            Err(no_such_challenge())
        }
    }

    pub(super) async fn accept_challenge_shared(&mut self, member: Member, id: u64) -> Result<()> {
        let c = self.challenge_to(member.account, id).await?;
        self.check_challenged(&member, c.challenge.rated)?;
        let shared = self.shared_pools();
        let alive = shared
            .node_alive(crate::bus::redis::node_of(c.from.conn_id))
            .await
            .map_err(|e| unreachable_redis(&e))?;
        if !alive || !self.maker_free(&c.from) {
            self.take(id).await?;
            return Err(challenger_gone());
        }
        // Taken, and both players marked seating, in one step (as a seek: see
        // `accept_shared_seek`).
        let (acceptor, maker) = (member.account, c.from.account);
        let taken = self
            .take_unless_held_by_over(|over| shared.accept_challenge(id, acceptor, maker, over))
            .await?;
        let game = match taken {
            Taken::Taken(game) => {
                self.challenges.remove(&id);
                game
            }
            Taken::NotOpen => {
                self.challenges.remove(&id);
                return Err(no_such_challenge());
            }
            Taken::MakerSeating => return Err(challenger_gone()),
            Taken::AcceptorSeating(_) => return Err(seating_elsewhere()),
        };
        let g = c.challenge;
        self.start_game(game, c.from, member, g.variant, g.time_control, g.rated)
    }

    pub(super) async fn decline_challenge_shared(
        &mut self,
        account: AccountId,
        id: u64,
    ) -> Result<()> {
        let c = self.challenge_to(account, id).await?;
        self.take(id).await?;
        let _ = self.bus.send_msg(
            c.from.conn_id,
            &ServerMsg::ChallengeDeclined { challenge_id: id },
        );
        Ok(())
    }

    pub(super) async fn cancel_challenge_shared(
        &mut self,
        account: AccountId,
        id: u64,
    ) -> Result<()> {
        match self.challenges.get(&id) {
            Some(c) if c.from.account == account => {}
            _ => {
                return Err(LobbyError::new(
                    ErrorCode::UnknownChallenge,
                    "no such challenge from you",
                ))
            }
        }
        let taken = self
            .shared_pools()
            .take_challenge(id)
            .await
            .map_err(|e| unreachable_redis(&e))?;
        if !taken {
            // Answered on another node meanwhile.
            self.challenges.remove(&id);
            return Err(LobbyError::new(
                ErrorCode::UnknownChallenge,
                "the challenge was answered meanwhile",
            ));
        }
        self.withdraw_challenge(id);
        self.shared_challenge_drops.retain(|d| *d != id);
        Ok(())
    }

    /// Forgets this node's challenges answered on another node.
    pub(super) async fn reconcile_challenges(&mut self) {
        let ids: Vec<u64> = self.challenges.keys().copied().collect();
        match self.shared_pools().open_challenges(&ids).await {
            Ok(open) => {
                for (id, open) in ids.iter().zip(open) {
                    if !open {
                        self.challenges.remove(id);
                    }
                }
            }
            Err(error) => tracing::error!(%error, "looking up the cluster's challenges"),
        }
    }
}
