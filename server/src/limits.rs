//! Abuse limits that outlive a single connection: how many WebSockets each client address
//! holds open, how many failed logins each account name and each address made lately, and
//! token buckets per address for new accounts and for HTTP API requests.
//!
//! Both are std `Mutex`es around small maps: each critical section is a hash lookup, and
//! none is held across an `.await`. Time is passed in (`now`), so the windows are tested
//! without waiting.
//!
//! Addresses are grouped as a client controls them: an IPv4 address alone, an IPv6
//! address by its /64 (one subscriber's usual allocation; per-address limits on single
//! IPv6 addresses are trivially dodged), an IPv4-mapped IPv6 address as its IPv4 form.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The limits `AppState` holds, built from the configuration.
#[derive(Debug)]
pub struct AbuseLimits {
    pub connections: IpConnections,
    pub logins: LoginAttempts,
    /// Accounts created (registered or guest) per address.
    pub new_accounts: IpBuckets,
    /// Requests to the JSON API per address.
    pub http_requests: IpBuckets,
}

/// Unfinished correspondence games one account may sit in at once (beside at most one
/// live game); `--max-correspondence-games` lowers it.
pub const MAX_CORRESPONDENCE_GAMES: usize = 50;

/// The window failed logins are counted over.
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);

/// How many accounts or addresses with recent failures are remembered. Past this the
/// per-account memory is forgotten (the per-address limit still holds): refusing everyone
/// new would let an attacker lock out every account by spraying names.
const MAX_TRACKED: usize = 100_000;

/// The key an address is counted under (see the module comment).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps stay consistent even if a holder panicked: every update is one statement.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Open WebSocket connections per client address, with a cap.
#[derive(Debug)]
pub struct IpConnections {
    /// 0: no cap (still counted, for the gauge).
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One counted connection; dropping it gives the slot back.
#[derive(Debug)]
pub struct IpSlot {
    key: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl IpConnections {
    pub fn new(cap: usize) -> IpConnections {
        IpConnections {
            cap,
            open: Default::default(),
        }
    }

    /// A slot for one more connection from `ip`, or `None` if it already holds the cap.
    pub fn try_acquire(&self, ip: IpAddr) -> Option<IpSlot> {
        let key = client_key(ip);
        let mut open = lock(&self.open);
        let count = open.entry(key).or_insert(0);
        if self.cap > 0 && *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(IpSlot {
            key,
            open: self.open.clone(),
        })
    }

    /// Connections open from `ip` now.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        lock(&self.open).get(&client_key(ip)).copied().unwrap_or(0)
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.open);
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// A token bucket per client address: `burst` tokens, refilled at `rate` a second; each
/// request takes one. An address whose bucket is full is not remembered at all, so the map
/// holds only addresses that were active lately.
#[derive(Debug)]
pub struct IpBuckets {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl IpBuckets {
    /// `rate` tokens a second up to `burst`; a `burst` below 1 means no limit.
    pub fn new(rate: f64, burst: f64) -> IpBuckets {
        IpBuckets {
            rate,
            burst,
            buckets: Default::default(),
        }
    }

    fn level(&self, bucket: Bucket, now: Instant) -> f64 {
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * self.rate;
        (bucket.tokens + refill).min(self.burst)
    }

    /// Takes a token for `ip`, or says how long until one is there.
    pub fn take(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        if self.burst < 1.0 {
            return Ok(());
        }
        let key = client_key(ip);
        let mut buckets = lock(&self.buckets);
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(&key) {
            // Full buckets carry no information; if every one is still in use, forgetting
            // them all is the lesser harm (as for failed logins).
            buckets.retain(|_, b| self.level(*b, now) < self.burst);
            if buckets.len() >= MAX_TRACKED {
                buckets.clear();
            }
        }
        let tokens = match buckets.get(&key) {
            Some(bucket) => self.level(*bucket, now),
            None => self.burst,
        };
        if tokens < 1.0 {
            let wait = if self.rate > 0.0 {
                Duration::from_secs_f64((1.0 - tokens) / self.rate)
            } else {
                Duration::MAX
            };
            return Err(wait);
        }
        buckets.insert(
            key,
            Bucket {
                tokens: tokens - 1.0,
                at: now,
            },
        );
        Ok(())
    }

