//! A connection's session: what it has negotiated, who it is signed in as, what it
//! watches, and the handling of each client message.
//!
//! The seat a connection acts for is always looked up from its own signed-in account in
//! the registry, never taken from the message: a connection cannot act for another seat.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::mpsc;

use elementals_protocol::messages::{Account, ClientMsg, GameId, RequestId, ServerMsg};
use elementals_protocol::{ErrorCode, PROTOCOL_VERSION};

use crate::auth::AuthError;
use crate::db::AccountRow;
use crate::game::{GameError, Notice, SeatAction, SpectatorHandle};
use crate::lobby::LobbyError;
use crate::msg::close;
use crate::outbox::Outbox;
use crate::record::AccountId;
use crate::state::AppState;

mod games;
mod lobby;
mod sign_in;

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
    /// The connection's queue, for the session's own replies (the games and the lobby
    /// reach it by its identity, on the bus).
    outbox: Arc<Outbox>,
    /// The game tier's word that a request this connection sent a game is answered.
    notices: mpsc::UnboundedReceiver<Notice>,
    /// A move was handed to a game whose answer has not been heard of yet: nothing else is
    /// answered before it (`settle`).
    pending: bool,
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
        let notices = state.registry.bus().open_session(outbox.conn_id());
        Session {
            state,
            outbox: Arc::new(outbox),
            notices,
            pending: false,
            peer,
            hello: false,
            user: None,
            watching: HashMap::new(),
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
            for (game, at) in self.state.registry.awake_seats(user.account) {
                game.player(at.seat).detach(conn_id);
            }
        }
    }

    /// Handles one message, whose frame `arrived` (was read off the socket) then.
    pub async fn handle(&mut self, msg: ClientMsg, arrived: tokio::time::Instant) -> After {
        let id = msg.id();
        if !self.hello {
            return match msg {
                ClientMsg::Hello {
                    protocol_version,
                    batch,
                    ..
                } if protocol_version == PROTOCOL_VERSION => {
                    self.hello = true;
                    // Before the welcome: everything from it on may come in batches.
                    self.outbox.set_batch(batch);
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
            msg @ (C::JoinPool { .. }
            | C::LeavePool { .. }
            | C::CreateSeek { .. }
            | C::CancelSeek { .. }
            | C::PlayBot { .. }
            | C::LobbyCounts { .. }
            | C::ListSeeks { .. }
            | C::AcceptSeek { .. }
            | C::Challenge { .. }
            | C::AcceptChallenge { .. }
            | C::DeclineChallenge { .. }
            | C::CancelChallenge { .. }
            | C::OfferRematch { .. }
            | C::DeclineRematch { .. }) => {
                let cmd = self.lobby_cmd(msg).await?;
                return self.lobby(cmd).await;
            }
            C::Commit {
                id,
                game_id,
                round,
                commitment,
                pick,
                nonce,
            } => {
                return self
                    .act(
                        game_id,
                        SeatAction::Commit {
                            round,
                            commitment,
                            pick,
                            nonce,
                        },
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
            C::Abort { id, game_id } => {
                return self.act(game_id, SeatAction::Abort, id, arrived).await
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
            C::Sync { id, game_id } => return self.sync(id, game_id).await,
            C::Watch { id, game_id } => return self.watch(id, game_id).await,
            C::Unwatch { id, game_id } => self.unwatch(id, game_id),
            C::MyGames { id } => {
                let account = self.user()?.account;
                // Asking is following: `your_move` keeps this list fresh from now on.
                state.registry.follow_moves(account, self.outbox.conn_id());
                // A hibernated game lists what it waits for once it runs again.
                state.registry.wake_seated(account).await;
                Ok(ServerMsg::OpenGames {
                    id,
                    games: state.registry.my_games(account).await,
                })
            }
            C::ListGames { id } => Ok(ServerMsg::LiveGames {
                id,
                games: state.registry.most_watched(MAX_LISTED_GAMES),
            }),
        };
        reply.map(Some)
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
