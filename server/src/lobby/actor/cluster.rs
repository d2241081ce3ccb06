//! The lobby in cluster mode: the pools and the list of open seeks are the cluster's, in
//! Redis (`lobby::shared`); a node keeps its own members' seeks too (their limits, their
//! withdrawal when the connection ends), and so are challenges (`cluster_challenges`).
//! Rematches and games against the computer stay this node's own, but take their players
//! out of the cluster's pools as a pairing does (`cluster_rematch`, `computer`).
//!
//! Joining, leaving and pairing wait on Redis (one round trip each, bounded by
//! `REDIS_WAIT`): the lobby handles them in order with everything else, so a member
//! never waits in a pool its node has already withdrawn it from.
//!
//! Here: the requests' dispatch and the withdrawals flushed to Redis; a member joining a
//! pool, and a pairing's game started, are in `cluster_pools`.

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::ErrorCode;

use super::{Lobby, PoolKey};
use crate::lobby::shared::{SharedError, SharedKey};
use crate::lobby::{LobbyCmd, LobbyError};
use crate::record::AccountId;

pub(super) fn shared_key(key: &PoolKey) -> SharedKey {
    SharedKey {
        variant: key.variant,
        preset: key.preset.clone(),
        rated: key.rated,
    }
}

pub(super) fn unreachable_redis(error: &SharedError) -> LobbyError {
    tracing::error!(%error, "the cluster's pools");
    LobbyError::new(
        ErrorCode::Internal,
        "the cluster's pools cannot be reached; retry later",
    )
}

/// The answer to a player whom another node is seating in a game this very moment (its
/// `game_start` is on its way).
pub(super) fn seating_elsewhere() -> LobbyError {
    LobbyError::new(ErrorCode::AlreadyInGame, "finish your current game first")
}

