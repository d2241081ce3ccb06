//! Cluster mode's pools as a member meets them: joining one (paired at once, or queued),
//! a member another node has paired forgotten, a pairing's game started here, and the
//! seating mark of a game this node has heard end lifted.

use std::future::Future;

use elementals_protocol::messages::{GameId, ServerMsg};
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::time::Instant;

use super::cluster::{shared_key, unreachable_redis};
use super::{Lobby, PoolKey};
use crate::lobby::shared::{Paired, SharedError, Taken};
use crate::lobby::{LobbyError, Member};
use crate::record::AccountId;

impl Lobby {
    pub(super) async fn join_shared(
        &mut self,
        reply: crate::bus::ReplyTo,
        member: Member,
        variant: elementals_protocol::rules::Variant,
        preset: String,
        rated: bool,
    ) -> super::Result<()> {
        self.forget_if_paired(member.account).await?;
        let (key, tc) = self.check_join(&member, variant, preset, rated)?;
        let shared = self.shared_pools();
        let joined = shared.join(&shared_key(&key), &member).await;
        let paired = match joined {
            Ok(paired) => self.unless_held_by_over(&key, member.account, paired).await,
            Err(e) => Err(e),
        }
        .map_err(|e| {
            // It may have joined before the answer was lost: withdrawn again.
            self.leave_later(key.clone(), member.account);
            unreachable_redis(&e)
        })?;
        if let Paired::AlreadyWaiting = paired {
            return Err(LobbyError::new(
                ErrorCode::AlreadyQueued,
                "already waiting in a pool",
            ));
        }
        // Queued before the pairing's `game_start` (sent by a task `start_game` spawns).
        let _ = self.bus.send_msg(
            reply.conn,
            &ServerMsg::Queued {
                id: reply.request_id.unwrap_or_default(),
                variant: key.variant,
                time_control: tc,
                rated: key.rated,
            },
        );
        match paired {
            Paired::With(other, game) => self.start_shared_game(&key, member, other, game),
            _ => {
                self.shared_since.insert(member.account, Instant::now());
                self.queued.insert(member.account, (key, member));
                self.update_queued_metric();
            }
        }
        Ok(())
    }

    /// A member queued here whom another node has paired since this node's last tick
    /// waits no more: forgotten now (one look at its pool, only then), so that it may
    /// queue again at once.
    pub(super) async fn forget_if_paired(&mut self, account: AccountId) -> super::Result<()> {
        let Some((key, _)) = self.queued.get(&account) else {
            return Ok(());
        };
        let waiting = self
            .shared_pools()
            .is_waiting(&shared_key(key), account)
            .await
            .map_err(|e| unreachable_redis(&e))?;
        if !waiting {
            self.queued.remove(&account);
            self.shared_since.remove(&account);
            self.update_queued_metric();
        }
        Ok(())
    }

    /// Starts game `game`, for which a pool of the cluster's has paired `mine` with
    /// `other`.
    pub(super) fn start_shared_game(
        &mut self,
        key: &PoolKey,
        mine: Member,
        other: Member,
        game: GameId,
    ) {
        let account = mine.account;
        let tc = TimeControl::preset(&key.preset).expect("pool keys hold valid presets");
        if let Err(error) = self.start_game(game, mine, other, key.variant, tc, key.rated) {
            tracing::error!(account, message = %error.message, "a pool paired an account with itself");
        }
    }

    /// `paired`, what the pool answered for `account`; but a member held there by the
    /// seating mark of a game this node has heard end is paired again at once, that mark
    /// lifted.
    ///
    /// The mark keeps other pairings and acceptances off a player while every node learns
    /// that they are seated. Once their game is over they are free, and nothing can still
    /// take them for it: a pool pairs only members who joined after it (their node
    /// refuses a seated player), and a seek, challenge or rematch only for their own
    /// request, which their node's lobby handles in turn with this one. The mark is lifted
    /// only if it is still that game's (a newer game's mark holds them on).
    pub(super) async fn unless_held_by_over(
        &self,
        key: &PoolKey,
        account: AccountId,
        paired: Paired,
    ) -> Result<Paired, SharedError> {
        match paired {
            Paired::Waiting {
                held: Some(game), ..
            } if self.is_over(game) => {
                self.shared_pools()
                    .pair(&shared_key(key), account, Some(game))
                    .await
            }
            paired => Ok(paired),
        }
    }

    /// Takes players for a game by `take` (a seek's or challenge's acceptance, a game
    /// against the computer), with no mark lifted; if the only thing that refused it is the
    /// acceptor's mark of a game this node has heard end, takes them again with that mark
    /// lifted (the reasoning of `unless_held_by_over`).
    pub(super) async fn take_unless_held_by_over<F, Fut>(&self, take: F) -> super::Result<Taken>
    where
        F: Fn(Option<GameId>) -> Fut,
        Fut: Future<Output = Result<Taken, SharedError>>,
    {
        let taken = take(None).await.map_err(|e| unreachable_redis(&e))?;
        match taken {
            Taken::AcceptorSeating(Some(game)) if self.is_over(game) => {
                take(Some(game)).await.map_err(|e| unreachable_redis(&e))
            }
            taken => Ok(taken),
        }
    }

    /// Whether this node knows game `game` is over: it ended here, or another node said so.
    fn is_over(&self, game: GameId) -> bool {
        let registry = &self.services.registry;
        registry.finished_game(&game).is_some() || registry.finished_elsewhere(&game).is_some()
    }
}
