//! The mirror read again from Redis after the node rejoins it: the cluster's messages sent
//! while it was away (games opened, taken over, ended, heartbeats) were lost to it.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use elementals_protocol::messages::GameId;
use tokio::time::Instant;

use super::{lock, DirEntry, Directory};

impl Directory {
    /// Takes in the directory hash, read after subscribing again (so that nothing said
    /// after the read is missed). Its games are taken as they stand: opened meanwhile, or
    /// taken over by another node. A game the mirror holds that the hash lacks has ended
    /// meanwhile, or Redis restarted empty and its node has yet to write it again: it is
    /// dropped (`drop_unconfirmed`) unless its node announces it within the node timeout
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
    /// the node timeout has passed. Every tick.
    pub(super) fn drop_unconfirmed(&self) {
        let stale: Vec<GameId> = self
            .unconfirmed
            .iter()
            .filter(|e| e.value().elapsed() >= self.node_timeout)
            .map(|e| *e.key())
            .collect();
        for game in stale {
            self.unconfirmed.remove(&game);
            self.drop_remote(game);
        }
    }

    /// Whether this node hears Redis. Hearing it again after a cut, the time it was cut
    /// off does not count against the other nodes, whose heartbeats it could not hear
    /// (`is_alive`): otherwise a cut past the node timeout would have it take them all for
    /// dead until their next heartbeats, and answer the commands it forwards to them
    /// meanwhile as if their node were gone (`RedisBus::sweep`).
    pub fn set_reaches_redis(&self, reached: bool) {
        self.set_reached(reached, Instant::now());
    }

    /// This node hears Redis no more: the last it heard was at `heard`.
    pub fn lost_redis(&self, heard: Instant) {
        self.set_reached(false, heard);
    }

    /// How long since this node last heard Redis, while it does not (`None` while it does).
    pub fn cut_off_for(&self) -> Option<std::time::Duration> {
        match self.reaches_redis() {
            true => None,
            false => lock(&self.cut_at).map(|at| at.elapsed()),
        }
    }

    fn set_reached(&self, reached: bool, heard: Instant) {
        let was = self.reached.swap(reached, Ordering::Relaxed);
        let mut cut_at = lock(&self.cut_at);
        match (was, reached) {
            (true, false) => *cut_at = Some(heard),
            (false, true) => {
                if let Some(away) = cut_at.take().map(|at| at.elapsed()) {
                    let now = Instant::now();
                    for mut node in self.nodes.iter_mut() {
                        node.0 = (node.0 + away).min(now);
                    }
                }
            }
            _ => {}
        }
    }
}
