//! Name and password rules, argon2id hashing and its admission, session tokens.

use super::*;

#[test]
fn names_and_passwords() {
    assert!(validate_name("alice_1").is_ok());
    assert!(validate_name("al").is_err());
    assert!(validate_name("a".repeat(21).as_str()).is_err());
    assert!(validate_name("bad name").is_err());
    assert!(validate_name("Guest-12").is_err());
    assert!(validate_password("12345678").is_ok());
    assert!(validate_password("1234567").is_err());
    assert!(validate_password(&"x".repeat(129)).is_err());
}

#[test]
fn tokens_are_random_and_hash_round_trips() {
    let (t1, h1) = new_token();
    let (t2, _) = new_token();
    assert_ne!(t1, t2);
    assert_eq!(t1.len(), 64);
    assert_eq!(hash_token(&t1), Some(h1));
    assert_eq!(hash_token("zz"), None);
}

#[tokio::test]
async fn argon2id_hash_verifies() {
    let hasher = Hasher::new(Params::MIN_M_COST, Duration::from_secs(5));
    let phc = hasher.hash("correct horse".into()).await.unwrap();
    assert!(phc.starts_with("$argon2id$"));
    assert!(hasher
        .verify("correct horse".into(), phc.clone())
        .await
        .unwrap());
    assert!(!hasher.verify("wrong horse".into(), phc).await.unwrap());
    // Each check's time is in the average.
    assert!(hasher.hash_us.load(Ordering::Relaxed) > 0);
}

/// Holds both hashing slots; queues `n` hashes behind them, each seen waiting.
async fn queue_behind_busy_slots(
    hasher: &Hasher,
    n: u64,
) -> (
    tokio::sync::OwnedSemaphorePermit,
    Vec<tokio::task::JoinHandle<Result<String, AuthError>>>,
) {
    let busy = hasher
        .permits
        .clone()
        .acquire_many_owned(HASH_CONCURRENCY as u32)
        .await
        .unwrap();
    let mut queued = Vec::new();
    for i in 1..=n {
        queued.push(tokio::spawn({
            let hasher = hasher.clone();
            async move { hasher.hash("correct horse".into()).await }
        }));
        // Bounded: a spawned hash registers as waiting within a few turns.
        for _ in 0..1_000 {
            if hasher.waiting() == i {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(hasher.waiting(), i);
    }
    (busy, queued)
}

#[tokio::test]
async fn a_hash_that_would_wait_too_long_is_refused_at_once_and_the_queue_still_serves() {
    let hasher = Hasher::new(Params::MIN_M_COST, Duration::from_millis(2_500));
    // Hashes have taken a second each, two at a time: the first two queued start when
    // the slots' hashes end (~1 s), the next two ~1 s later, and a fifth would wait ~3 s.
    hasher.hash_us.store(1_000_000, Ordering::Relaxed);
    let (busy, queued) = queue_behind_busy_slots(&hasher, 4).await;
    let refused = hasher.hash("battery staple".into()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::RateLimited);
    let refused = hasher.verify("x".into(), "y".into()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::RateLimited);
    assert_eq!(hasher.waiting(), 4);
    // Slots free: the queued hashes are done, and the count is back to zero.
    drop(busy);
    for hash in queued {
        assert!(hash.await.unwrap().unwrap().starts_with("$argon2id$"));
    }
    assert_eq!(hasher.waiting(), 0);
    assert!(hasher.hash("battery staple".into()).await.is_ok());
}

/// With no wait allowed, a sign-in that finds both slots busy is refused, even before any
/// hash has been timed (when the estimate of the wait is still nothing).
#[tokio::test]
async fn with_no_wait_allowed_busy_slots_refuse_even_before_the_first_hash() {
    let hasher = Hasher::new(Params::MIN_M_COST, Duration::ZERO);
    assert_eq!(hasher.hash_us.load(Ordering::Relaxed), 0);
    let (busy, _) = queue_behind_busy_slots(&hasher, 0).await;
    let refused = hasher.hash("battery staple".into()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::RateLimited);
    assert_eq!(hasher.waiting(), 0);
    // A free slot is taken at once, whatever the wait allowed.
    drop(busy);
    assert!(hasher.hash("battery staple".into()).await.is_ok());
}

#[tokio::test]
async fn quick_hashes_may_queue_deep() {
    // At a millisecond a hash, 500 waiting is a quarter of a second: all wait.
    let hasher = Hasher::new(Params::MIN_M_COST, Duration::from_secs(5));
    hasher.hash_us.store(1_000, Ordering::Relaxed);
    let (busy, queued) = queue_behind_busy_slots(&hasher, 500).await;
    drop(busy);
    for hash in queued {
        assert!(hash.await.unwrap().is_ok());
    }
}
