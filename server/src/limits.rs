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

use crate::config::Config;

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

impl AbuseLimits {
    pub fn new(config: &Config) -> AbuseLimits {
        AbuseLimits {
            connections: IpConnections::new(config.max_connections_per_ip),
            logins: LoginAttempts::new(
                config.login_failures_per_account,
                config.login_failures_per_ip,
                LOGIN_WINDOW,
            ),
            new_accounts: IpBuckets::new(
                f64::from(config.new_accounts_per_ip) / 3600.0,
                f64::from(config.new_accounts_per_ip),
            ),
            http_requests: IpBuckets::new(
                f64::from(config.http_requests_per_ip),
                2.0 * f64::from(config.http_requests_per_ip),
            ),
        }
    }
}

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
            buckets.retain(|_, b| {
                let tokens = (b.tokens
                    + now.saturating_duration_since(b.at).as_secs_f64() * self.rate)
                    .min(self.burst);
                tokens < self.burst
            });
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
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(client_key(v4("2001:db8:1:2:aaaa::1")), v4("2001:db8:1:2::"));
        assert_eq!(client_key(v4("::ffff:10.0.0.7")), v4("10.0.0.7"));
        assert_eq!(client_key(v4("10.0.0.7")), v4("10.0.0.7"));
    }

    #[test]
    fn connection_slots_are_capped_per_address_and_given_back() {
        let limits = IpConnections::new(2);
        let a = limits.try_acquire(v4("10.0.0.1")).unwrap();
        let _b = limits.try_acquire(v4("10.0.0.1")).unwrap();
        assert!(limits.try_acquire(v4("10.0.0.1")).is_none());
        // Another address is not affected; a neighbour in the same IPv6 /64 is.
        let _c = limits.try_acquire(v4("10.0.0.2")).unwrap();
        let _d = limits.try_acquire(v4("2001:db8::1")).unwrap();
        let _e = limits.try_acquire(v4("2001:db8::2")).unwrap();
        assert!(limits.try_acquire(v4("2001:db8::3")).is_none());
        drop(a);
        assert_eq!(limits.open_from(v4("10.0.0.1")), 1);
        assert!(limits.try_acquire(v4("10.0.0.1")).is_some());
    }

    #[test]
    fn zero_means_no_cap() {
        let limits = IpConnections::new(0);
        let slots: Vec<_> = (0..1000)
            .map(|_| limits.try_acquire(v4("10.0.0.1")).unwrap())
            .collect();
        assert_eq!(limits.open_from(v4("10.0.0.1")), 1000);
        drop(slots);
        assert_eq!(limits.open_from(v4("10.0.0.1")), 0);
    }

    #[test]
    fn failed_logins_are_limited_per_account_within_the_window() {
        let logins = LoginAttempts::new(5, 20, LOGIN_WINDOW);
        let t0 = Instant::now();
        let ip = v4("10.0.0.1");
        for i in 0..5 {
            assert_eq!(logins.check("Alice", ip, t0), Ok(()), "attempt {i}");
            logins.failed("Alice", ip, t0);
        }
        // Names are case-insensitive; other accounts are unaffected.
        assert_eq!(logins.check("alice", ip, t0), Err(LoginRefused::Account));
        assert_eq!(logins.check("bob", ip, t0), Ok(()));
        // The window slides: a minute after the failures, trying is allowed again.
        let later = t0 + LOGIN_WINDOW - Duration::from_millis(1);
        assert_eq!(logins.check("alice", ip, later), Err(LoginRefused::Account));
        assert_eq!(logins.check("alice", ip, t0 + LOGIN_WINDOW), Ok(()));
    }

    #[test]
    fn failed_logins_are_limited_per_address_across_names() {
        let logins = LoginAttempts::new(5, 20, LOGIN_WINDOW);
        let t0 = Instant::now();
        let ip = v4("10.0.0.1");
        for i in 0..20 {
            let name = format!("user{i}");
            assert_eq!(logins.check(&name, ip, t0), Ok(()));
            logins.failed(&name, ip, t0);
        }
        assert_eq!(logins.check("someone", ip, t0), Err(LoginRefused::Address));
        assert_eq!(logins.check("someone", v4("10.0.0.2"), t0), Ok(()));
    }

    #[test]
    fn success_clears_the_account_but_not_the_address() {
        let logins = LoginAttempts::new(2, 3, LOGIN_WINDOW);
        let t0 = Instant::now();
        let ip = v4("10.0.0.1");
        logins.failed("alice", ip, t0);
        logins.failed("alice", ip, t0);
        assert_eq!(logins.check("alice", ip, t0), Err(LoginRefused::Account));
        logins.succeeded("alice");
        assert_eq!(logins.check("alice", ip, t0), Ok(()));
        logins.failed("alice", ip, t0);
        assert_eq!(logins.check("bob", ip, t0), Err(LoginRefused::Address));
    }

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate_per_address() {
        // Three an hour, all at once at most.
        let buckets = IpBuckets::new(3.0 / 3600.0, 3.0);
        let t0 = Instant::now();
        let ip = v4("10.0.0.1");
        for _ in 0..3 {
            assert_eq!(buckets.take(ip, t0), Ok(()));
        }
        let wait = buckets.take(ip, t0).unwrap_err();
        assert_eq!(retry_secs(wait), 1200, "one token every 20 minutes");
        // Another address, or a neighbour outside the /64, has its own bucket.
        assert_eq!(buckets.take(v4("10.0.0.2"), t0), Ok(()));
        // A refund gives the token back; time refills it too.
        buckets.refund(ip, t0);
        assert_eq!(buckets.take(ip, t0), Ok(()));
        assert!(buckets.take(ip, t0 + Duration::from_secs(1199)).is_err());
        assert_eq!(buckets.take(ip, t0 + Duration::from_secs(1200)), Ok(()));
    }

    #[test]
    fn a_bucket_below_one_is_no_limit_and_full_buckets_are_forgotten() {
        let none = IpBuckets::new(0.0, 0.0);
        let t0 = Instant::now();
        assert!((0..1000).all(|_| none.take(v4("10.0.0.1"), t0).is_ok()));
        let buckets = IpBuckets::new(10.0, 20.0);
        buckets.take(v4("10.0.0.1"), t0).unwrap();
        buckets.refund(v4("10.0.0.1"), t0);
        assert!(lock(&buckets.buckets).is_empty());
        assert_eq!(retry_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_secs(Duration::ZERO), 1);
        assert_eq!(retry_secs(Duration::from_secs(2)), 2);
    }
}
