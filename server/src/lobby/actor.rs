//! The lobby actor's state and its handling of each request. Synchronous code in a loop
//! over the channel, plus a one-second tick that widens windows, pairs and reports
//! queue status (the pools and the tick: `pools.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::{Challenge, Seek, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

mod offers;
mod start;

use super::pairing::Pool;
use super::{LobbyCmd, LobbyError, Member};
use crate::bots::Bots;
use crate::bus::{Bus, ConnId, ReplyTo};
use crate::game::GameServices;
use crate::record::AccountId;

mod cluster;
mod cluster_challenges;
mod cluster_pools;
mod cluster_rematch;
mod cluster_seeks;
mod cluster_tick;
mod computer;
mod counts;
mod pools;

use super::shared::SharedPools;

/// Open seeks and outgoing challenges one account may have at once.
pub(crate) const MAX_OPEN_PER_ACCOUNT: usize = 5;

/// Pools a `counts` answer lists at most (the fullest).
pub const MAX_COUNTED_POOLS: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    variant: Variant,
    preset: String,
    rated: bool,
}

struct OpenSeek {
    seek: Seek,
    member: Member,
}

struct OpenChallenge {
    challenge: Challenge,
    from: Member,
    to: AccountId,
    /// The challenged player's connection when challenged (in cluster mode, where it may
    /// be on another node, they are told through it).
    to_conn: ConnId,
}

struct Lobby {
    services: GameServices,
    /// How the lobby reaches its members' connections, by identity.
    bus: Arc<dyn Bus>,
    shutting_down: Arc<AtomicBool>,
    pools: HashMap<PoolKey, Pool>,
    queued: HashMap<AccountId, (PoolKey, Member)>,
    seeks: BTreeMap<u64, OpenSeek>,
    challenges: BTreeMap<u64, OpenChallenge>,
    next_id: u64,
    bots: Arc<Bots>,
    /// The fullest pools, as the last tick counted them (so that `lobby_counts` costs a
    /// copy, however often it is asked).
    counted: Vec<(PoolKey, u32)>,
    /// The cluster's pools, in cluster mode: `pools` stays empty, and `queued` holds this
    /// node's members waiting there (see `shared`).
    shared: Option<SharedPools>,
    /// When this node's members joined the cluster's pools: they are paired longest-waiting
    /// first.
    shared_since: HashMap<AccountId, Instant>,
    /// Members this node's lobby has withdrawn from the cluster's pools, to be removed
    /// there before the next request or tick.
    shared_leaves: Vec<(PoolKey, AccountId)>,
    /// This node's seeks withdrawn here, to be taken off the cluster's list likewise.
    shared_seek_drops: Vec<u64>,
    /// This node's challenges withdrawn here, to be taken out of the cluster's store.
    shared_challenge_drops: Vec<u64>,
}

pub(super) async fn run(
    mut rx: mpsc::Receiver<LobbyCmd>,
    services: GameServices,
    bots: Arc<Bots>,
    shutting_down: Arc<AtomicBool>,
    shared: Option<SharedPools>,
) {
    let mut lobby = Lobby {
        bus: services.registry.bus(),
        services,
        shutting_down,
        pools: HashMap::new(),
        queued: HashMap::new(),
        seeks: BTreeMap::new(),
        challenges: BTreeMap::new(),
        bots,
        counted: Vec::new(),
        next_id: shared.as_ref().map_or(1, |s| s.first_id()),
        shared,
        shared_since: HashMap::new(),
        shared_leaves: Vec::new(),
        shared_seek_drops: Vec::new(),
        shared_challenge_drops: Vec::new(),
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(cmd) if lobby.shared.is_some() => lobby.handle_shared(cmd).await,
                Some(cmd) => lobby.handle(cmd),
                None => break,
            },
            _ = tick.tick() => {
                lobby.tick();
                lobby.tick_shared().await;
            }
        }
    }
}

type Result<T> = std::result::Result<T, LobbyError>;