    /// Gives back a token taken for something that then did not happen.
    pub fn refund(&self, ip: IpAddr, now: Instant) {
        let key = client_key(ip);
        let mut buckets = lock(&self.buckets);
        if let Some(bucket) = buckets.get(&key).copied() {
            let tokens = self.level(bucket, now) + 1.0;
            if tokens >= self.burst {
                buckets.remove(&key);
            } else {
                buckets.insert(key, Bucket { tokens, at: now });
            }
        }
    }
}

/// Whole seconds to wait, at least one: what a refusal tells the client.
pub fn retry_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// Failed logins per account name and per client address over a sliding window.
#[derive(Debug)]
pub struct LoginAttempts {
    per_account: usize,
    per_ip: usize,
    window: Duration,
    failures: Mutex<Failures>,
}

#[derive(Debug, Default)]
struct Failures {
    /// Lower-cased account name to the instants of its recent failures (at most the limit).
    by_account: HashMap<String, VecDeque<Instant>>,
    by_ip: HashMap<IpAddr, VecDeque<Instant>>,
}

/// Which limit refused a login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    Account,
    Address,
}

/// Forget failures older than the window; true if any remain.
fn prune(times: &mut VecDeque<Instant>, now: Instant, window: Duration) -> bool {
    while times
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= window)
    {
        times.pop_front();
    }
    !times.is_empty()
}

fn record<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, VecDeque<Instant>>,
    key: K,
    limit: usize,
    now: Instant,
    window: Duration,
) {
    if map.len() >= MAX_TRACKED {
        map.retain(|_, times| prune(times, now, window));
        if map.len() >= MAX_TRACKED {
            map.clear();
        }
    }
    let times = map.entry(key).or_default();
    prune(times, now, window);
    times.push_back(now);
    // Only the newest `limit` matter: older ones cannot change the answer.
    while times.len() > limit.max(1) {
        times.pop_front();
    }
}

impl LoginAttempts {
    pub fn new(per_account: u32, per_ip: u32, window: Duration) -> LoginAttempts {
        LoginAttempts {
            per_account: per_account as usize,
            per_ip: per_ip as usize,
            window,
            failures: Default::default(),
        }
    }

    /// Whether a login for `name` from `ip` may be tried now (checked before any hashing,
    /// so a refused attempt costs almost nothing).
    pub fn check(&self, name: &str, ip: IpAddr, now: Instant) -> Result<(), LoginRefused> {
        let mut f = lock(&self.failures);
        let window = self.window;
        if let Some(times) = f.by_ip.get_mut(&client_key(ip)) {
            if prune(times, now, window) && times.len() >= self.per_ip {
                return Err(LoginRefused::Address);
            }
        }
        if let Some(times) = f.by_account.get_mut(&name.to_ascii_lowercase()) {
            if prune(times, now, window) && times.len() >= self.per_account {
                return Err(LoginRefused::Account);
            }
        }
        Ok(())
    }

    /// A login for `name` from `ip` failed (unknown name or wrong password).
    pub fn failed(&self, name: &str, ip: IpAddr, now: Instant) {
        let mut f = lock(&self.failures);
        let window = self.window;
        let name = name.to_ascii_lowercase();
        record(&mut f.by_account, name, self.per_account, now, window);
        record(&mut f.by_ip, client_key(ip), self.per_ip, now, window);
    }

    /// A login for `name` succeeded: its account's failures are forgotten (the address's
    /// are not, so one known password does not reopen guessing at others).
    pub fn succeeded(&self, name: &str) {
        lock(&self.failures)
            .by_account
            .remove(&name.to_ascii_lowercase());
    }
}

#[cfg(test)]
mod tests;
