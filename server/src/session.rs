//! A connection's session: what it has negotiated, who it is signed in as, what it
//! watches, and the handling of each client message.
//!
//! The seat a connection acts for is always looked up from its own signed-in account in
//! the registry, never taken from the message: a connection cannot act for another seat.

use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use elementals_protocol::messages::{Account, ClientMsg, GameId, PlayerInfo, RequestId, ServerMsg};
use elementals_protocol::wire;
use elementals_protocol::{ErrorCode, PROTOCOL_VERSION};

use crate::auth::{AuthError, SignedIn};
use crate::connection::close;
use crate::db::AccountRow;
use crate::game::{GameError, PlayerHandle, SeatAction, SpectatorHandle};
use crate::limits::{retry_secs, LoginRefused};
use crate::lobby::{LobbyCmd, LobbyError, Member};
use crate::outbox::Outbox;
use crate::record::AccountId;
use crate::registry::OnlineUser;
use crate::server::AppState;

/// Games one connection may watch at once.
pub(crate) const MAX_WATCHED: usize = 16;

/// Live games one `list_games` answers with (the most watched). All of them, on a busy
/// server, made an answer of ~500 KB, copied into the writer's buffer for the write.
const MAX_LISTED_GAMES: usize = 100;

/// Test-only: a `ping` with this id makes the session panic, to show that a crashed
/// connection task harms nothing else.
#[cfg(feature = "test-hooks")]
pub const PANIC_PING_ID: RequestId = 0xDEAD_BEEF;

/// What the connection should do after a message.
pub enum After {
    Continue,
    Close(u16, &'static str),
}

struct User {
    account: AccountId,
    token: String,
}

pub struct Session {
    state: Arc<AppState>,
    /// Shared with the games this connection's moves go to, which answer them.
    outbox: Arc<Outbox>,
    /// Fires once the game has answered the last move sent to it: nothing else is
    /// answered before (`settle`).
    pending: Option<oneshot::Receiver<()>>,
    /// The client's address (behind a trusted proxy, the forwarded one).
    peer: SocketAddr,
    hello: bool,
    user: Option<User>,
    watching: HashMap<GameId, SpectatorHandle>,
}

type Reply = Result<ServerMsg, (ErrorCode, String)>;

fn err(code: ErrorCode, message: impl Into<String>) -> (ErrorCode, String) {
    (code, message.into())
}

impl From<GameError> for (ErrorCode, String) {
    fn from(e: GameError) -> Self {
        (e.code, e.message)
    }
}

impl From<LobbyError> for (ErrorCode, String) {
    fn from(e: LobbyError) -> Self {
        (e.code, e.message)
    }
}

impl From<AuthError> for (ErrorCode, String) {
    fn from(e: AuthError) -> Self {
        (e.code, e.message)
    }
}

fn account_msg(row: &AccountRow) -> Account {
    Account {
        name: row.name.clone(),
        rating: row.rating,
        guest: row.guest,
        wins: row.wins,
        losses: row.losses,
        draws: row.draws,
    }
}

impl Session {
    pub fn new(state: Arc<AppState>, outbox: Outbox, peer: SocketAddr) -> Self {
        Session {
            state,
            outbox: Arc::new(outbox),
            pending: None,
            peer,
            hello: false,
            user: None,
            watching: HashMap::new(),
        }
    }

    /// Waits until the last move handed to a game is answered, so that whatever the
    /// connection sends next follows that answer (requests are answered in order). A game
    /// answers at once, so this normally finds it done and waits for nothing.
    pub async fn settle(&mut self) {
        if let Some(pending) = self.pending.take() {
            let _ = pending.await;
        }
    }

    pub fn is_authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// Whether the connection watches a game (which needs no account).
    pub fn is_watching(&self) -> bool {
        !self.watching.is_empty()
    }

    /// The connection is closing: release the seat, the lobby and the watched games.
    /// Synchronous, so that `Drop` can run it too; running it twice does nothing more.
    pub fn end(&mut self) {
        let conn_id = self.outbox.conn_id();
        for (_, spectator) in self.watching.drain() {
            spectator.unwatch(conn_id);
        }
        if let Some(user) = self.user.take() {
            self.state.registry.set_offline(user.account, conn_id);
            self.state.lobby.gone(user.account, conn_id);
            if let Some((game, seat)) = self.state.registry.seat_of(user.account) {
                game.player(seat).detach(conn_id);
            }
        }
    }

