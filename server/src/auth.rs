//! Identity: name and password rules, argon2id hashing off the async workers, and
//! session tokens (256 random bits, stored only as their SHA-256).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use elementals_protocol::ErrorCode;
use sha2::{Digest, Sha256};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::clock::Clock;
use crate::db::{AccountRow, Db, DbError, Slide};
use crate::metrics::Counted;

pub const NAME_MIN: usize = 3;
pub const NAME_MAX: usize = 20;
pub const PASSWORD_MIN: usize = 8;
pub const PASSWORD_MAX: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError {
    pub code: ErrorCode,
    pub message: String,
}

impl AuthError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AuthError {
            code,
            message: message.into(),
        }
    }
}

impl From<DbError> for AuthError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::NameTaken => AuthError::new(ErrorCode::NameTaken, "that name is taken"),
            other => {
                tracing::error!(error = %other, "database error during sign-in");
                AuthError::new(ErrorCode::Internal, "could not reach the account store")
            }
        }
    }
}

pub fn validate_name(name: &str) -> Result<(), AuthError> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !(NAME_MIN..=NAME_MAX).contains(&name.len()) || !ok_chars {
        return Err(AuthError::new(
            ErrorCode::InvalidName,
            "names are 3-20 characters: letters, digits, _ or -",
        ));
    }
    if name.to_ascii_lowercase().starts_with("guest-") {
        return Err(AuthError::new(
            ErrorCode::InvalidName,
            "names starting with guest- are reserved",
        ));
    }
    if crate::bots::is_bot_name(name) {
        return Err(AuthError::new(
            ErrorCode::InvalidName,
            "names starting with bot- are the computer's",
        ));
    }
    Ok(())
}

pub fn validate_password(password: &str) -> Result<(), AuthError> {
    if !(PASSWORD_MIN..=PASSWORD_MAX).contains(&password.len()) {
        return Err(AuthError::new(
            ErrorCode::InvalidPassword,
            "passwords are 8-128 bytes",
        ));
    }
    Ok(())
}

/// A new session token: its hex form for the client, and the hash we store.
pub fn new_token() -> (String, [u8; 32]) {
    let raw: [u8; 32] = rand::random();
    (hex::encode(raw), hash_token_bytes(&raw))
}

fn hash_token_bytes(raw: &[u8]) -> [u8; 32] {
    Sha256::digest(raw).into()
}

/// The stored hash of a token as a client presents it; `None` if it is not 64 hex digits.
pub fn hash_token(token: &str) -> Option<[u8; 32]> {
    let raw = hex::decode(token).ok()?;
    (raw.len() == 32).then(|| hash_token_bytes(&raw))
}

/// Password hashing. argon2id is deliberately slow, so it runs on the blocking pool and
/// at most `HASH_CONCURRENCY` at a time: a burst of logins cannot starve game tasks.
///
/// Past those, a hash waits its turn only if the hashes ahead of it should be done within
/// `max_wait` (by the recent time a hash has taken, wall time, so a busy machine counts);
/// otherwise it is refused at once (`rate_limited`, "retry in a few seconds") rather than
/// queued behind work that would outlast the client's patience and the connection's
/// sign-in timeout. A refused sign-in has cost nothing: no hash, no failed-login count.
#[derive(Clone)]
pub struct Hasher {
    params: Params,
    permits: Arc<Semaphore>,
    waiting: Arc<AtomicU64>,
    /// A moving average of a hash's wall time, in microseconds (0 until the first).
    hash_us: Arc<AtomicU64>,
    max_wait: Duration,
}

pub(crate) const HASH_CONCURRENCY: usize = 2;
/// argon2id's time cost and parallelism (OWASP's recommendation with 19 MiB).
pub(crate) const ARGON2_PASSES: u32 = 2;
pub(crate) const ARGON2_LANES: u32 = 1;

impl Hasher {
    pub fn new(memory_kib: u32, max_wait: Duration) -> Hasher {
        let params = Params::new(
            memory_kib.max(Params::MIN_M_COST),
            ARGON2_PASSES,
            ARGON2_LANES,
            None,
        )
        .unwrap_or_else(|_| Params::default());
        Hasher {
            params,
            permits: Arc::new(Semaphore::new(HASH_CONCURRENCY)),
            waiting: Arc::default(),
            hash_us: Arc::default(),
            max_wait,
        }
    }

