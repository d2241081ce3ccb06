//! What every simulated client of a run shares: where the server is, how to play, the
//! stop signal, the reconnect-storm signal and the log of when reveals went out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::Variant;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::lean::LeanSpectators;
use crate::options::Spread;
use crate::stats::Stats;

/// How simulated players play.
#[derive(Debug, Clone)]
pub struct PlayStyle {
    pub variant: Variant,
    pub preset: String,
    /// Mean pause before each commit; each pause is drawn from 0.5–1.5 times this.
    pub think: Duration,
    /// How often a lobby player lists the open seeks; `None`: never (idle).
    pub lobby_poll: Option<Duration>,
}

/// The reconnect storm's phases, as every player sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storm {
    /// Play on.
    Calm,
    /// Drop the connection now and wait.
    Drop,
    /// Reconnect and resume now; the instant is when the signal went out.
    Return(Instant),
}

pub struct Ctx {
    /// The servers (a cluster's nodes), each player's chosen by `server_for`.
    pub servers: Vec<SocketAddr>,
    pub spread: Spread,
    /// `--kill-node`: a player whose connection drops reconnects to the next server and
    /// resumes, and every round acknowledged is kept in `acked` for the check after.
    pub failover: bool,
    /// With `failover`: per game, the last round whose result a player received.
    pub acked: DashMap<GameId, u32>,
    pub stats: Arc<Stats>,
    pub style: PlayStyle,
    /// Names are `lt` + this tag + the player's number, unique per run.
    pub tag: String,
    pub stop: CancellationToken,
    pub storm: watch::Receiver<Storm>,
    pub reveals: RevealLog,
    /// Per (game, round): when its result reached the spectators.
    pub fanout: FanoutLog,
    /// With `--lean-spectators`: where signed-in spectators hand their sockets.
    pub lean: Option<LeanSpectators>,
}

/// When each game's latest rounds had their last reveal sent, so the players and
/// spectators receiving the result can time it. When both players of a game are in this
/// process, the later of the two sends is known before the result can exist. When the
/// other is in another generator process (`--processes`), this process knows its
/// player's send was the last only if that player had heard the other's reveal first;
/// otherwise the round is not timed here (the other reveal may go much later: a player
/// paces its requests, so a reveal right after its own commit waits ~60 ms). Also
/// when the result first reached one of the players: the nearest this process sees to
/// the moment it left the game (the server writes a round's players before its
/// spectators).
#[derive(Default)]
pub struct RevealLog(DashMap<GameId, [RoundTimes; 2]>);

#[derive(Debug, Clone, Copy)]
pub struct RoundTimes {
    round: u32,
    last_reveal: Instant,
    /// Reveals of the round this process sent.
    sends: u8,
    /// Whether `last_reveal` is known to be the round's last: both reveals went from here,
    /// or one went after its player heard the other's.
    last_known: bool,
    first_result: Option<Instant>,
}

impl RoundTimes {
    fn new(round: u32, at: Instant, after_other: bool) -> RoundTimes {
        RoundTimes {
            round,
            last_reveal: at,
            sends: 1,
            last_known: after_other,
            first_result: None,
        }
    }
}

impl RevealLog {
    /// A reveal for `round` of `game` is being sent now; `after_other`: its player had
    /// heard the other player's reveal.
    pub fn sent(&self, game: GameId, round: u32, after_other: bool) {
        let now = Instant::now();
        let mut entry = self
            .0
            .entry(game)
            .or_insert([RoundTimes::new(0, now, false); 2]);
        let rounds = entry.value_mut();
        if rounds[0].round == round {
            let t = &mut rounds[0];
            t.last_reveal = t.last_reveal.max(now);
            t.sends += 1;
            t.last_known |= after_other || t.sends >= 2;
        } else {
            rounds[1] = rounds[0];
            rounds[0] = RoundTimes::new(round, now, after_other);
        }
    }

    /// When the last reveal of `round` of `game` went out, if this process knows.
    pub fn last(&self, game: GameId, round: u32) -> Option<Instant> {
        self.times(game, round)
            .filter(|t| t.last_known)
            .map(|t| t.last_reveal)
    }

    /// A player received the result of `round` of `game` at `at`: kept if it is the
    /// first. Returns when the round's last reveal went, as `last` does.
    pub fn result_arrived(&self, game: GameId, round: u32, at: Instant) -> Option<Instant> {
        let mut rounds = self.0.get_mut(&game)?;
        let t = rounds.iter_mut().find(|t| t.round == round)?;
        t.first_result.get_or_insert(at);
        t.last_known.then_some(t.last_reveal)
    }

    /// When the result of `round` of `game` first reached a player, if it has.
    pub fn first_result(&self, game: GameId, round: u32) -> Option<Instant> {
        self.times(game, round).and_then(|t| t.first_result)
    }

    fn times(&self, game: GameId, round: u32) -> Option<RoundTimes> {
        let rounds = *self.0.get(&game)?;
        rounds.into_iter().find(|t| t.round == round)
    }
}

/// Per (game, round) of the hold: when its last reveal went, and when its result reached
/// each spectator.
#[derive(Default)]
pub struct FanoutLog(DashMap<(GameId, u32), FanoutRound>);

#[derive(Debug, Clone)]
pub struct FanoutRound {
    pub sent: Instant,
    pub last: Duration,
    /// When the result first reached a player (see `RevealLog`), if it had by the time a
    /// spectator got it.
    pub first_result: Option<Instant>,
    /// Each spectator's arrival after `sent`, in microseconds, in the order recorded.
    pub arrivals_us: Vec<u32>,
}

