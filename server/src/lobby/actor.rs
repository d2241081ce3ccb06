//! The lobby actor's state and its handling of each request. Synchronous code in a loop
//! over the channel, plus a one-second tick that widens windows, pairs and reports
//! queue status (the pools and the tick: `pools.rs`). The one wait is for a player found
//! by name on another node (a challenge, a rematch's opponent, a restored challenge):
//! one look-up in the cluster's presence (`Registry::find_online`). Games start on their
//! players' nodes (`start.rs`); the games' nodes tell the lobby as they end
//! (`rematches.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::{Challenge, Seek, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

mod offers;
mod rematches;
mod start;
mod starting;

use super::pairing::Pool;
use super::{Holding, LobbyCmd, LobbyError, Member};
use crate::alarms::Alarm;
use crate::bots::Bots;
use crate::bus::{Bus, ConnId, ReplyTo};
use crate::game::GameServices;
use crate::record::AccountId;

mod computer;
mod counts;
mod pools;
mod restore;

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
    /// The challenged player's connection when challenged (on any node: they are told
    /// through it).
    to_conn: ConnId,
}

struct Lobby {
    services: GameServices,
    /// How the lobby reaches its members' connections, by identity.
    bus: Arc<dyn Bus>,
    shutting_down: Arc<AtomicBool>,
    /// Unfinished correspondence games an account may sit in at once.
    max_correspondence: usize,
    pools: HashMap<PoolKey, Pool>,
    queued: HashMap<AccountId, (PoolKey, Member)>,
    seeks: BTreeMap<u64, OpenSeek>,
    challenges: BTreeMap<u64, OpenChallenge>,
    next_id: u64,
    bots: Arc<Bots>,
    /// The fullest pools, as the last tick counted them (so that `lobby_counts` costs a
    /// copy, however often it is asked).
    counted: Vec<(PoolKey, u32)>,
    /// Connections whose `Holding` changed since their node was last told (`tell_holdings`).
    touched: HashMap<ConnId, Member>,
    /// Games started and not yet seen in the registry (`starting.rs`).
    starting: starting::Starting,
    /// Ended games, remembered for rematch offers (`rematches.rs`).
    ended: rematches::Ended,
    /// Games against the computer under way, as this lobby knows them (at most
    /// `Bots::max_games` it starts).
    bot_games: std::collections::HashSet<elementals_protocol::messages::GameId>,
}

/// Where a generation's ids start: a seek or challenge restored from an earlier lobby
/// keeps its id, which no id of a later one takes (ids stay far below 2^53, exact in
/// JavaScript, for 2^21 generations).
const GENERATION_SHIFT: u32 = 32;

pub(super) async fn run(
    mut rx: mpsc::Receiver<LobbyCmd>,
    services: GameServices,
    bots: Arc<Bots>,
    shutting_down: Arc<AtomicBool>,
    (max_correspondence, start_wait): (usize, Duration),
    (generation, alarm): (i64, Alarm),
) {
    let first_id = u64::try_from(generation).unwrap_or(0) << GENERATION_SHIFT;
    let mut lobby = Lobby {
        bus: services.registry.bus(),
        services,
        shutting_down,
        max_correspondence,
        pools: HashMap::new(),
        queued: HashMap::new(),
        seeks: BTreeMap::new(),
        challenges: BTreeMap::new(),
        bots,
        counted: Vec::new(),
        next_id: first_id,
        touched: HashMap::new(),
        starting: starting::Starting::new(start_wait),
        ended: rematches::Ended::default(),
        bot_games: std::collections::HashSet::new(),
    };
    // The computer's games under way (restored at a restart, or started by the lobby
    // before it moved) count under the cap.
    lobby.bot_games = (lobby.services.registry.most_watched(usize::MAX).into_iter())
        .filter(|g| g.players.one.bot || g.players.two.bot)
        .map(|g| g.game_id)
        .collect();
    tracing::info!(generation, "the lobby runs on this node");
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = alarm.sounded() => {
                tracing::warn!("the lobby's lease is lost: the lobby stops here");
                break;
            }
            cmd = rx.recv() => match cmd {
                Some(cmd) => lobby.handle(cmd).await,
                None => break,
            },
            _ = tick.tick() => lobby.tick(),
        }
        lobby.tell_holdings();
    }
    // What was queued is answered: its askers ask the lobby wherever it starts next.
    lobby.bus.close_lobby();
    lobby
        .services
        .metrics
        .players_queued
        .store(0, Ordering::Relaxed);
    rx.close();
    while let Some(cmd) = rx.recv().await {
        if let Some(reply) = cmd.reply_to() {
            let moving = (
                ErrorCode::Internal,
                "the lobby is moving: ask again".to_owned(),
            );
            lobby.bus.answer(reply, Err(moving));
        }
    }
    lobby.services.db.forget_moved(super::LOBBY_LEASE).await;
}

type Result<T> = std::result::Result<T, LobbyError>;