    /// Handles one message, whose frame `arrived` (was read off the socket) then.
    pub async fn handle(&mut self, msg: ClientMsg, arrived: tokio::time::Instant) -> After {
        let id = msg.id();
        if !self.hello {
            return match msg {
                ClientMsg::Hello {
                    protocol_version, ..
                } if protocol_version == PROTOCOL_VERSION => {
                    self.hello = true;
                    self.send(ServerMsg::Welcome {
                        id,
                        protocol_version: PROTOCOL_VERSION,
                        server: format!("elementals-server {}", env!("CARGO_PKG_VERSION")),
                        limits: self.state.limits(),
                    });
                    After::Continue
                }
                ClientMsg::Hello {
                    protocol_version, ..
                } => {
                    self.send_error(id, ErrorCode::UnsupportedVersion, format!("this server speaks protocol version {PROTOCOL_VERSION}, not {protocol_version}"));
                    After::Close(close::PROTOCOL, "unsupported protocol version")
                }
                _ => {
                    self.send_error(id, ErrorCode::HelloRequired, "send hello first");
                    After::Continue
                }
            };
        }
        let reply = self.dispatch(msg, arrived).await;
        match reply {
            Ok(Some(msg)) => self.send(msg),
            Ok(None) => {}
            Err((code, message)) => self.send_error(id, code, message),
        }
        After::Continue
    }

    fn send(&self, msg: ServerMsg) {
        // A reply that does not fit means the client stopped reading: drop the connection.
        self.outbox.send_msg_or_kill(&msg);
    }

    fn send_error(&self, id: RequestId, code: ErrorCode, message: impl Into<String>) {
        self.send(ServerMsg::error(Some(id), code, message));
    }

    fn user(&self) -> Result<&User, (ErrorCode, String)> {
        self.user
            .as_ref()
            .ok_or_else(|| err(ErrorCode::NotAuthenticated, "sign in first"))
    }

    async fn member(&self) -> Result<Member, (ErrorCode, String)> {
        let user = self.user()?;
        // Re-read the rating: it may have changed since sign-in.
        let row = self
            .state
            .db
            .account_by_id(user.account)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| err(ErrorCode::Internal, "account not found"))?;
        Ok(Member {
            account: user.account,
            info: PlayerInfo {
                name: row.name,
                rating: row.rating,
                guest: row.guest,
                bot: false,
            },
            conn_id: self.outbox.conn_id(),
        })
    }

    /// This connection's seat in `game_id`.
    fn seat(&self, game_id: GameId) -> Result<PlayerHandle, (ErrorCode, String)> {
        let user = self.user()?;
        let registry = &self.state.registry;
        if let Some((game, seat)) = registry.seat_of(user.account) {
            if game.game_id() == game_id {
                return Ok(game.player(seat));
            }
        }
        if registry.game(&game_id).is_some() {
            return Err(err(ErrorCode::NotSeated, "you have no seat in that game"));
        }
        // A player acting in their game after it ended is told so, not that it never
        // existed (for as long as the registry remembers finished games).
        match registry.finished_game(&game_id) {
            Some(f) if f.players.one == user.account || f.players.two == user.account => {
                Err(err(ErrorCode::GameOver, "the game has ended"))
            }
            _ => Err(err(ErrorCode::UnknownGame, "no live game with that id")),
        }
    }

    /// Hands a move to its game, which answers it (first in the same write as the events
    /// the move caused); the connection reads on meanwhile, and `settle`s before it
    /// answers anything else.
    async fn act(
        &mut self,
        game_id: GameId,
        action: SeatAction,
        id: RequestId,
        arrived: tokio::time::Instant,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        let seat = self.seat(game_id)?;
        let (answer, sent) = seat.answer_to(&self.outbox, id);
        seat.act(action, answer, arrived).await;
        self.pending = Some(sent);
        Ok(None)
    }

