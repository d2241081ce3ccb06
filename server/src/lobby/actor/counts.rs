//! `lobby_counts`: the players online and the fullest pools, counted once a tick.

use elementals_protocol::messages::PoolCount;

use super::{Lobby, PoolKey, MAX_COUNTED_POOLS};
use crate::lobby::Counts;
use crate::record::AccountId;

impl Lobby {
    /// The last tick's pool counts, with `account`'s own pool counted now and without them,
    /// and the players online now.
    pub(super) fn counts(&self, account: AccountId) -> Counts {
        let own = self.queued.get(&account).map(|(key, _)| key);
        let mut pools: Vec<(&PoolKey, u32)> = self
            .counted
            .iter()
            .filter(|(key, _)| Some(key) != own)
            .map(|(key, n)| (key, *n))
            .collect();
        if let Some(key) = own {
            let others = self
                .pools
                .get(key)
                .map_or(0, |p| (p.len() as u32).saturating_sub(1));
            if others > 0 {
                pools.push((key, others));
            }
        }
        pools.sort_by_key(|p| std::cmp::Reverse(p.1));
        pools.truncate(MAX_COUNTED_POOLS);
        Counts {
            // A count per shard of the registry's map: cheap enough to take at the asking.
            online: self.services.registry.cluster_online_count() as u32,
            pools: pools
                .into_iter()
                .map(|(key, waiting)| PoolCount {
                    variant: key.variant,
                    time_control: key.preset.clone(),
                    rated: key.rated,
                    waiting,
                })
                .collect(),
        }
    }

    /// Counts the pools, for `counts` until the next tick. One more pool than is listed is
    /// kept, for when the asker's own is left out.
    pub(super) fn take_counts(&mut self) {
        let mut counted: Vec<(PoolKey, u32)> = self
            .pools
            .iter()
            .filter(|(_, pool)| !pool.is_empty())
            .map(|(key, pool)| (key.clone(), pool.len() as u32))
            .collect();
        counted.sort_by_key(|p| std::cmp::Reverse(p.1));
        counted.truncate(MAX_COUNTED_POOLS + 1);
        self.counted = counted;
    }
}