impl Lobby {
    async fn handle(&mut self, cmd: LobbyCmd) {
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
                let found = self.services.registry.find_online(&opponent).await;
                let sent = self.challenge(member, &opponent, found, variant, time_control, rated);
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
            } => {
                let offered = self.offer_rematch(member, game_id).await;
                (reply, offered.map(|()| ok(reply)))
            }
            L::DeclineRematch {
                member,
                game_id,
                reply,
            } => {
                let declined = self.decline_rematch(member, game_id).await;
                (reply, declined.map(|()| ok(reply)))
            }
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
            L::Ended(game) => return self.game_ended(game),
            L::Rated { game_id, ratings } => return self.ended.rated(game_id, ratings),
            L::Restore {
                node,
                open,
                holdings,
            } => return self.restore(node, open, holdings).await,
        };
        self.bus
            .answer(reply, answer.map_err(|e| (e.code, e.message)));
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Whether `account` may start a game of time control `tc` now: the server takes new
    /// games, and the account has room for it (`has_room`).
    fn ready_for_new_game(&self, account: AccountId, tc: &TimeControl) -> Result<()> {
        if self.shutting_down.load(Ordering::Relaxed) {
            return Err(LobbyError::new(
                ErrorCode::ShuttingDown,
                "the server is restarting; no new games",
            ));
        }
        self.has_room(account, tc)
    }

    /// Whether `account` may sit down in one more game of time control `tc`: the "at most
    /// one" rule holds for live games only; correspondence games are counted, at most
    /// `max_correspondence` unfinished at once. The registry's seats (this node's games,
    /// and the directory's of the others) count with the games this lobby has started
    /// that it has not seen there yet, so the count is never behind.
    fn has_room(&self, account: AccountId, tc: &TimeControl) -> Result<()> {
        let mut seats = self.services.registry.seats_of(account);
        for at in self.starting.seats_of(account) {
            if !seats.iter().any(|s| s.game_id == at.game_id) {
                seats.push(*at);
            }
        }
        if tc.is_correspondence() {
            let held = seats.iter().filter(|s| !s.live).count();
            if held >= self.max_correspondence {
                return Err(LobbyError::new(
                    ErrorCode::TooManyGames,
                    format!(
                        "you sit in {held} unfinished correspondence games, the most allowed: \
                         finish one first"
                    ),
                ));
            }
        } else if seats.iter().any(|s| s.live) {
            return Err(LobbyError::new(
                ErrorCode::AlreadyInGame,
                "finish your live game first",
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
        self.ready_for_new_game(member.account, tc)?;
        if rated && member.info.guest {
            return Err(LobbyError::new(
                ErrorCode::GuestNotAllowed,
                "guests play unrated games only",
            ));
        }
        Ok(())
    }

    /// Withdraws the seeks `drop` picks.
    fn drop_seeks(&mut self, drop: impl Fn(&OpenSeek) -> bool) {
        let touched = &mut self.touched;
        self.seeks.retain(|_, s| {
            let gone = drop(s);
            if gone {
                touched.insert(s.member.conn_id, s.member.clone());
            }
            !gone
        });
    }

    /// `member`'s `Holding` has changed: their node is told after this request.
    fn touch(&mut self, member: &Member) {
        self.touched.insert(member.conn_id, member.clone());
    }

    /// Tells the nodes of the connections whose `Holding` changed what they hold now.
    fn tell_holdings(&mut self) {
        for (conn, member) in std::mem::take(&mut self.touched) {
            let holding = self.holding(member);
            self.bus.hold(conn, holding);
        }
    }

    /// What `member`'s connection has open here (`None`: nothing).
    fn holding(&self, member: Member) -> Option<Holding> {
        let conn = member.conn_id;
        let pool = self
            .queued
            .get(&member.account)
            .filter(|(_, m)| m.conn_id == conn)
            .map(|(key, _)| (key.variant, key.preset.clone(), key.rated));
        let seeks: Vec<Seek> = self
            .seeks
            .values()
            .filter(|s| s.member.conn_id == conn)
            .map(|s| s.seek.clone())
            .collect();
        let challenges: Vec<Challenge> = self
            .challenges
            .values()
            .filter(|c| c.from.conn_id == conn)
            .map(|c| c.challenge.clone())
            .collect();
        if pool.is_none() && seeks.is_empty() && challenges.is_empty() {
            return None;
        }
        Some(Holding {
            member,
            pool,
            seeks,
            challenges,
        })
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
        self.touch(&c.from);
        // Where the challenged player is now, if on this node; else where challenged.
        let to = self.services.registry.online(c.to);
        let conn = to.map_or(c.to_conn, |user| user.conn_id);
        let _ = self
            .bus
            .send_msg(conn, &ServerMsg::ChallengeCancelled { challenge_id: id });
    }
}

fn validate_game(variant: &Variant, tc: &TimeControl) -> Result<()> {
    variant
        .validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidVariant, e.to_string()))?;
    tc.validate()
        .map_err(|e| LobbyError::new(ErrorCode::InvalidTimeControl, e.to_string()))
}
