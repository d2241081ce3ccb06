//! The typed client: one async method per request of the protocol, each returning the
//! reply's contents or a [`ClientError`], over a [`Connection`].

use std::time::{Duration, Instant};

use elementals_protocol::commitment::{COMMITMENT_LEN, NONCE_LEN};
use elementals_protocol::messages::{
    Account, Challenge, GameId, GameSnapshot, LiveGame, MyGame, PoolCount, RequestId, Seek,
};
use elementals_protocol::{ClientMsg, ErrorCode, Seat, ServerMsg, TimeControl, Variant};

use crate::connection::{ConnectOptions, Connection, ServerInfo};
use crate::error::ClientError;

/// A signed-in session, as `authenticated` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub account: Account,
    /// Keep it to [`Client::resume`] after a dropped connection.
    pub token: String,
    /// Unix time in milliseconds.
    pub token_expires_at: u64,
    /// The game whose `snapshot` is the next event ([`Client::next_event`]): the account's
    /// live game, else its correspondence game seated longest. `None` when not seated (a
    /// game it was in has ended).
    pub game_id: Option<GameId>,
    /// Every game the account holds a seat in, its live game first; the others' snapshots
    /// come by [`Client::sync`]. Empty when it holds none (and from an older server, which
    /// names `game_id` alone).
    pub games: Vec<GameId>,
}

impl Session {
    /// The games to come back to: `games`, or `game_id` alone from an older server.
    pub fn seated(&self) -> Vec<GameId> {
        if self.games.is_empty() {
            self.game_id.into_iter().collect()
        } else {
            self.games.clone()
        }
    }
}

/// What `queued` confirms about the pool joined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queued {
    pub variant: Variant,
    pub time_control: TimeControl,
    pub rated: bool,
}

/// A connection with one method per request. All take `&self`.
pub struct Client {
    connection: Connection,
}

impl Client {
    /// Connect with default options and say `hello`.
    pub async fn connect(url: &str) -> Result<Client, ClientError> {
        Client::connect_with(url, ConnectOptions::default()).await
    }

    pub async fn connect_with(url: &str, options: ConnectOptions) -> Result<Client, ClientError> {
        Ok(Client {
            connection: Connection::connect_with(url, options).await?,
        })
    }

