//! `Db`'s requests about accounts and sessions, and their pruning: each answered by the
//! writer thread, in its next batch.

use super::{AccountRow, Db, DbResult, PruneBatch, Pruned, Request, SessionRow, Slide};
use crate::record::AccountId;

impl Db {
    pub async fn create_account(
        &self,
        name: String,
        password_hash: String,
    ) -> DbResult<AccountRow> {
        self.call(|reply| Request::CreateAccount {
            name,
            password_hash,
            reply,
        })
        .await
    }

    /// A guest account with a unique generated name (`guest-` and digits).
    pub async fn create_guest(&self) -> DbResult<AccountRow> {
        self.call(|reply| Request::CreateGuest { reply }).await
    }

    /// Case-insensitive.
    pub async fn account_by_name(&self, name: String) -> DbResult<Option<AccountRow>> {
        self.call(|reply| Request::AccountByName { name, reply })
            .await
    }

    pub async fn account_by_id(&self, id: AccountId) -> DbResult<Option<AccountRow>> {
        self.call(|reply| Request::AccountById { id, reply }).await
    }

    /// A new session; past `max_sessions` of the account, its oldest others are revoked.
    pub async fn insert_session(
        &self,
        token_hash: [u8; 32],
        account: AccountId,
        expires_at: u64,
        max_sessions: u32,
    ) -> DbResult<()> {
        self.call(|reply| Request::InsertSession {
            token_hash,
            account,
            expires_at,
            max_sessions,
            reply,
        })
        .await
    }

    /// The session for this token hash if it exists, is not revoked and `now` is before
    /// expiry: a use of it, which moves its expiry as `slide` says.
    pub async fn session(
        &self,
        token_hash: [u8; 32],
        now: u64,
        slide: Slide,
    ) -> DbResult<Option<SessionRow>> {
        self.call(|reply| Request::Session {
            token_hash,
            now,
            slide,
            reply,
        })
        .await
    }

    pub async fn revoke_session(&self, token_hash: [u8; 32]) -> DbResult<()> {
        self.call(|reply| Request::RevokeSession { token_hash, reply })
            .await
    }

    /// One batch of pruning: expired sessions, and guests that can never sign in again.
    /// The writer runs it in a transaction of its own, between its other batches.
    pub async fn prune(&self, batch: PruneBatch) -> DbResult<Pruned> {
        self.call(|reply| Request::Prune { batch, reply }).await
    }
}
