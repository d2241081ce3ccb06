//! The lobby actor's state and its handling of each request. Synchronous code in a loop
//! over the channel, plus a one-second tick that widens windows, pairs and reports
//! queue status.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::{
    Challenge, GameId, GameInfo, RequestId, SeatPair, Seek, ServerMsg,
};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

use super::pairing::Pool;
use super::{LobbyCmd, LobbyError, Member};
use crate::bots::Bots;
use crate::bus::Bus;
use crate::game::{spawn_game, GameHandle, GameServices, GameSetup};
use crate::record::{AccountId, RecordPlayer};

mod computer;
mod counts;

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
}

pub(super) async fn run(
    mut rx: mpsc::Receiver<LobbyCmd>,
    services: GameServices,
    bots: Arc<Bots>,
    shutting_down: Arc<AtomicBool>,
) {
    let mut lobby = Lobby {
        bus: services.registry.bus(),
        services,
        shutting_down,
        pools: HashMap::new(),
        queued: HashMap::new(),
        seeks: BTreeMap::new(),
        challenges: BTreeMap::new(),
        next_id: 1,
        bots,
        counted: Vec::new(),
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(cmd) => lobby.handle(cmd),
                None => break,
            },
            _ = tick.tick() => lobby.tick(),
        }
    }
}

type Result<T> = std::result::Result<T, LobbyError>;

