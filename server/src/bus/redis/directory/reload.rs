//! The mirror read again from Redis after the node rejoins it: the cluster's messages sent
//! while it was away (games opened, taken over, ended) were lost to it.

use std::collections::HashSet;

use super::*;

impl Directory {
    /// Takes in the directory hash, read after subscribing again (so that nothing said
    /// after the read is missed). Its games are taken as they stand: opened meanwhile, or
    /// taken over by another node. A game the mirror holds that the hash lacks has ended
    /// meanwhile, or Redis restarted empty and its node has yet to write it again: it is
    /// dropped (`drop_unconfirmed`) unless its node announces it within `NODE_TIMEOUT`
    /// (every node announces all its games when it rejoins).
    pub fn reload(&self, entries: Vec<(GameId, DirEntry)>) {
        self.rejoins.fetch_add(1, Ordering::SeqCst);
        let listed: HashSet<GameId> = entries.iter().map(|(game, _)| *game).collect();
        for (game, entry) in entries {
            if entry.node != self.node && !self.own.contains_key(&game) {
                self.put_remote(game, entry);
            }
        }
        let now = Instant::now();
        let missing: Vec<GameId> = self
            .remote
            .iter()
            .map(|e| *e.key())
            .filter(|game| !listed.contains(game))
            .collect();
        for game in missing {
            self.unconfirmed.insert(game, now);
        }
    }

    /// Drops the games `reload` found missing that no node has announced since, once
    /// `NODE_TIMEOUT` has passed. Every tick.
    pub(super) fn drop_unconfirmed(&self) {
        let stale: Vec<GameId> = self
            .unconfirmed
            .iter()
            .filter(|e| e.value().elapsed() >= NODE_TIMEOUT)
            .map(|e| *e.key())
            .collect();
        for game in stale {
            self.unconfirmed.remove(&game);
            self.drop_remote(game);
        }
    }
}