    async fn lobby<T>(
        &self,
        cmd: impl FnOnce(crate::lobby::LobbyReply<T>) -> LobbyCmd,
    ) -> Result<T, (ErrorCode, String)> {
        Ok(self.state.lobby.request(cmd).await?)
    }

    async fn dispatch(
        &mut self,
        msg: ClientMsg,
        arrived: tokio::time::Instant,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        use ClientMsg as C;
        let state = self.state.clone();
        let reply: Reply = match msg {
            C::Hello { id, .. } => Err(err(
                ErrorCode::BadMessage,
                format!("hello was already sent (request {id})"),
            )),
            #[cfg(feature = "test-hooks")]
            C::Ping { id } if id == PANIC_PING_ID => panic!("forced panic (test hook)"),
            C::Ping { id } => Ok(ServerMsg::Pong { id }),
            C::Register { id, name, password } => {
                self.not_signed_in()?;
                let signed = self
                    .new_account(state.auth.register(name, password))
                    .await?;
                return self.sign_in(id, signed).await.map(|_| None);
            }
            C::Login { id, name, password } => {
                self.not_signed_in()?;
                let signed = self.login(name, password).await?;
                return self.sign_in(id, signed).await.map(|_| None);
            }
            C::Guest { id } => {
                self.not_signed_in()?;
                let signed = self.new_account(state.auth.guest()).await?;
                return self.sign_in(id, signed).await.map(|_| None);
            }
            C::Resume { id, token } => {
                self.not_signed_in()?;
                let signed = state.auth.resume(&token).await?;
                return self.sign_in(id, signed).await.map(|_| None);
            }
            C::Logout { id } => {
                let token = self.user()?.token.clone();
                state.auth.logout(&token).await?;
                self.end();
                Ok(ServerMsg::Ok { id })
            }
            C::JoinPool {
                id,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                // The lobby queues the `queued` answer itself, ahead of any `game_start`.
                self.lobby(|reply| LobbyCmd::JoinPool {
                    id,
                    member,
                    variant,
                    preset: time_control,
                    rated,
                    reply,
                })
                .await?;
                return Ok(None);
            }
            C::LeavePool { id } => {
                let account = self.user()?.account;
                self.lobby(|reply| LobbyCmd::LeavePool { account, reply })
                    .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::CreateSeek {
                id,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                let seek = self
                    .lobby(|reply| LobbyCmd::CreateSeek {
                        member,
                        variant,
                        time_control,
                        rated,
                        reply,
                    })
                    .await?;
                Ok(ServerMsg::SeekCreated { id, seek })
            }
            C::CancelSeek { id, seek_id } => {
                let account = self.user()?.account;
                self.lobby(|reply| LobbyCmd::CancelSeek {
                    account,
                    seek_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::PlayBot {
                id,
                strength,
                variant,
                time_control,
            } => {
                let member = self.member().await?;
                self.lobby(|reply| LobbyCmd::PlayBot {
                    member,
                    strength,
                    variant,
                    preset: time_control,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::LobbyCounts { id } => {
                let account = self.user()?.account;
                let counts = self
                    .lobby(|reply| LobbyCmd::Counts { account, reply })
                    .await?;
                Ok(ServerMsg::Counts {
                    id,
                    online: counts.online,
                    pools: counts.pools,
                })
            }
            C::ListSeeks { id } => {
                let seeks = self.lobby(|reply| LobbyCmd::ListSeeks { reply }).await?;
                Ok(ServerMsg::Seeks { id, seeks })
            }
            C::AcceptSeek { id, seek_id } => {
                let member = self.member().await?;
                self.lobby(|reply| LobbyCmd::AcceptSeek {
                    member,
                    seek_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::Challenge {
                id,
                opponent,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                let challenge = self
                    .lobby(|reply| LobbyCmd::Challenge {
                        member,
                        opponent,
                        variant,
                        time_control,
                        rated,
                        reply,
                    })
                    .await?;
                Ok(ServerMsg::ChallengeSent { id, challenge })
            }
            C::AcceptChallenge { id, challenge_id } => {
                let member = self.member().await?;
                self.lobby(|reply| LobbyCmd::AcceptChallenge {
                    member,
                    challenge_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::DeclineChallenge { id, challenge_id } => {
                let account = self.user()?.account;
                self.lobby(|reply| LobbyCmd::DeclineChallenge {
                    account,
                    challenge_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::CancelChallenge { id, challenge_id } => {
                let account = self.user()?.account;
                self.lobby(|reply| LobbyCmd::CancelChallenge {
                    account,
                    challenge_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::OfferRematch { id, game_id } => {
                // The rematch's players carry the ratings this game left them: an offer
                // made before its record is written waits for it.
                if let Some(finished) = state.registry.finished_game(&game_id) {
                    finished.wait_recorded().await;
                }
                let member = self.member().await?;
                self.lobby(|reply| LobbyCmd::OfferRematch {
                    member,
                    game_id,
                    reply,
                })
                .await?;
                Ok(ServerMsg::Ok { id })
            }
            C::Commit {
                id,
                game_id,
                round,
                commitment,
            } => {
                return self
                    .act(
                        game_id,
                        SeatAction::Commit { round, commitment },
                        id,
                        arrived,
                    )
                    .await;
            }
            C::Reveal {
                id,
                game_id,
                round,
                pick,
                nonce,
            } => {
                return self
                    .act(
                        game_id,
                        SeatAction::Reveal { round, pick, nonce },
                        id,
                        arrived,
                    )
                    .await;
            }
            C::Resign { id, game_id } => {
                return self.act(game_id, SeatAction::Resign, id, arrived).await
            }
            C::OfferDraw { id, game_id } => {
                return self.act(game_id, SeatAction::OfferDraw, id, arrived).await
            }
            C::DeclineDraw { id, game_id } => {
                return self
                    .act(game_id, SeatAction::DeclineDraw, id, arrived)
                    .await
            }
            C::ClaimWin { id, game_id } => {
                return self.act(game_id, SeatAction::ClaimWin, id, arrived).await
            }
            C::Sync { id, game_id } => {
                // The game queues the snapshot itself, in order with its events.
                if let Some(spectator) = self.watching.get(&game_id) {
                    // An ended game answers no snapshot, however long its task lingers
                    // (PROTOCOL.md section 7); its players are told the same by `seat`.
                    if state.registry.game(&game_id).is_none() {
                        return Err(err(ErrorCode::GameOver, "the game has ended"));
                    }
                    spectator.watch(&self.outbox, Some(id)).await?;
                } else if self.user.is_none() {
                    // No seat without an account: answered as for anyone who neither plays
                    // nor watches the game, so that a client may try `watch` next.
                    return Err(match state.registry.game(&game_id) {
                        Some(_) => err(ErrorCode::NotSeated, "you have no seat in that game"),
                        None => err(ErrorCode::UnknownGame, "no live game with that id"),
                    });
                } else {
                    let player = self.seat(game_id)?;
                    player.attach(&self.outbox, Some(id)).await?;
                }
                return Ok(None);
            }
            C::ListGames { id } => Ok(ServerMsg::LiveGames {
                id,
                games: state.registry.most_watched(MAX_LISTED_GAMES),
            }),
            C::Watch { id, game_id } => {
                if self.watching.contains_key(&game_id) {
                    // Already watching: nothing changes and the game is not asked (a
                    // fresh snapshot is `sync`'s).
                    return Ok(Some(ServerMsg::Ok { id }));
                }
                if self.watching.len() >= MAX_WATCHED {
                    // Games that have ended since they were watched no longer count.
                    self.watching
                        .retain(|id, _| state.registry.game(id).is_some());
                    if self.watching.len() >= MAX_WATCHED {
                        return Err(err(ErrorCode::TooManyRequests, "watching too many games"));
                    }
                }
                let game = state
                    .registry
                    .game(&game_id)
                    .ok_or_else(|| err(ErrorCode::UnknownGame, "no live game with that id"))?;
                let spectator = game.spectator();
                // The game queues the snapshot itself, in order with its events.
                spectator.watch(&self.outbox, Some(id)).await?;
                self.watching.insert(game_id, spectator);
                return Ok(None);
            }
            C::Unwatch { id, game_id } => {
                let spectator = self
                    .watching
                    .remove(&game_id)
                    .ok_or_else(|| err(ErrorCode::NotWatching, "not watching that game"))?;
                spectator.unwatch(self.outbox.conn_id());
                Ok(ServerMsg::Ok { id })
            }
        };
        reply.map(Some)
    }

    /// A password login, within the failed-login limits per account and per address.
    async fn login(&self, name: String, password: String) -> Result<SignedIn, (ErrorCode, String)> {
        let logins = &self.state.abuse.logins;
        let ip = self.peer.ip();
        if let Err(refused) = logins.check(&name, ip, Instant::now()) {
            let message = match refused {
                LoginRefused::Account => "too many failed logins for this account; wait a minute",
                LoginRefused::Address => "too many failed logins from this address; wait a minute",
            };
            return Err(err(ErrorCode::RateLimited, message));
        }
        match self.state.auth.login(name.clone(), password).await {
            Ok(signed) => {
                logins.succeeded(&name);
                Ok(signed)
            }
            Err(e) => {
                if e.code == ErrorCode::BadCredentials {
                    logins.failed(&name, ip, Instant::now());
                }
                Err(e.into())
            }
        }
    }

    /// Creates an account (`create`: a registration or a guest) within the address's
    /// allowance of new accounts. A refusal has cost nothing; a creation that fails gives
    /// its allowance back.
    async fn new_account(
        &self,
        create: impl std::future::Future<Output = Result<SignedIn, AuthError>>,
    ) -> Result<SignedIn, (ErrorCode, String)> {
        let allowance = &self.state.abuse.new_accounts;
        let ip = self.peer.ip();
        if let Err(wait) = allowance.take(ip, Instant::now()) {
            return Err(err(
                ErrorCode::RateLimited,
                format!(
                    "too many new accounts from this address; retry in {} s",
                    retry_secs(wait)
                ),
            ));
        }
        create.await.map_err(|e| {
            allowance.refund(ip, Instant::now());
            e.into()
        })
    }

    fn not_signed_in(&self) -> Result<(), (ErrorCode, String)> {
        match self.user {
            Some(_) => Err(err(ErrorCode::AlreadyAuthenticated, "already signed in")),
            None => Ok(()),
        }
    }

    /// Become `signed.account` on this connection: supersede an older connection of the
    /// same account, answer `authenticated`, and rejoin a game in progress.
    async fn sign_in(
        &mut self,
        id: RequestId,
        signed: SignedIn,
    ) -> Result<(), (ErrorCode, String)> {
        let account = &signed.account;
        let info = PlayerInfo {
            name: account.name.clone(),
            rating: account.rating,
            guest: account.guest,
            bot: false,
        };
        let user = OnlineUser {
            name: account.name.clone(),
            info,
            conn_id: self.outbox.conn_id(),
        };
        if let Some(old) = self.state.registry.set_online(account.id, user) {
            if old.conn_id != self.outbox.conn_id() {
                let bus = self.state.registry.bus();
                let notice = ServerMsg::Notice {
                    code: "superseded".into(),
                    message: "this account signed in on another connection".into(),
                };
                let _ = bus.send_msg(old.conn_id, &notice);
                bus.close(
                    old.conn_id,
                    close::SUPERSEDED,
                    "superseded by a newer connection",
                );
            }
        }
        self.user = Some(User {
            account: account.id,
            token: signed.token.clone(),
        });
        let authenticated = |game_id| ServerMsg::Authenticated {
            id,
            account: account_msg(account),
            token: signed.token.clone(),
            token_expires_at: signed.expires_at,
            game_id,
        };
        if let Some((game, seat)) = self.state.registry.seat_of(account.id) {
            // The game queues `authenticated` (naming it) and the snapshot to this
            // connection itself, in order with its events. If it has just ended, neither
            // is queued and the answer below says the account is not seated.
            let frame = Bytes::from(wire::encode(&authenticated(Some(game.game_id()))));
            let player = game.player(seat);
            if player.attach_after(&self.outbox, frame).await.is_ok() {
                return Ok(());
            }
        }
        self.send(authenticated(None));
        Ok(())
    }
}

impl Drop for Session {
    /// However the connection's task ends (even unwinding from a panic, or cancelled at
    /// shutdown), the account goes offline and the seat is detached, so the game's grace
    /// period starts instead of the opponent waiting on a ghost.
    fn drop(&mut self) {
        self.end();
    }
}
