//! Cluster mode: the logs of sleeping games this node wakes. Waking takes the game's
//! lease in PostgreSQL (`lease::wake`) in the transaction that reads its log, as a claim of
//! a lapsed lease does: of several nodes waking one game at once (a command on each, or
//! their sweepers), one takes it and the others read nothing.

use elementals_protocol::messages::GameId;

use super::{lease, logs_in, StepLog};
use crate::db::DbResult;
use crate::record::GameLog;

impl StepLog {
    /// Wakes those of `games` that sleep and that no other node is waking; returns their
    /// logs (a game missing from the answer is awake elsewhere, or was not asleep).
    pub(super) fn wake(&mut self, games: &[GameId]) -> DbResult<Vec<GameLog>> {
        let Some(leases) = self.leases.clone() else {
            return self.load_some(games);
        };
        let ids: Vec<String> = games.iter().map(ToString::to_string).collect();
        let woken = (|| {
            let (client, cache) = self.conn.get()?;
            let mut tx = client.transaction()?;
            let taken = lease::wake(&mut tx, cache, &leases.node_id, &ids)?;
            let ids: Vec<&str> = taken.iter().map(|(id, _)| id.as_str()).collect();
            let logs = logs_in(&mut tx, cache, &ids)?;
            tx.commit()?;
            Ok((taken, logs))
        })();
        let (taken, logs) = self.conn.settle(woken)?;
        // Held from the commit on (as after a claim: a commit that failed leaves a lease
        // nobody renews, which lapses and is claimed).
        for (id, token) in taken {
            if let Ok(game_id) = id.parse::<GameId>() {
                leases.woke(game_id, token);
            }
        }
        self.learn_next(&logs);
        Ok(logs)
    }
}
