//! Failover under load (`--kill-node`): the last node of the run's cluster is killed with
//! `kill -9` in the middle of the hold; PostgreSQL's `game_leases` says which games it
//! held then and, looked at every 100 ms, when each came under another node's lease (its
//! claim, after which the game is replayed and running there). After the run, every
//! round a player saw the result of (an acknowledged round) is looked for in what
//! PostgreSQL holds of its game.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use elementals_client::protocol::messages::GameId;

use crate::cluster::{node_id, Held, LocalCluster};
use crate::dump::Dump;
use crate::stats::{Latency, Percentiles};

/// How long the claims are watched for (the target is 10 s).
const WATCH_FOR: Duration = Duration::from_secs(30);

/// Between two looks at `game_leases`.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The killed node's games, and when each was claimed.
pub struct Watch {
    node: String,
    /// Per game the node held at the kill, from the kill until another node's lease (or
    /// none: claimed and already recorded) was seen; `None`: not within `WATCH_FOR`.
    claims: Vec<(String, Option<Duration>)>,
    /// The rounds PostgreSQL held of each game at the kill.
    at_kill: Held,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailoverReport {
    pub node: String,
    /// Games the node held a lease of when it was killed.
    pub games: usize,
    /// ... claimed by another node within the watch (30 s).
    pub claimed: usize,
    /// ... and played on after it: a round acknowledged beyond what PostgreSQL held at the
    /// kill, or the game finished (recorded).
    pub played_on: usize,
    /// Kill to claimed, per game (resolution: the 100 ms between looks).
    pub claim_ms: Percentiles,
    /// Games with at least one acknowledged round (a result a player received).
    pub games_checked: usize,
    pub rounds_acknowledged: u64,
    /// Acknowledged rounds PostgreSQL does not hold after the run (target 0).
    pub rounds_lost: u64,
    pub games_with_rounds_lost: usize,
    /// Players whose connection dropped with the node and who reconnected to another.
    pub reconnects: u64,
    /// Resumes that found the game not yet claimed and were tried again a second later.
    pub game_not_back_retries: u64,
    /// Players' time from the dropped connection until resumed (seated: with the game's
    /// snapshot).
    pub resume_ms: Percentiles,
}

/// Kill the last node now and watch its games' leases until every one is claimed.
pub async fn kill_and_watch(cluster: &mut LocalCluster) -> anyhow::Result<Watch> {
    let victim = cluster.addrs.len() - 1;
    let node = node_id(victim);
    let held: Vec<String> = cluster
        .leases()
        .await?
        .into_iter()
        .filter(|(_, n)| *n == node)
        .map(|(game, _)| game)
        .collect();
    let at_kill = cluster.rounds_held().await?;
    let killed = Instant::now();
    cluster.kill(victim).await;
    eprintln!(
        "failover: killed node {node} (kill -9), which held {} games",
        held.len()
    );
    let mut claims: HashMap<String, Option<Duration>> =
        held.iter().map(|g| (g.clone(), None)).collect();
    while killed.elapsed() < WATCH_FOR && claims.values().any(Option::is_none) {
        tokio::time::sleep(LOOK_EVERY).await;
        let leases = cluster.leases().await?;
        let at = killed.elapsed();
        for (game, claimed) in claims.iter_mut() {
            if claimed.is_none() && leases.get(game) != Some(&node) {
                *claimed = Some(at);
            }
        }
    }
    let done = claims.values().filter(|c| c.is_some()).count();
    eprintln!(
        "failover: {done} of {} games claimed {:.1} s after the kill",
        held.len(),
        killed.elapsed().as_secs_f64()
    );
    Ok(Watch {
        node,
        claims: claims.into_iter().collect(),
        at_kill,
    })
}

impl Watch {
    /// Compare every acknowledged round with what PostgreSQL holds, after the run.
    pub async fn check_rounds(
        self,
        cluster: &LocalCluster,
        dumps: &[Dump],
    ) -> anyhow::Result<FailoverReport> {
        let mut acked: HashMap<_, u32> = HashMap::new();
        for dump in dumps {
            for &(game, round) in &dump.acked {
                let last = acked.entry(game).or_default();
                *last = (*last).max(round);
            }
        }
        let held = cluster.rounds_held().await?;
        let mut lost = 0u64;
        let mut games_lost = 0;
        for (game, &round) in &acked {
            let kept = held.rounds.get(game).copied().unwrap_or(0);
            if kept < round {
                lost += u64::from(round - kept);
                games_lost += 1;
            }
        }
        let claim = Latency::default();
        for at in self.claims.iter().filter_map(|(_, c)| *c) {
            claim.record(at);
        }
        let resume = Latency::default();
        let (mut reconnects, mut retries) = (0, 0);
        for dump in dumps {
            if let Some(recorded) = dump.histograms.get("resume") {
                resume.add_recorded(recorded);
            }
            reconnects += dump
                .counters
                .get("failover_reconnects")
                .copied()
                .unwrap_or(0);
            retries += dump
                .counters
                .get("game_not_back_retries")
                .copied()
                .unwrap_or(0);
        }
        // Played on after the claim: a round acknowledged past what was stored at the
        // kill, or finished (recorded) since.
        let played_on = self
            .claims
            .iter()
            .filter_map(|(game, _)| game.parse::<GameId>().ok())
            .filter(|game| {
                let at_kill = self.at_kill.rounds.get(game).copied().unwrap_or(0);
                acked.get(game).is_some_and(|&r| r > at_kill) || held.recorded.contains(game)
            })
            .count();
        Ok(FailoverReport {
            node: self.node,
            played_on,
            games: self.claims.len(),
            claimed: self.claims.iter().filter(|(_, c)| c.is_some()).count(),
            claim_ms: claim.percentiles(),
            games_checked: acked.len(),
            rounds_acknowledged: acked.values().map(|&r| u64::from(r)).sum(),
            rounds_lost: lost,
            games_with_rounds_lost: games_lost,
            reconnects,
            game_not_back_retries: retries,
            resume_ms: resume.percentiles(),
        })
    }
}
