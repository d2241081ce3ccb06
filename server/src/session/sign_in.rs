//! Signing in: a registration, a login, a guest or a resumed session, each within the
//! abuse limits, and what follows (an older connection of the account superseded, a game
//! in progress rejoined).

use std::time::Instant;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, PlayerInfo, RequestId, ServerMsg};
use elementals_protocol::wire;
use elementals_protocol::ErrorCode;

use super::{account_msg, err, Session, User};
use crate::auth::{AuthError, SignedIn};
use crate::limits::{retry_secs, LoginRefused};
use crate::registry::OnlineUser;

impl Session {
    /// A password login, within the failed-login limits per account and per address.
    pub(super) async fn login(
        &self,
        name: String,
        password: String,
    ) -> Result<SignedIn, (ErrorCode, String)> {
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
    pub(super) async fn new_account(
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

    pub(super) fn not_signed_in(&self) -> Result<(), (ErrorCode, String)> {
        match self.user {
            Some(_) => Err(err(ErrorCode::AlreadyAuthenticated, "already signed in")),
            None => Ok(()),
        }
    }

    /// Become `signed.account` on this connection: supersede an older connection of the
    /// same account, answer `authenticated`, and rejoin a game in progress.
    pub(super) async fn sign_in(
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
                crate::bus::supersede(&*self.state.registry.bus(), old.conn_id);
            }
        }
        // Before `authenticated`: from then on a challenge from any node finds the player.
        self.state.registry.told_peers().await;
        self.user = Some(User {
            account: account.id,
            token: signed.token.clone(),
        });
        let mut seats = self.state.registry.seats_of(account.id);
        seats.sort_by_key(|s| !s.live);
        let games: Vec<GameId> = seats.iter().map(|s| s.game_id).collect();
        let authenticated = |game_id| ServerMsg::Authenticated {
            id,
            account: account_msg(account),
            token: signed.token.clone(),
            token_expires_at: signed.expires_at,
            game_id,
            games: games.clone(),
        };
        // One game's snapshot follows: the live game's (its grace period ends as the
        // player is back), else the correspondence game seated longest; the client
        // `sync`s the others it wants (each would be woken, were all attached here).
        let first = seats
            .first()
            .and_then(|at| Some((self.state.registry.game(&at.game_id)?, at.seat)));
        if let Some((game, seat)) = first {
            // The game queues `authenticated` (naming it) and the snapshot to this
            // connection itself, in order with its events. If it has just ended, neither
            // is queued and the answer below names no game.
            let frame = Bytes::from(wire::encode(&authenticated(Some(game.game_id()))));
            let player = game.player(seat);
            player.attach(self.reply_to(None), Some(frame)).await;
            if self.answered().await {
                return Ok(());
            }
        }
        self.send(authenticated(None));
        Ok(())
    }
}