    /// The underlying connection, for raw requests.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    pub fn server_info(&self) -> &ServerInfo {
        self.connection.server_info()
    }

    /// The next push or game event; `None` once the connection has closed.
    pub async fn next_event(&self) -> Option<ServerMsg> {
        self.connection.next_event().await
    }

    // --- connection ---

    /// Round-trip time of a `ping`.
    pub async fn ping(&self) -> Result<Duration, ClientError> {
        let start = Instant::now();
        match self.request(|id| ClientMsg::Ping { id }).await? {
            ServerMsg::Pong { .. } => Ok(start.elapsed()),
            other => Err(ClientError::unexpected(other)),
        }
    }

    // --- identity ---

    pub async fn register(&self, name: &str, password: &str) -> Result<Session, ClientError> {
        let (name, password) = (name.to_owned(), password.to_owned());
        self.authenticate(|id| ClientMsg::Register { id, name, password })
            .await
    }

    pub async fn login(&self, name: &str, password: &str) -> Result<Session, ClientError> {
        let (name, password) = (name.to_owned(), password.to_owned());
        self.authenticate(|id| ClientMsg::Login { id, name, password })
            .await
    }

    /// Register `name`, or log in if the name is already taken.
    pub async fn register_or_login(
        &self,
        name: &str,
        password: &str,
    ) -> Result<Session, ClientError> {
        match self.register(name, password).await {
            Err(err) if err.code() == Some(ErrorCode::NameTaken) => {
                self.login(name, password).await
            }
            other => other,
        }
    }

    pub async fn guest(&self) -> Result<Session, ClientError> {
        self.authenticate(|id| ClientMsg::Guest { id }).await
    }

    pub async fn resume(&self, token: &str) -> Result<Session, ClientError> {
        let token = token.to_owned();
        self.authenticate(|id| ClientMsg::Resume { id, token })
            .await
    }

    pub async fn logout(&self) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::Logout { id }).await
    }

    // --- lobby ---

    /// Wait in the pool for `variant` under the named preset (`blitz`, `rapid`, `live`,
    /// `corr-1d`, `corr-3d`, `corr-7d`).
    /// A `game_start` event follows when paired.
    pub async fn join_pool(
        &self,
        variant: Variant,
        preset: &str,
        rated: bool,
    ) -> Result<Queued, ClientError> {
        let time_control = preset.to_owned();
        let reply = self
            .request(|id| ClientMsg::JoinPool {
                id,
                variant,
                time_control,
                rated,
            })
            .await?;
        match reply {
            ServerMsg::Queued {
                variant,
                time_control,
                rated,
                ..
            } => Ok(Queued {
                variant,
                time_control,
                rated,
            }),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn leave_pool(&self) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::LeavePool { id }).await
    }

    pub async fn create_seek(
        &self,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
    ) -> Result<Seek, ClientError> {
        let reply = self
            .request(|id| ClientMsg::CreateSeek {
                id,
                variant,
                time_control,
                rated,
            })
            .await?;
        match reply {
            ServerMsg::SeekCreated { seek, .. } => Ok(seek),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn list_seeks(&self) -> Result<Vec<Seek>, ClientError> {
        match self.request(|id| ClientMsg::ListSeeks { id }).await? {
            ServerMsg::Seeks { seeks, .. } => Ok(seeks),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn accept_seek(&self, seek_id: u64) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::AcceptSeek { id, seek_id }).await
    }

    pub async fn cancel_seek(&self, seek_id: u64) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::CancelSeek { id, seek_id }).await
    }

    pub async fn challenge(
        &self,
        opponent: &str,
        variant: Variant,
        time_control: TimeControl,
        rated: bool,
    ) -> Result<Challenge, ClientError> {
        let opponent = opponent.to_owned();
        let reply = self
            .request(|id| ClientMsg::Challenge {
                id,
                opponent,
                variant,
                time_control,
                rated,
            })
            .await?;
        match reply {
            ServerMsg::ChallengeSent { challenge, .. } => Ok(challenge),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn accept_challenge(&self, challenge_id: u64) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::AcceptChallenge { id, challenge_id })
            .await
    }

    pub async fn decline_challenge(&self, challenge_id: u64) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::DeclineChallenge { id, challenge_id })
            .await
    }

    pub async fn cancel_challenge(&self, challenge_id: u64) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::CancelChallenge { id, challenge_id })
            .await
    }

    /// A game at once against the server's computer opponent at `strength` (`"easy"`,
    /// `"medium"`, `"hard"`), never rated; its `game_start` follows as an event.
    pub async fn play_bot(
        &self,
        strength: &str,
        variant: Variant,
        preset: &str,
    ) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::PlayBot {
            id,
            strength: strength.into(),
            variant,
            time_control: preset.into(),
        })
        .await
    }

    /// The players online and, for each pool others wait in, how many.
    pub async fn lobby_counts(&self) -> Result<(u32, Vec<PoolCount>), ClientError> {
        match self.request(|id| ClientMsg::LobbyCounts { id }).await? {
            ServerMsg::Counts { online, pools, .. } => Ok((online, pools)),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn offer_rematch(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::OfferRematch { id, game_id }).await
    }

    /// Decline the opponent's offer of a rematch of `game_id` (a `rematch_offered` push);
    /// they hear `rematch_declined`.
    pub async fn decline_rematch(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::DeclineRematch { id, game_id })
            .await
    }

    // --- playing ---

    pub async fn commit(
        &self,
        game_id: GameId,
        round: u32,
        commitment: [u8; COMMITMENT_LEN],
    ) -> Result<(), ClientError> {
        self.send_commit(game_id, round, commitment, None).await
    }

    /// Commits and escrows the reveal in one visit: the server checks `pick` and `nonce`
    /// against `commitment` at once (`escrow_mismatch` if they do not open it), holds them
    /// secret and reveals for this player when the reveal phase opens, so no `reveal` follows.
    /// The server sees the pick from now on (PROTOCOL.md section 8).
    pub async fn commit_escrowed(
        &self,
        game_id: GameId,
        round: u32,
        commitment: [u8; COMMITMENT_LEN],
        pick: u16,
        nonce: [u8; NONCE_LEN],
    ) -> Result<(), ClientError> {
        self.send_commit(game_id, round, commitment, Some((pick, nonce)))
            .await
    }

    async fn send_commit(
        &self,
        game_id: GameId,
        round: u32,
        commitment: [u8; COMMITMENT_LEN],
        escrow: Option<(u16, [u8; NONCE_LEN])>,
    ) -> Result<(), ClientError> {
        let commitment = commitment.to_vec();
        let (pick, nonce) = escrow.map_or((None, None), |(pick, nonce)| {
            (Some(pick), Some(nonce.to_vec()))
        });
        self.ok(|id| ClientMsg::Commit {
            id,
            game_id,
            round,
            commitment,
            pick,
            nonce,
        })
        .await
    }

    pub async fn reveal(
        &self,
        game_id: GameId,
        round: u32,
        pick: u16,
        nonce: [u8; NONCE_LEN],
    ) -> Result<(), ClientError> {
        let nonce = nonce.to_vec();
        self.ok(|id| ClientMsg::Reveal {
            id,
            game_id,
            round,
            pick,
            nonce,
        })
        .await
    }

    /// Call `game_id` off, with no result and no rating change, while round 1 still waits
    /// for a commitment (until both players have committed; then the refusal's code is
    /// `abort_not_allowed`).
    pub async fn abort(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::Abort { id, game_id }).await
    }

    pub async fn resign(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::Resign { id, game_id }).await
    }

    /// Offer a draw, or accept the opponent's standing offer.
    pub async fn offer_draw(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::OfferDraw { id, game_id }).await
    }

    pub async fn decline_draw(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::DeclineDraw { id, game_id }).await
    }

    pub async fn claim_win(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::ClaimWin { id, game_id }).await
    }

    /// A fresh snapshot of a game this connection plays or watches, with this
    /// connection's seat in it, if any.
    pub async fn sync(&self, game_id: GameId) -> Result<(GameSnapshot, Option<Seat>), ClientError> {
        match self.request(|id| ClientMsg::Sync { id, game_id }).await? {
            ServerMsg::Snapshot { snapshot, seat, .. } => Ok((snapshot, seat)),
            other => Err(ClientError::unexpected(other)),
        }
    }

    /// This account's open games, each with the seats it waits for and their deadlines.
    /// Asking also follows them: from then on this connection's events include a
    /// [`ServerMsg::YourMove`] whenever one of the account's actions becomes owed
    /// (PROTOCOL.md, `your_move`), until the account signs in elsewhere or out.
    pub async fn my_games(&self) -> Result<Vec<MyGame>, ClientError> {
        match self.request(|id| ClientMsg::MyGames { id }).await? {
            ServerMsg::OpenGames { games, .. } => Ok(games),
            other => Err(ClientError::unexpected(other)),
        }
    }

    // --- spectating ---

    /// The live games, the most watched first: at most 100 (the server's HTTP API at
    /// `/api/games/live` lists them all).
    pub async fn list_games(&self) -> Result<Vec<LiveGame>, ClientError> {
        match self.request(|id| ClientMsg::ListGames { id }).await? {
            ServerMsg::LiveGames { games, .. } => Ok(games),
            other => Err(ClientError::unexpected(other)),
        }
    }

    /// Start watching; the game's events follow as events. A game this connection already
    /// watches is answered `ok` (PROTOCOL.md section 7): its snapshot then comes from `sync`.
    pub async fn watch(&self, game_id: GameId) -> Result<GameSnapshot, ClientError> {
        match self.request(|id| ClientMsg::Watch { id, game_id }).await? {
            ServerMsg::Snapshot { snapshot, .. } => Ok(snapshot),
            ServerMsg::Ok { .. } => Ok(self.sync(game_id).await?.0),
            other => Err(ClientError::unexpected(other)),
        }
    }

    pub async fn unwatch(&self, game_id: GameId) -> Result<(), ClientError> {
        self.ok(|id| ClientMsg::Unwatch { id, game_id }).await
    }

    // --- plumbing ---

    /// Any request, answered by its raw reply (an `error` reply is an `Err`).
    pub async fn request(
        &self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<ServerMsg, ClientError> {
        self.connection.request(build).await
    }

    async fn ok(&self, build: impl FnOnce(RequestId) -> ClientMsg) -> Result<(), ClientError> {
        match self.request(build).await? {
            ServerMsg::Ok { .. } => Ok(()),
            other => Err(ClientError::unexpected(other)),
        }
    }

    async fn authenticate(
        &self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<Session, ClientError> {
        match self.request(build).await? {
            ServerMsg::Authenticated {
                account,
                token,
                token_expires_at,
                game_id,
                games,
                ..
            } => Ok(Session {
                account,
                token,
                token_expires_at,
                game_id,
                games,
            }),
            other => Err(ClientError::unexpected(other)),
        }
    }
}