    /// A hashing slot: at once if one is free, else after the hashes ahead, unless those
    /// would take longer than `max_wait`.
    async fn permit(&self) -> Result<SemaphorePermit<'_>, AuthError> {
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(permit);
        }
        let waiting = Counted::new(&self.waiting);
        // The slots' current hashes and those ahead, two at a time.
        let rounds = (waiting.before + HASH_CONCURRENCY as u64) / HASH_CONCURRENCY as u64;
        let wait = Duration::from_micros(self.hash_us.load(Ordering::Relaxed))
            .saturating_mul(u32::try_from(rounds).unwrap_or(u32::MAX));
        // No slot is free, so the wait is more than nothing even before any hash is timed
        // (the estimate is then 0): with `max_wait` zero, no sign-in waits.
        if wait > self.max_wait || self.max_wait.is_zero() {
            return Err(AuthError::new(
                ErrorCode::RateLimited,
                "too many sign-ins are being checked; retry in a few seconds",
            ));
        }
        Ok(self.permits.acquire().await.expect("never closed"))
    }

    /// Folds one hash's wall time into the average (an eighth of the new one each time).
    fn observe(&self, took: Duration) {
        let sample = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let _ = self
            .hash_us
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == 0 {
                    sample
                } else {
                    old - old / 8 + sample / 8
                })
            });
    }

    /// Hashes waiting for a slot now.
    pub fn waiting(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }

    fn argon2(params: Params) -> Argon2<'static> {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
    }

    /// Runs `check` on the blocking pool once a slot is free (or refuses, see `permit`),
    /// and folds its wall time into the average; `None` if the check panicked.
    async fn run<T: Send + 'static>(
        &self,
        check: impl FnOnce(Argon2<'static>) -> T + Send + 'static,
    ) -> Result<Option<T>, AuthError> {
        let _permit = self.permit().await?;
        let argon2 = Self::argon2(self.params.clone());
        let started = Instant::now();
        let done = tokio::task::spawn_blocking(move || check(argon2)).await;
        self.observe(started.elapsed());
        Ok(done.ok())
    }

    pub async fn hash(&self, password: String) -> Result<String, AuthError> {
        self.run(move |argon2| {
            argon2
                .hash_password(password.as_bytes())
                .map(|h| h.to_string())
        })
        .await?
        .and_then(Result::ok)
        .ok_or_else(|| AuthError::new(ErrorCode::Internal, "could not hash the password"))
    }

    /// Whether `password` matches `phc`; an error only when the hasher is too busy to say.
    pub async fn verify(&self, password: String, phc: String) -> Result<bool, AuthError> {
        let matched = self
            .run(move |argon2| {
                PasswordHash::new(&phc).is_ok_and(|parsed| {
                    argon2.verify_password(password.as_bytes(), &parsed).is_ok()
                })
            })
            .await?;
        Ok(matched.unwrap_or(false))
    }
}

/// Sign-in operations over the database.
#[derive(Clone)]
pub struct Auth {
    pub db: Db,
    pub hasher: Hasher,
    /// How long a token lives after its last use (its issue, a `resume`, or a request
    /// with it over HTTP).
    pub token_ttl_ms: u64,
    /// Sessions an account may hold; a sign-in past this revokes its oldest.
    pub max_sessions: u32,
    /// The server's wall clock (tests on tokio's paused clock move it).
    pub clock: Clock,
}

/// The most a token's stored expiry lags behind its last use: a token used often is
/// written once a day, not at every use.
pub const TOKEN_SLIDE_EVERY_MS: u64 = 24 * 3600 * 1000;

/// A signed-in account and its fresh token.
pub struct SignedIn {
    pub account: AccountRow,
    pub token: String,
    pub expires_at: u64,
}

impl Auth {
    async fn issue(&self, account: AccountRow) -> Result<SignedIn, AuthError> {
        let (token, hash) = new_token();
        let expires_at = self.clock.now_ms() + self.token_ttl_ms;
        self.db
            .insert_session(hash, account.id, expires_at, self.max_sessions)
            .await?;
        Ok(SignedIn {
            account,
            token,
            expires_at,
        })
    }

    pub async fn register(&self, name: String, password: String) -> Result<SignedIn, AuthError> {
        validate_name(&name)?;
        validate_password(&password)?;
        if self.db.account_by_name(name.clone()).await?.is_some() {
            return Err(AuthError::new(ErrorCode::NameTaken, "that name is taken"));
        }
        let hash = self.hasher.hash(password).await?;
        let account = self.db.create_account(name, hash).await?;
        self.issue(account).await
    }

    pub async fn login(&self, name: String, password: String) -> Result<SignedIn, AuthError> {
        let bad = || AuthError::new(ErrorCode::BadCredentials, "unknown name or wrong password");
        if name.len() > NAME_MAX || password.len() > PASSWORD_MAX {
            return Err(bad());
        }
        let account = self.db.account_by_name(name).await?;
        let Some((account, phc)) = account.and_then(|a| a.password_hash.clone().map(|h| (a, h)))
        else {
            return Err(bad());
        };
        if !self.hasher.verify(password, phc).await? {
            return Err(bad());
        }
        self.issue(account).await
    }

    pub async fn guest(&self) -> Result<SignedIn, AuthError> {
        let account = self.db.create_guest().await?;
        self.issue(account).await
    }

    /// Resume costs one hash of 32 bytes and one lookup: no password hashing. A use of the
    /// token: it expires `token_ttl_ms` after this, give or take `TOKEN_SLIDE_EVERY_MS`
    /// (at most half the lifetime), by which its stored expiry may lag to spare a write.
    pub async fn resume(&self, token: &str) -> Result<SignedIn, AuthError> {
        let invalid =
            || AuthError::new(ErrorCode::InvalidToken, "unknown, expired or revoked token");
        let hash = hash_token(token).ok_or_else(invalid)?;
        let now = self.clock.now_ms();
        let to = now.saturating_add(self.token_ttl_ms);
        let lag = TOKEN_SLIDE_EVERY_MS.min(self.token_ttl_ms / 2);
        let slide = Slide {
            below: to.saturating_sub(lag),
            to,
        };
        let session = self
            .db
            .session(hash, now, slide)
            .await?
            .ok_or_else(invalid)?;
        Ok(SignedIn {
            account: session.account,
            token: token.to_owned(),
            expires_at: session.expires_at,
        })
    }

    pub async fn logout(&self, token: &str) -> Result<(), AuthError> {
        if let Some(hash) = hash_token(token) {
            self.db.revoke_session(hash).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