impl Lobby {
    fn handle(&mut self, cmd: LobbyCmd) {
        match cmd {
            LobbyCmd::JoinPool {
                id,
                member,
                variant,
                preset,
                rated,
                reply,
            } => {
                let _ = reply.send(self.join_pool(id, member, variant, preset, rated));
            }
            LobbyCmd::LeavePool { account, reply } => {
                let left = self.leave_pool(account);
                let _ = reply.send(if left {
                    Ok(())
                } else {
                    Err(LobbyError::new(
                        ErrorCode::NotQueued,
                        "not waiting in a pool",
                    ))
                });
            }
            LobbyCmd::CreateSeek {
                member,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let _ = reply.send(self.create_seek(member, variant, time_control, rated));
            }
            LobbyCmd::CancelSeek {
                account,
                seek_id,
                reply,
            } => {
                let _ = reply.send(self.cancel_seek(account, seek_id));
            }
            LobbyCmd::ListSeeks { reply } => {
                let _ = reply.send(Ok(self.seeks.values().map(|s| s.seek.clone()).collect()));
            }
            LobbyCmd::AcceptSeek {
                member,
                seek_id,
                reply,
            } => {
                let _ = reply.send(self.accept_seek(member, seek_id));
            }
            LobbyCmd::Challenge {
                member,
                opponent,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let _ = reply.send(self.challenge(member, opponent, variant, time_control, rated));
            }
            LobbyCmd::AcceptChallenge {
                member,
                challenge_id,
                reply,
            } => {
                let _ = reply.send(self.accept_challenge(member, challenge_id));
            }
            LobbyCmd::DeclineChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let _ = reply.send(self.decline_challenge(account, challenge_id));
            }
            LobbyCmd::CancelChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let _ = reply.send(self.cancel_challenge(account, challenge_id));
            }
            LobbyCmd::OfferRematch {
                member,
                game_id,
                reply,
            } => {
                let _ = reply.send(self.offer_rematch(member, game_id));
            }
            LobbyCmd::PlayBot {
                member,
                strength,
                variant,
                preset,
                reply,
            } => {
                let _ = reply.send(self.play_bot(member, &strength, variant, &preset));
            }
            LobbyCmd::Counts { account, reply } => {
                let _ = reply.send(Ok(self.counts(account)));
            }
            LobbyCmd::Gone { account, conn_id } => self.gone(account, conn_id),
        }
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

    fn join_pool(
        &mut self,
        id: RequestId,
        member: Member,
        variant: Variant,
        preset: String,
        rated: bool,
    ) -> Result<()> {
        variant
            .validate()
            .map_err(|e| LobbyError::new(ErrorCode::InvalidVariant, e.to_string()))?;
        let tc = TimeControl::preset(&preset)
            .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))?;
        self.ready_for_new_game(member.account)?;
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
        // Queued before a pairing below can send `game_start` (the seating runs in a task
        // of its own; had the session answered, its `queued` could have come second).
        let _ = self.bus.send_msg(
            member.conn_id,
            &ServerMsg::Queued {
                id,
                variant,
                time_control: tc,
                rated,
            },
        );
        let now = Instant::now().into_std();
        let account = member.account;
        let pool = self.pools.entry(key.clone()).or_default();
        let paired = pool.join(account as u64, member.info.rating, now);
        self.queued.insert(account, (key.clone(), member));
        if let Some(other) = paired {
            self.start_pool_game(&key, account, other as AccountId, tc);
        }
        self.update_queued_metric();
        Ok(())
    }

    fn has_open_seek(&self, account: AccountId) -> bool {
        self.seeks.values().any(|s| s.member.account == account)
    }

    fn leave_pool(&mut self, account: AccountId) -> bool {
        let Some((key, member)) = self.queued.remove(&account) else {
            return false;
        };
        if let Some(pool) = self.pools.get_mut(&key) {
            pool.remove(account as u64, member.info.rating);
            if pool.is_empty() {
                self.pools.remove(&key);
            }
        }
        self.update_queued_metric();
        true
    }

    fn update_queued_metric(&self) {
        self.services
            .metrics
            .players_queued
            .store(self.queued.len() as u64, Ordering::Relaxed);
    }

    fn start_pool_game(&mut self, key: &PoolKey, a: AccountId, b: AccountId, tc: TimeControl) {
        let (Some((_, ma)), Some((_, mb))) = (self.queued.remove(&a), self.queued.remove(&b))
        else {
            return;
        };
        if let Err(error) = self.start_game(ma, mb, key.variant, tc, key.rated) {
            tracing::error!(account = a, message = %error.message, "a pool paired an account with itself");
        }
    }

    fn tick(&mut self) {
        let now = Instant::now().into_std();
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

    fn create_seek(
        &mut self,
        member: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Seek> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        if self.queued.contains_key(&member.account) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyQueued,
                "already waiting in a pool: leave it first",
            ));
        }
        let open = self
            .seeks
            .values()
            .filter(|s| s.member.account == member.account)
            .count();
        if open >= MAX_OPEN_PER_ACCOUNT {
            return Err(LobbyError::new(
                ErrorCode::TooManyRequests,
                "too many open seeks",
            ));
        }
        let seek = Seek {
            seek_id: self.next_id(),
            by: member.info.clone(),
            variant,
            time_control: tc,
            rated,
        };
        self.seeks.insert(
            seek.seek_id,
            OpenSeek {
                seek: seek.clone(),
                member,
            },
        );
        Ok(seek)
    }

    fn cancel_seek(&mut self, account: AccountId, seek_id: u64) -> Result<()> {
        match self.seeks.get(&seek_id) {
            Some(s) if s.member.account == account => {
                self.seeks.remove(&seek_id);
                Ok(())
            }
            _ => Err(LobbyError::new(
                ErrorCode::UnknownSeek,
                "no such seek of yours",
            )),
        }
    }

    fn accept_seek(&mut self, member: Member, seek_id: u64) -> Result<()> {
        let Some(open) = self.seeks.get(&seek_id) else {
            return Err(LobbyError::new(ErrorCode::UnknownSeek, "no such open seek"));
        };
        if open.member.account == member.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "you cannot accept your own seek",
            ));
        }
        if open.seek.rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot accept rated seeks",
            ));
        }
        self.ready_for_new_game(member.account)?;
        if self.services.registry.is_seated(open.member.account)
            || self.bus.is_closed(open.member.conn_id)
        {
            self.seeks.remove(&seek_id);
            return Err(LobbyError::new(
                ErrorCode::UnknownSeek,
                "the seek is no longer open",
            ));
        }
        let open = self.seeks.remove(&seek_id).expect("checked above");
        let _ = self
            .bus
            .send_msg(open.member.conn_id, &ServerMsg::SeekRemoved { seek_id });
        self.start_game(
            open.member,
            member,
            open.seek.variant,
            open.seek.time_control,
            open.seek.rated,
        )
    }

    fn challenge(
        &mut self,
        member: Member,
        opponent: String,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<Challenge> {
        self.check_new_offer(&member, &variant, &tc, rated)?;
        let Some((to, user)) = self.services.registry.online_by_name(&opponent) else {
            return Err(LobbyError::new(
                ErrorCode::UnknownPlayer,
                format!("{opponent} is not online"),
            ));
        };
        if to == member.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "you cannot challenge yourself",
            ));
        }
        let open = self
            .challenges
            .values()
            .filter(|c| c.from.account == member.account)
            .count();
        if open >= MAX_OPEN_PER_ACCOUNT {
            return Err(LobbyError::new(
                ErrorCode::TooManyRequests,
                "too many open challenges",
            ));
        }
        let challenge = Challenge {
            challenge_id: self.next_id(),
            from: member.info.clone(),
            to: user.name.clone(),
            variant,
            time_control: tc,
            rated,
        };
        let _ = self.bus.send_msg(
            user.conn_id,
            &ServerMsg::ChallengeReceived {
                challenge: challenge.clone(),
            },
        );
        self.challenges.insert(
            challenge.challenge_id,
            OpenChallenge {
                challenge: challenge.clone(),
                from: member,
                to,
            },
        );
        Ok(challenge)
    }

    fn accept_challenge(&mut self, member: Member, challenge_id: u64) -> Result<()> {
        match self.challenges.get(&challenge_id) {
            Some(c) if c.to == member.account => {}
            _ => {
                return Err(LobbyError::new(
                    ErrorCode::UnknownChallenge,
                    "no such challenge to you",
                ))
            }
        }
        if self.challenges[&challenge_id].challenge.rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests cannot play rated games",
            ));
        }
        self.ready_for_new_game(member.account)?;
        let open = self
            .challenges
            .remove(&challenge_id)
            .expect("checked above");
        if self.services.registry.is_seated(open.from.account)
            || self.bus.is_closed(open.from.conn_id)
        {
            return Err(LobbyError::new(
                ErrorCode::UnknownChallenge,
                "the challenger is no longer available",
            ));
        }
        let c = open.challenge;
        self.start_game(open.from, member, c.variant, c.time_control, c.rated)
    }

    fn decline_challenge(&mut self, account: AccountId, challenge_id: u64) -> Result<()> {
        match self.challenges.get(&challenge_id) {
            Some(c) if c.to == account => {
                let c = self
                    .challenges
                    .remove(&challenge_id)
                    .expect("checked above");
                let _ = self.bus.send_msg(
                    c.from.conn_id,
                    &ServerMsg::ChallengeDeclined { challenge_id },
                );
                Ok(())
            }
            _ => Err(LobbyError::new(
                ErrorCode::UnknownChallenge,
                "no such challenge to you",
            )),
        }
    }

    fn cancel_challenge(&mut self, account: AccountId, challenge_id: u64) -> Result<()> {
        match self.challenges.get(&challenge_id) {
            Some(c) if c.from.account == account => {
                let c = self
                    .challenges
                    .remove(&challenge_id)
                    .expect("checked above");
                if let Some(user) = self.services.registry.online(c.to) {
                    let _ = self.bus.send_msg(
                        user.conn_id,
                        &ServerMsg::ChallengeCancelled { challenge_id },
                    );
                }
                Ok(())
            }
            _ => Err(LobbyError::new(
                ErrorCode::UnknownChallenge,
                "no such challenge from you",
            )),
        }
    }

    fn offer_rematch(&mut self, member: Member, game_id: GameId) -> Result<()> {
        let registry = self.services.registry.clone();
        let no = || {
            LobbyError::new(
                ErrorCode::NoRematch,
                "no finished game of yours with that id",
            )
        };
        let finished = registry.finished_game(&game_id).ok_or_else(no)?;
        let seat = if finished.players.one == member.account {
            Seat::One
        } else if finished.players.two == member.account {
            Seat::Two
        } else {
            return Err(no());
        };
        self.ready_for_new_game(member.account)?;
        let now = registry.offer_rematch(&game_id, seat).ok_or_else(no)?;
        let opponent = *now.players.get(seat.other());
        let Some(user) = registry.online(opponent) else {
            return Err(LobbyError::new(
                ErrorCode::UnknownPlayer,
                "your opponent is not online",
            ));
        };
        if !*now.rematch_offers.get(seat.other()) {
            let _ = self.bus.send_msg(
                user.conn_id,
                &ServerMsg::RematchOffered { game_id, by: seat },
            );
            return Ok(());
        }
        if registry.is_seated(opponent) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyInGame,
                "your opponent is in another game",
            ));
        }
        registry.forget_finished(&game_id);
        // Both carry their ratings as the game left them (the connection's own are as of
        // its sign-in).
        let mut member = member;
        member.info.rating = *now.ratings.get(seat);
        let mut info = user.info.clone();
        info.rating = *now.ratings.get(seat.other());
        let opp = Member {
            account: opponent,
            info,
            conn_id: user.conn_id,
        };
        // Seats swap: the old seat two now plays seat one.
        let (one, two) = match seat {
            Seat::One => (opp, member),
            Seat::Two => (member, opp),
        };
        self.start_game_seated(one, two, now.variant, now.time_control, now.rated)
            .map(drop)
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
        self.seeks.retain(|_, s| !owned_by_conn(&s.member));
        let registry = &self.services.registry;
        self.challenges.retain(|id, c| {
            if owned_by_conn(&c.from) {
                if let Some(user) = registry.online(c.to) {
                    let _ = self.bus.send_msg(
                        user.conn_id,
                        &ServerMsg::ChallengeCancelled { challenge_id: *id },
                    );
                }
                return false;
            }
            true
        });
    }

    /// Remove both players from everything they were waiting in, seat them at random and
    /// start the game.
    fn start_game(
        &mut self,
        a: Member,
        b: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<()> {
        let (one, two) = if rand::random::<bool>() {
            (a, b)
        } else {
            (b, a)
        };
        self.start_game_seated(one, two, variant, tc, rated)
            .map(drop)
    }

    fn start_game_seated(
        &mut self,
        one: Member,
        two: Member,
        variant: Variant,
        tc: TimeControl,
        rated: bool,
    ) -> Result<GameHandle> {
        // Every request that seats two members refuses one account twice before this; this
        // is the one place games start, so no game of an account against itself can (its
        // record could not be rated, nor its result mean anything).
        if one.account == two.account {
            return Err(LobbyError::new(
                ErrorCode::OwnSeek,
                "a player cannot play against themselves",
            ));
        }
        for m in [&one, &two] {
            self.leave_pool(m.account);
            let account = m.account;
            self.seeks.retain(|_, s| s.member.account != account);
        }
        let rated = rated && !one.info.guest && !two.info.guest;
        let game_id = GameId::new_random_from(rand::random());
        let players = SeatPair::new(&one, &two).map(|m| RecordPlayer {
            account_id: m.account,
            name: m.info.name.clone(),
            guest: m.info.guest,
            rating: m.info.rating,
        });
        let setup = GameSetup {
            game_id,
            variant,
            time_control: tc,
            rated,
            players,
        };
        let handle = spawn_game(setup, self.services.clone());
        let game = handle.clone();
        let info = GameInfo {
            game_id,
            variant,
            time_control: tc,
            rated,
            players: SeatPair::new(one.info.clone(), two.info.clone()),
            started_at: crate::clock::unix_ms(),
        };
        // Seating waits on the game actor, so it runs in its own task: the lobby never waits.
        let bus = Arc::clone(&self.bus);
        tokio::spawn(async move {
            for (seat, member) in [(Seat::One, one), (Seat::Two, two)] {
                let _ = bus.send_msg(
                    member.conn_id,
                    &ServerMsg::GameStart {
                        game: info.clone(),
                        seat,
                    },
                );
                // A bot's task attaches its seat itself, and so learns if the game has
                // gone meanwhile.
                if crate::bots::is_bot_conn(member.conn_id) {
                    continue;
                }
                // The game queues the snapshot after `game_start`.
                let _ = handle
                    .player(seat)
                    .attach_conn(member.conn_id, None, None)
                    .await;
            }
        });
        Ok(game)
    }
}

fn validate_game(variant: &Variant, tc: &TimeControl) -> Result<()> {
    variant
        .validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidVariant, e.to_string()))?;
    tc.validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))
}
