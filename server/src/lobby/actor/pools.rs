//! The lobby's pools: joining and leaving one, and the tick that widens each waiting
//! player's window, pairs and starts games, and reports the queues.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::time::Instant;

use super::{Lobby, PoolKey, Result};
use crate::lobby::{LobbyError, Member};
use crate::msg::ReplyTo;
use crate::record::AccountId;

impl Lobby {
    /// What joining a pool requires; the pool and its time control.
    pub(super) fn check_join(
        &self,
        member: &Member,
        variant: Variant,
        preset: String,
        rated: bool,
    ) -> Result<(PoolKey, TimeControl)> {
        variant
            .validate()
            .map_err(|e| LobbyError::new(ErrorCode::InvalidVariant, e.to_string()))?;
        let tc = TimeControl::preset(&preset)
            .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))?;
        self.ready_for_new_game(member.account, &tc)?;
        if self.queued.contains_key(&member.account) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyQueued,
                "already waiting in a pool",
            ));
        }
        // A player waits in one pool or in their seeks, never both: a pairing would
        // otherwise withdraw seeks someone may be accepting.
        if self.has_open_seek(member.account) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyQueued,
                "you have an open seek: cancel it first",
            ));
        }
        // Guests play unrated: a guest asking for a rated pool joins the unrated one.
        let rated = rated && !member.info.guest;
        let key = PoolKey {
            variant,
            preset,
            rated,
        };
        Ok((key, tc))
    }

    pub(super) fn join_pool(
        &mut self,
        reply: ReplyTo,
        member: Member,
        variant: Variant,
        preset: String,
        rated: bool,
    ) -> Result<()> {
        let (key, tc) = self.check_join(&member, variant, preset, rated)?;
        // Queued before a pairing below can send `game_start` (the seating runs in a task
        // of its own; had the session answered, its `queued` could have come second).
        let _ = self.bus.send_msg(
            reply.conn,
            &ServerMsg::Queued {
                id: reply.request_id.unwrap_or_default(),
                variant: key.variant,
                time_control: tc,
                rated: key.rated,
            },
        );
        self.enter_pool(member, key, tc);
        Ok(())
    }

    /// Puts `member` in pool `key` (its time control `tc`), paired at once if someone
    /// waits in range.
    pub(super) fn enter_pool(&mut self, member: Member, key: PoolKey, tc: TimeControl) {
        let now = Instant::now().into_std();
        let account = member.account;
        let pool = self.pools.entry(key.clone()).or_default();
        let paired = pool.join(account as u64, member.info.rating, now);
        self.touch(&member);
        self.queued.insert(account, (key.clone(), member));
        if let Some(other) = paired {
            self.start_pool_game(&key, account, other as AccountId, tc);
        }
        self.update_queued_metric();
    }

    pub(super) fn has_open_seek(&self, account: AccountId) -> bool {
        self.seeks.values().any(|s| s.member.account == account)
    }

    pub(super) fn leave_pool(&mut self, account: AccountId) -> bool {
        let Some((key, member)) = self.queued.remove(&account) else {
            return false;
        };
        self.touch(&member);
        if let Some(pool) = self.pools.get_mut(&key) {
            pool.remove(account as u64, member.info.rating);
            if pool.is_empty() {
                self.pools.remove(&key);
            }
        }
        self.update_queued_metric();
        true
    }

    pub(super) fn update_queued_metric(&self) {
        self.services
            .metrics
            .players_queued
            .store(self.queued.len() as u64, Ordering::Relaxed);
    }

    pub(super) fn start_pool_game(
        &mut self,
        key: &PoolKey,
        a: AccountId,
        b: AccountId,
        tc: TimeControl,
    ) {
        let (Some((_, ma)), Some((_, mb))) = (self.queued.remove(&a), self.queued.remove(&b))
        else {
            return;
        };
        self.touch(&ma);
        self.touch(&mb);
        let game = super::start::new_game_id();
        if let Err(error) = self.start_game(game, ma, mb, key.variant, tc, key.rated) {
            tracing::error!(account = a, message = %error.message, "a pool paired an account with itself");
        }
    }

    pub(super) fn tick(&mut self) {
        let now = Instant::now().into_std();
        // Starts that have not shown go again (`starting.rs`).
        for game in self.starting.prune(&self.services.registry) {
            self.bus.start_game(game);
        }
        // Drop members whose connection is gone (missed `Gone` notices).
        let dead: Vec<AccountId> = self
            .queued
            .iter()
            .filter(|(_, (_, m))| self.bus.is_closed(m.conn_id))
            .map(|(a, _)| *a)
            .collect();
        for account in dead {
            self.leave_pool(account);
        }
        // Likewise seeks and challenges (a connection on a node that died says no `Gone`).
        let bus = Arc::clone(&self.bus);
        self.drop_seeks(|s| bus.is_closed(s.member.conn_id));
        let dead: Vec<u64> = self
            .challenges
            .iter()
            .filter(|(_, c)| bus.is_closed(c.from.conn_id))
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            self.withdraw_challenge(id);
        }
        let keys: Vec<PoolKey> = self.pools.keys().cloned().collect();
        for key in keys {
            let pairs = self
                .pools
                .get_mut(&key)
                .map(|p| p.pair_all(now))
                .unwrap_or_default();
            let tc = TimeControl::preset(&key.preset).expect("pool keys hold valid presets");
            for (a, b) in pairs {
                self.start_pool_game(&key, a as AccountId, b as AccountId, tc);
            }
            let Some(pool) = self.pools.get(&key) else {
                continue;
            };
            let waiting = pool.len() as u32;
            for (id, waited, window) in pool.statuses(now) {
                let Some((_, member)) = self.queued.get(&(id as AccountId)) else {
                    continue;
                };
                let _ = self.bus.send_msg(
                    member.conn_id,
                    &ServerMsg::QueueStatus {
                        players_waiting: waiting,
                        rating_window: window,
                        waited_ms: waited.as_millis() as u64,
                    },
                );
            }
            if pool.is_empty() {
                self.pools.remove(&key);
            }
        }
        self.update_queued_metric();
        self.take_counts();
    }
}