impl FanoutRound {
    /// From the result first reaching a player to its last spectator: the fan-out from
    /// (nearly) the moment the result left the game.
    pub fn last_from_result(&self) -> Option<Duration> {
        let first = self.first_result?;
        Some((self.sent + self.last).saturating_duration_since(first))
    }

    /// The arrivals by which each of `fractions` of the spectators had it.
    pub fn quantiles<const N: usize>(&self, fractions: [f64; N]) -> [Duration; N] {
        let mut sorted = self.arrivals_us.clone();
        sorted.sort_unstable();
        let Some(last) = sorted.len().checked_sub(1) else {
            return [Duration::ZERO; N];
        };
        fractions.map(|fraction| {
            let at = ((last as f64) * fraction).round() as usize;
            Duration::from_micros(u64::from(sorted[at.min(last)]))
        })
    }
}

impl FanoutLog {
    /// A spectator received round `round`'s result, `delay` after its last reveal `sent`.
    /// `reveals` says whether a player had it already.
    pub fn arrived(
        &self,
        game: GameId,
        round: u32,
        sent: Instant,
        delay: Duration,
        reveals: &RevealLog,
    ) {
        let known = {
            let mut entry = self.0.entry((game, round)).or_insert(FanoutRound {
                sent,
                last: Duration::ZERO,
                first_result: None,
                arrivals_us: Vec::new(),
            });
            entry.last = entry.last.max(delay);
            let us = u32::try_from(delay.as_micros()).unwrap_or(u32::MAX);
            entry.arrivals_us.push(us);
            entry.first_result.is_some()
        };
        // The round's entry first, then the player's time: a player records its result
        // in the `RevealLog` before it looks for the entry here, so between the two one
        // of us sees the other. Once the round has it, spectators (10,000 a round, read by
        // one thread) skip the lookup.
        if !known {
            if let Some(at) = reveals.first_result(game, round) {
                self.player_result(game, round, at);
            }
        }
    }

    /// A player received round `round`'s result at `at`: kept as the round's first, if a
    /// spectator has the round already (and none came sooner). Rounds no spectator saw
    /// are not recorded; for those that a spectator sees later, `arrived` takes the time
    /// from the `RevealLog`.
    pub fn player_result(&self, game: GameId, round: u32, at: Instant) {
        if let Some(mut entry) = self.0.get_mut(&(game, round)) {
            let first = entry.first_result.get_or_insert(at);
            *first = (*first).min(at);
        }
    }

    pub fn clear(&self) {
        self.0.clear();
    }

    /// Every round recorded, in the order their reveals went.
    pub fn rounds(&self) -> Vec<((GameId, u32), FanoutRound)> {
        let mut rounds: Vec<_> = self
            .0
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        rounds.sort_by_key(|(_, r)| r.sent);
        rounds
    }
}

impl Ctx {
    /// The server of client `index`, `hop` servers on from its own (each reconnect after a
    /// lost node moves one on).
    pub fn server_for(&self, index: u64, hop: u32) -> SocketAddr {
        let count = self.servers.len() as u64;
        let own = match self.spread {
            Spread::RoundRobin => index % count,
            Spread::SameNode => 0,
        };
        self.servers[((own + u64::from(hop)) % count) as usize]
    }

    /// A player received the result of `round` of `game`.
    pub fn round_acked(&self, game: GameId, round: u32) {
        if self.failover {
            let mut last = self.acked.entry(game).or_insert(round);
            *last = (*last).max(round);
        }
    }

    pub fn player_name(&self, index: u64) -> String {
        format!("lt{}{}", self.tag, index)
    }

    /// A think time drawn from 0.5–1.5 times the mean, so players do not move in lockstep.
    pub fn think(&self) -> Duration {
        jittered(self.style.think)
    }
}

/// A pause drawn from 0.5–1.5 times `mean`, so simulated clients do not act in lockstep.
pub fn jittered(mean: Duration) -> Duration {
    mean.mul_f64(0.5 + rand::random::<f64>())
}

pub type Shared = Arc<Ctx>;

#[cfg(test)]
mod tests {
    use super::*;

    fn game(n: u8) -> GameId {
        format!("00000000-0000-4000-8000-0000000000{n:02}")
            .parse()
            .unwrap()
    }

    #[test]
    fn a_round_is_timed_from_its_last_reveal_only_where_that_is_known() {
        let log = RevealLog::default();
        // Both players in this process: the later of their sends is the last.
        log.sent(game(1), 1, false);
        log.sent(game(1), 1, false);
        let last = log.last(game(1), 1).expect("known");
        assert_eq!(log.result_arrived(game(1), 1, Instant::now()), Some(last));
        // One player here, who revealed first: the other's reveal, in another process,
        // may go much later, so the round is not timed here.
        log.sent(game(2), 1, false);
        assert_eq!(log.last(game(2), 1), None);
        assert_eq!(log.result_arrived(game(2), 1, Instant::now()), None);
        // One player here, who revealed after hearing the other's: its send was the last.
        log.sent(game(3), 1, true);
        let last = log.last(game(3), 1).expect("known");
        assert_eq!(log.result_arrived(game(3), 1, Instant::now()), Some(last));
        // A new round starts unknown again.
        log.sent(game(3), 2, false);
        assert_eq!(log.last(game(3), 2), None);
        assert_eq!(log.last(game(3), 1), Some(last));
    }
}
