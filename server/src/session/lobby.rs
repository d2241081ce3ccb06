//! A connection's requests to the lobby: pools, seeks, challenges, games against the
//! computer, rematches and counts. Each becomes a `LobbyCmd` with where its answer goes
//! (`ReplyTo`); the lobby answers the connection itself, and the session waits to hear
//! that it has before it answers anything else.

use elementals_protocol::messages::{ClientMsg, PlayerInfo, ServerMsg};
use elementals_protocol::ErrorCode;

use super::{err, Session};
use crate::lobby::{LobbyCmd, Member};

impl Session {
    /// The lobby's command for `msg`, a request for the lobby. A request that needs an
    /// account fails here without one, and nothing is sent.
    pub(super) async fn lobby_cmd(&self, msg: ClientMsg) -> Result<LobbyCmd, (ErrorCode, String)> {
        use ClientMsg as C;
        let cmd = match msg {
            C::JoinPool {
                id,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                // The lobby queues the `queued` answer itself, ahead of any `game_start`.
                let reply = self.reply_to(Some(id));
                LobbyCmd::JoinPool {
                    member,
                    variant,
                    preset: time_control,
                    rated,
                    reply,
                }
            }
            C::LeavePool { id } => {
                let account = self.user()?.account;
                let reply = self.reply_to(Some(id));
                LobbyCmd::LeavePool { account, reply }
            }
            C::CreateSeek {
                id,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::CreateSeek {
                    member,
                    variant,
                    time_control,
                    rated,
                    reply,
                }
            }
            C::CancelSeek { id, seek_id } => {
                let account = self.user()?.account;
                let reply = self.reply_to(Some(id));
                LobbyCmd::CancelSeek {
                    account,
                    seek_id,
                    reply,
                }
            }
            C::PlayBot {
                id,
                strength,
                variant,
                time_control,
            } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::PlayBot {
                    member,
                    strength,
                    variant,
                    preset: time_control,
                    reply,
                }
            }
            C::LobbyCounts { id } => {
                let account = self.user()?.account;
                let reply = self.reply_to(Some(id));
                LobbyCmd::Counts { account, reply }
            }
            C::ListSeeks { id } => LobbyCmd::ListSeeks {
                reply: self.reply_to(Some(id)),
            },
            C::AcceptSeek { id, seek_id } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::AcceptSeek {
                    member,
                    seek_id,
                    reply,
                }
            }
            C::Challenge {
                id,
                opponent,
                variant,
                time_control,
                rated,
            } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::Challenge {
                    member,
                    opponent,
                    variant,
                    time_control,
                    rated,
                    reply,
                }
            }
            C::AcceptChallenge { id, challenge_id } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::AcceptChallenge {
                    member,
                    challenge_id,
                    reply,
                }
            }
            C::DeclineChallenge { id, challenge_id } => {
                let account = self.user()?.account;
                let reply = self.reply_to(Some(id));
                LobbyCmd::DeclineChallenge {
                    account,
                    challenge_id,
                    reply,
                }
            }
            C::CancelChallenge { id, challenge_id } => {
                let account = self.user()?.account;
                let reply = self.reply_to(Some(id));
                LobbyCmd::CancelChallenge {
                    account,
                    challenge_id,
                    reply,
                }
            }
            C::OfferRematch { id, game_id } => {
                // The rematch's players carry the ratings this game left them: an offer
                // made before its record is written waits for it.
                if let Some(finished) = self.state.registry.finished_game(&game_id) {
                    finished.wait_recorded().await;
                }
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::OfferRematch {
                    member,
                    game_id,
                    reply,
                }
            }
            C::DeclineRematch { id, game_id } => {
                let member = self.member().await?;
                let reply = self.reply_to(Some(id));
                LobbyCmd::DeclineRematch {
                    member,
                    game_id,
                    reply,
                }
            }
            // `dispatch` hands this nothing else; were it to, the client hears so.
            _ => return Err(err(ErrorCode::Internal, "not a request for the lobby")),
        };
        Ok(cmd)
    }

    /// The signed-in player as the lobby seats them, with their rating as it is now.
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

    /// Sends the lobby a request, which it answers to this connection itself (or the
    /// bus, if it has stopped), and waits to hear that it is answered.
    pub(super) async fn lobby(
        &mut self,
        cmd: LobbyCmd,
    ) -> Result<Option<ServerMsg>, (ErrorCode, String)> {
        self.state.lobby.request(cmd).await;
        self.answered().await;
        Ok(None)
    }
}