impl Lobby {
    fn handle(&mut self, cmd: LobbyCmd) {
        use LobbyCmd as L;
        let ok = |reply: ReplyTo| ServerMsg::Ok {
            id: reply.request_id.unwrap_or_default(),
        };
        let (reply, answer): (ReplyTo, Result<ServerMsg>) = match cmd {
            L::JoinPool {
                member,
                variant,
                preset,
                rated,
                reply,
            } => {
                // Answered `queued` by `join_pool` itself, when it joins.
                let joined = self.join_pool(reply, member, variant, preset, rated);
                match joined {
                    Ok(()) => return self.bus.answered(reply, true),
                    Err(e) => (reply, Err(e)),
                }
            }
            L::LeavePool { account, reply } => {
                let left = if self.leave_pool(account) {
                    Ok(ok(reply))
                } else {
                    Err(LobbyError::new(
                        ErrorCode::NotQueued,
                        "not waiting in a pool",
                    ))
                };
                (reply, left)
            }
            L::CreateSeek {
                member,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let seek = self.create_seek(member, variant, time_control, rated);
                let id = reply.request_id.unwrap_or_default();
                (reply, seek.map(|seek| ServerMsg::SeekCreated { id, seek }))
            }
            L::CancelSeek {
                account,
                seek_id,
                reply,
            } => (
                reply,
                self.cancel_seek(account, seek_id).map(|()| ok(reply)),
            ),
            L::ListSeeks { reply } => {
                let seeks = self.seeks.values().map(|s| s.seek.clone()).collect();
                let id = reply.request_id.unwrap_or_default();
                (reply, Ok(ServerMsg::Seeks { id, seeks }))
            }
            L::AcceptSeek {
                member,
                seek_id,
                reply,
            } => (reply, self.accept_seek(member, seek_id).map(|()| ok(reply))),
            L::Challenge {
                member,
                opponent,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let sent = self.challenge(member, opponent, variant, time_control, rated);
                let id = reply.request_id.unwrap_or_default();
                (
                    reply,
                    sent.map(|challenge| ServerMsg::ChallengeSent { id, challenge }),
                )
            }
            L::AcceptChallenge {
                member,
                challenge_id,
                reply,
            } => {
                let accepted = self.accept_challenge(member, challenge_id);
                (reply, accepted.map(|()| ok(reply)))
            }
            L::DeclineChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let declined = self.decline_challenge(account, challenge_id);
                (reply, declined.map(|()| ok(reply)))
            }
            L::CancelChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let cancelled = self.cancel_challenge(account, challenge_id);
                (reply, cancelled.map(|()| ok(reply)))
            }
            L::OfferRematch {
                member,
                game_id,
                reply,
            } => (
                reply,
                self.offer_rematch(member, game_id).map(|()| ok(reply)),
            ),
            L::PlayBot {
                member,
                strength,
                variant,
                preset,
                reply,
            } => {
                let started = self.play_bot(member, &strength, variant, &preset);
                (reply, started.map(|()| ok(reply)))
            }
            L::Counts { account, reply } => {
                let counts = self.counts(account);
                let msg = ServerMsg::Counts {
                    id: reply.request_id.unwrap_or_default(),
                    online: counts.online,
                    pools: counts.pools,
                };
                (reply, Ok(msg))
            }
            L::Gone { account, conn_id } => return self.gone(account, conn_id),
        };
        self.bus
            .answer(reply, answer.map_err(|e| (e.code, e.message)));
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn ready_for_new_game(&self, account: AccountId) -> Result<()> {
        if self.shutting_down.load(Ordering::Relaxed) {
            return Err(LobbyError::new(
                ErrorCode::ShuttingDown,
                "the server is restarting; no new games",
            ));
        }
        if self.services.registry.is_seated(account) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyInGame,
                "finish your current game first",
            ));
        }
        Ok(())
    }

    /// What a seek and a challenge both require: a valid game, a player free to start one,
    /// and no guest asking for a rated game.
    fn check_new_offer(
        &self,
        member: &Member,
        variant: &Variant,
        tc: &TimeControl,
        rated: bool,
    ) -> Result<()> {
        validate_game(variant, tc)?;
        self.ready_for_new_game(member.account)?;
        if rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests play unrated games only",
            ));
        }
        Ok(())
    }

    /// Withdraws the seeks `drop` picks (from the cluster's list too, in cluster mode).
    fn drop_seeks(&mut self, drop: impl Fn(&OpenSeek) -> bool) {
        let shared = self.shared.is_some();
        let dropped = &mut self.shared_seek_drops;
        self.seeks.retain(|id, s| {
            let gone = drop(s);
            if gone && shared {
                dropped.push(*id);
            }
            !gone
        });
    }

    fn gone(&mut self, account: AccountId, conn_id: u64) {
        let owned_by_conn = |m: &Member| m.account == account && m.conn_id == conn_id;
        if self
            .queued
            .get(&account)
            .is_some_and(|(_, m)| m.conn_id == conn_id)
        {
            self.leave_pool(account);
        }
        self.drop_seeks(|s| owned_by_conn(&s.member));
        let ids: Vec<u64> = self
            .challenges
            .iter()
            .filter(|(_, c)| owned_by_conn(&c.from))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.withdraw_challenge(id);
        }
    }

    /// Challenge `id` is withdrawn by its challenger: the challenged player is told.
    fn withdraw_challenge(&mut self, id: u64) {
        let Some(c) = self.challenges.remove(&id) else {
            return;
        };
        if let Some(conn) = self.challenged_conn(&c) {
            let _ = self
                .bus
                .send_msg(conn, &ServerMsg::ChallengeCancelled { challenge_id: id });
        }
        if self.shared.is_some() {
            self.shared_challenge_drops.push(id);
        }
    }

    /// Where challenge `c`'s challenged player is now: online here, or (in cluster mode)
    /// where they were challenged.
    fn challenged_conn(&self, c: &OpenChallenge) -> Option<ConnId> {
        match self.services.registry.online(c.to) {
            Some(user) => Some(user.conn_id),
            None => self.shared.is_some().then_some(c.to_conn),
        }
    }
}

fn validate_game(variant: &Variant, tc: &TimeControl) -> Result<()> {
    variant
        .validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidVariant, e.to_string()))?;
    tc.validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))
}
