//! The cluster lobby's tick: pairing this node's waiting members in the cluster's pools,
//! putting back those whose entries Redis lost, sweeping dead nodes' entries, counting
//! the pools.

use elementals_protocol::messages::ServerMsg;
use tokio::time::Instant;

use super::cluster::shared_key;
use super::{Lobby, PoolKey};
use crate::lobby::pairing::window;
use crate::lobby::shared::{Paired, SharedPools, Swept};
use crate::record::AccountId;

impl Lobby {
    /// Takes dead nodes' members, seeks and challenges out of Redis (`shared/sweep.rs`);
    /// the players they challenged hear the challenges are cancelled.
    async fn sweep_dead_nodes(&self, shared: &SharedPools) {
        match shared.sweep_dead().await {
            Ok(swept) => {
                for (challenge_id, to) in &swept.challenges {
                    let cancelled = ServerMsg::ChallengeCancelled {
                        challenge_id: *challenge_id,
                    };
                    let _ = self.bus.send_msg(*to, &cancelled);
                }
                if swept != Swept::default() {
                    tracing::info!(
                        members = swept.members,
                        seeks = swept.seeks,
                        challenges = swept.challenges.len(),
                        "swept a dead node's lobby entries"
                    );
                }
            }
            Err(error) => tracing::error!(%error, "sweeping dead nodes' lobby entries"),
        }
    }

    /// Pairs this node's members waiting in the cluster's pools, longest-waiting first,
    /// tells the others how long they have waited, and counts the cluster's pools.
    pub(super) async fn tick_shared(&mut self) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        shared.heal().await;
        self.withdraw_seated();
        self.reconcile_seeks().await;
        self.reconcile_challenges().await;
        let mut waiting: Vec<(Instant, AccountId)> =
            self.shared_since.iter().map(|(a, t)| (*t, *a)).collect();
        waiting.sort_unstable();
        for (_, account) in waiting {
            let Some((key, _)) = self.queued.get(&account) else {
                continue;
            };
            let key = key.clone();
            let paired = match shared.pair(&shared_key(&key), account, None).await {
                Ok(paired) => self.unless_held_by_over(&key, account, paired).await,
                Err(e) => Err(e),
            };
            match paired {
                Ok(Paired::Waiting {
                    waiting, waited, ..
                }) => {
                    if let Some((_, member)) = self.queued.get(&account) {
                        let _ = self.bus.send_msg(
                            member.conn_id,
                            &ServerMsg::QueueStatus {
                                players_waiting: waiting,
                                rating_window: window(waited),
                                waited_ms: waited.as_millis() as u64,
                            },
                        );
                    }
                }
                Ok(Paired::With(other, game)) => {
                    self.shared_since.remove(&account);
                    if let Some((_, mine)) = self.queued.remove(&account) {
                        self.start_shared_game(&key, mine, other, game);
                    }
                }
                // Paired by another node (its game_start reaches the member by the bus),
                // or its entry lost (`requeue_if_lost`).
                Ok(Paired::NotWaiting | Paired::AlreadyWaiting) => {
                    if !self.requeue_if_lost(&shared, &key, account).await {
                        self.shared_since.remove(&account);
                        self.queued.remove(&account);
                    }
                }
                Err(error) => {
                    tracing::error!(%error, "pairing in the cluster's pools");
                    break;
                }
            }
        }
        self.update_queued_metric();
        self.sweep_dead_nodes(&shared).await;
        match shared.counts().await {
            Ok(counts) => {
                let mut counted: Vec<(PoolKey, u32)> = counts
                    .into_iter()
                    .map(|(k, n)| {
                        let key = PoolKey {
                            variant: k.variant,
                            preset: k.preset,
                            rated: k.rated,
                        };
                        (key, n)
                    })
                    .collect();
                counted.sort_by_key(|p| std::cmp::Reverse(p.1));
                counted.truncate(super::MAX_COUNTED_POOLS + 1);
                self.counted = counted;
            }
            Err(error) => tracing::error!(%error, "counting the cluster's pools"),
        }
    }

    /// Withdraws from the cluster's pools (at `reconcile_seeks`' flush, next) the members
    /// of this node who are seated in a game, as starting a game here withdraws its
    /// players.
    ///
    /// A member is so seated when its join raced another node's pairing or acceptance
    /// that took it: the script that took it left it in no pool, but the join, handled here
    /// before this node heard of that game, put it back, held by that game's seating mark.
    /// Once the mark lapses (2 s) no pairing would pass over it, so it goes now, at the
    /// first tick after this node heard of the game (within milliseconds of its start).
    /// It is the one way a member marked by a live game stays in a pool: the other marked
    /// members there (a join within 2 s of its last game's start, that game over) have
    /// the mark lifted by their node's next tick once it hears the end, or see it lapse.
    fn withdraw_seated(&mut self) {
        let registry = &self.services.registry;
        let seated: Vec<AccountId> = self
            .queued
            .keys()
            .filter(|account| registry.is_seated(**account))
            .copied()
            .collect();
        for account in seated {
            self.leave_pool(account);
        }
    }

    /// A member queued here that no pool holds any more, yet that no pairing took (it
    /// is neither seated nor being seated anywhere): its entry was lost, swept while
    /// this node was cut off from Redis longer than its presence lasts, or with a Redis
    /// restarted empty. It is put back (paired at once if it can be) and waits on as if
    /// nothing had happened; returns whether it was.
    async fn requeue_if_lost(
        &mut self,
        shared: &SharedPools,
        key: &PoolKey,
        account: AccountId,
    ) -> bool {
        if self.services.registry.is_seated(account) {
            return false;
        }
        match shared.is_seating(account).await {
            Ok(false) => {}
            Ok(true) => return false,
            Err(error) => {
                tracing::error!(%error, "looking up a member's seating mark");
                return false;
            }
        }
        let Some((_, member)) = self.queued.get(&account).cloned() else {
            return false;
        };
        tracing::info!(
            account,
            "a pool's member whose entry was lost waits there again"
        );
        match shared.join(&shared_key(key), &member).await {
            Ok(Paired::With(other, game)) => {
                self.shared_since.remove(&account);
                self.queued.remove(&account);
                self.start_shared_game(key, member, other, game);
                true
            }
            Ok(_) => true,
            Err(error) => {
                tracing::error!(%error, "putting a member back in its pool");
                // Withdrawn again, should it have joined before the answer was lost.
                self.leave_later(key.clone(), account);
                false
            }
        }
    }
}