impl Lobby {
    /// `handle`, with the requests on pools taken to the cluster's.
    pub(super) async fn handle_shared(&mut self, cmd: LobbyCmd) {
        self.flush_leaves().await;
        match cmd {
            LobbyCmd::JoinPool {
                member,
                variant,
                preset,
                rated,
                reply,
            } => {
                let joined = self
                    .join_shared(reply, member, variant, preset, rated)
                    .await;
                match joined {
                    Ok(()) => self.bus.answered(reply, true),
                    Err(e) => self.bus.answer(reply, Err((e.code, e.message))),
                }
            }
            LobbyCmd::LeavePool { account, reply } => {
                // Forgotten here once Redis has it out: a leave that fails changes nothing,
                // and the member may ask again.
                let left = match self.queued.get(&account) {
                    Some((key, _)) => {
                        let left = self.shared_pools().leave(&shared_key(key), account).await;
                        if left.is_ok() {
                            self.queued.remove(&account);
                            self.shared_since.remove(&account);
                            self.update_queued_metric();
                        }
                        left
                    }
                    None => Ok(false),
                };
                let answer = match left {
                    Ok(true) => Ok(ServerMsg::Ok {
                        id: reply.request_id.unwrap_or_default(),
                    }),
                    // Paired meanwhile by another node: its `game_start` is on its way.
                    Ok(false) => Err((ErrorCode::NotQueued, "not waiting in a pool".into())),
                    Err(e) => {
                        let e = unreachable_redis(&e);
                        Err((e.code, e.message))
                    }
                };
                self.bus.answer(reply, answer);
            }
            LobbyCmd::CreateSeek {
                member,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let created =
                    match self.forget_if_paired(member.account).await.and_then(|()| {
                        self.create_seek(member.clone(), variant, time_control, rated)
                    }) {
                        Ok(seek) => match self.shared_pools().put_seek(&seek, &member).await {
                            Ok(()) => Ok(ServerMsg::SeekCreated {
                                id: reply.request_id.unwrap_or_default(),
                                seek,
                            }),
                            Err(e) => {
                                self.seeks.remove(&seek.seek_id);
                                Err(unreachable_redis(&e))
                            }
                        },
                        Err(e) => Err(e),
                    };
                self.bus
                    .answer(reply, created.map_err(|e| (e.code, e.message)));
            }
            LobbyCmd::CancelSeek {
                account,
                seek_id,
                reply,
            } => {
                // Forgotten here once Redis has it off the list: a cancel that fails
                // changes nothing, and the maker may ask again.
                let cancelled = match self.own_seek(account, seek_id) {
                    Ok(()) => match self.shared_pools().take_seek(seek_id).await {
                        Ok(true) => {
                            self.seeks.remove(&seek_id);
                            Ok(ServerMsg::Ok {
                                id: reply.request_id.unwrap_or_default(),
                            })
                        }
                        // Accepted on another node meanwhile: its game is starting.
                        Ok(false) => {
                            self.seeks.remove(&seek_id);
                            Err(LobbyError::new(
                                ErrorCode::UnknownSeek,
                                "the seek is no longer open",
                            ))
                        }
                        Err(e) => Err(unreachable_redis(&e)),
                    },
                    Err(e) => Err(e),
                };
                self.bus
                    .answer(reply, cancelled.map_err(|e| (e.code, e.message)));
            }
            LobbyCmd::ListSeeks { reply } => {
                let listed = match self.shared_pools().seeks().await {
                    Ok(seeks) => Ok(ServerMsg::Seeks {
                        id: reply.request_id.unwrap_or_default(),
                        seeks,
                    }),
                    Err(e) => {
                        let e = unreachable_redis(&e);
                        Err((e.code, e.message))
                    }
                };
                self.bus.answer(reply, listed);
            }
            LobbyCmd::AcceptSeek {
                member,
                seek_id,
                reply,
            } => {
                let accepted =
                    self.accept_shared_seek(member, seek_id)
                        .await
                        .map(|()| ServerMsg::Ok {
                            id: reply.request_id.unwrap_or_default(),
                        });
                self.bus
                    .answer(reply, accepted.map_err(|e| (e.code, e.message)));
            }
            LobbyCmd::Challenge {
                member,
                opponent,
                variant,
                time_control,
                rated,
                reply,
            } => {
                let sent = self
                    .challenge_shared(member, opponent, variant, time_control, rated)
                    .await
                    .map(|challenge| ServerMsg::ChallengeSent {
                        id: reply.request_id.unwrap_or_default(),
                        challenge,
                    });
                self.bus
                    .answer(reply, sent.map_err(|e| (e.code, e.message)));
            }
            LobbyCmd::AcceptChallenge {
                member,
                challenge_id,
                reply,
            } => {
                let done = self.accept_challenge_shared(member, challenge_id).await;
                self.answer_done(reply, done);
            }
            LobbyCmd::DeclineChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let done = self.decline_challenge_shared(account, challenge_id).await;
                self.answer_done(reply, done);
            }
            LobbyCmd::CancelChallenge {
                account,
                challenge_id,
                reply,
            } => {
                let done = self.cancel_challenge_shared(account, challenge_id).await;
                self.answer_done(reply, done);
            }
            LobbyCmd::OfferRematch {
                member,
                game_id,
                reply,
            } => self.offer_rematch_shared(member, game_id, reply).await,
            LobbyCmd::PlayBot {
                member,
                strength,
                variant,
                preset,
                reply,
            } => {
                let started = self
                    .play_bot_shared(member, &strength, variant, &preset)
                    .await;
                self.answer_done(reply, started);
            }
            cmd => self.handle(cmd),
        }
        self.flush_leaves().await;
    }

    pub(super) fn answer_done(&self, reply: crate::bus::ReplyTo, done: super::Result<()>) {
        let answer = done
            .map(|()| ServerMsg::Ok {
                id: reply.request_id.unwrap_or_default(),
            })
            .map_err(|e| (e.code, e.message));
        self.bus.answer(reply, answer);
    }

    pub(super) fn shared_pools(&self) -> crate::lobby::shared::SharedPools {
        self.shared
            .clone()
            .expect("the cluster's pools, in cluster mode")
    }

    /// Withdraws `account` from the cluster's pool `key` at the next flush.
    pub(super) fn leave_later(&mut self, key: PoolKey, account: AccountId) {
        let leave = (key, account);
        if !self.shared_leaves.contains(&leave) {
            self.shared_leaves.push(leave);
        }
    }

    /// Removes from the cluster's pools, seeks and challenges what this node has
    /// withdrawn: before and after each request, and at each tick.
    ///
    /// What Redis does not take is kept for the next flush, in order (the first failure
    /// stops a flush), and nothing is sent while Redis is known out of reach (until the
    /// tick has made the connection again): so an outage costs the lobby one wait, not
    /// one a request. Forgotten, it would stay in Redis with no node holding it: a member
    /// of a connection gone, paired by another node; a seek withdrawn, there for anyone to
    /// accept. A pending leave goes before the request of the same player that follows it
    /// (a join again finds no stale entry).
    pub(super) async fn flush_leaves(&mut self) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if !shared.reachable() {
            return;
        }
        let mut leaves = std::mem::take(&mut self.shared_leaves).into_iter();
        while let Some((key, account)) = leaves.next() {
            if let Err(error) = shared.leave(&shared_key(&key), account).await {
                tracing::error!(%error, account, "leaving the cluster's pool");
                self.shared_leaves.push((key, account));
                self.shared_leaves.extend(leaves);
                return;
            }
        }
        let dropped = std::mem::take(&mut self.shared_seek_drops);
        if let Err(error) = shared.drop_seeks(&dropped).await {
            tracing::error!(%error, "withdrawing seeks from the cluster's list");
            self.shared_seek_drops = dropped;
            return;
        }
        let dropped = std::mem::take(&mut self.shared_challenge_drops);
        if let Err(error) = shared.drop_challenges(&dropped).await {
            tracing::error!(%error, "withdrawing challenges from the cluster's store");
            self.shared_challenge_drops = dropped;
        }
    }
}
