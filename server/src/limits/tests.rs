//! The failed-login limits per account and address, and the token buckets.

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

#[test]
fn buckets_remember_a_bounded_number_of_addresses() {
    let buckets = IpBuckets::new(1.0, 2.0);
    let t0 = Instant::now();
    for i in 0..MAX_TRACKED as u32 + 10 {
        assert_eq!(buckets.take(IpAddr::V4(i.into()), t0), Ok(()));
        assert!(lock(&buckets.buckets).len() <= MAX_TRACKED);
    }
}

#[test]
fn protocol_md_states_the_correspondence_games_limit() {
    const PROTOCOL_MD: &str = include_str!("../../../PROTOCOL.md");
    let row = format!("| `MAX_CORRESPONDENCE_GAMES` | {MAX_CORRESPONDENCE_GAMES} |");
    assert!(PROTOCOL_MD.contains(&row), "PROTOCOL.md lacks {row}");
}
