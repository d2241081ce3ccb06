//! Quick-pairing within one pool: pure, so it is tested directly and benchmarked.
//!
//! Waiting players are kept ordered by rating. A player accepts an opponent whose rating
//! is within its window; the window starts narrow and widens the longer the player
//! waits. Two players are paired when the difference is within the *wider* of their two
//! windows, so whoever has waited longest decides: nobody waits forever while a
//! compatible opponent waits. Joining (with its pairing) and leaving are O(log n) in one
//! B-tree; one pass of `pair_all` is O(n log n).

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::time::{Duration, Instant};

/// The allowed rating difference right after joining.
pub const BASE_WINDOW: f64 = 0.25;
/// How much the window widens per second of waiting.
pub const WIDEN_PER_S: f64 = 0.05;
/// The widest window: beyond this difference nobody is paired.
pub const MAX_WINDOW: f64 = 50.0;

/// The allowed rating difference after waiting `waited`; never shrinks as `waited` grows.
pub fn window(waited: Duration) -> f64 {
    (BASE_WINDOW + WIDEN_PER_S * waited.as_secs_f64()).min(MAX_WINDOW)
}

/// A totally ordered rating key (ratings are finite and >= 1.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    rating_bits: u64,
    id: u64,
}

impl Key {
    fn new(rating: f64, id: u64) -> Key {
        // Non-negative finite floats order like their bit patterns.
        Key {
            rating_bits: rating.max(0.0).to_bits(),
            id,
        }
    }
    fn rating(self) -> f64 {
        f64::from_bits(self.rating_bits)
    }
}

/// The players waiting in one pool, ordered by rating, each with the moment it joined.
///
/// One ordered map is the whole pool: a player is found by its rating and id, which the
/// caller keeps (the lobby's own index of who is queued where holds both), so there is no
/// second index by id to update, and a pairing touches one region of one tree: the
/// newcomer's place, where its neighbours and their waiting times are too.
#[derive(Debug, Default)]
pub struct Pool {
    by_rating: BTreeMap<Key, Instant>,
}

impl Pool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.by_rating.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_rating.is_empty()
    }

    pub fn contains(&self, id: u64, rating: f64) -> bool {
        self.by_rating.contains_key(&Key::new(rating, id))
    }

    /// Each waiting player's id, how long it has waited and its current window.
    pub fn statuses(&self, now: Instant) -> impl Iterator<Item = (u64, Duration, f64)> + '_ {
        self.by_rating.iter().map(move |(k, since)| {
            let waited = now.saturating_duration_since(*since);
            (k.id, waited, window(waited))
        })
    }

    /// Add a player who joined at `now`. The caller adds an id at most once (with the
    /// rating it will remove it by): a second entry for the same id at another rating
    /// would be a second player.
    pub fn insert(&mut self, id: u64, rating: f64, now: Instant) {
        self.by_rating.insert(Key::new(rating, id), now);
    }

    /// Remove a player, by the id and rating it was inserted with.
    pub fn remove(&mut self, id: u64, rating: f64) -> bool {
        self.by_rating.remove(&Key::new(rating, id)).is_some()
    }

    /// The closest-rated compatible opponent for the player at `key` (waiting or not), if
    /// any.
    fn best_match(&self, key: Key, since: Instant, now: Instant) -> Option<Key> {
        let mine = window(now.saturating_duration_since(since));
        let me = key.rating();
        // Only the nearest neighbour on each side can be the closest; a farther one on the
        // same side is never better, and windows are symmetric in the difference.
        let below = self.by_rating.range(..key).next_back();
        let above = self.by_rating.range((Excluded(key), Unbounded)).next();
        let fits = |(k, other): (&Key, &Instant)| {
            let distance = (k.rating() - me).abs();
            let widest = mine.max(window(now.saturating_duration_since(*other)));
            (distance <= widest).then_some((distance, *k))
        };
        match (below.and_then(fits), above.and_then(fits)) {
            (Some(b), Some(a)) => {
                // The nearer; at equal distance the lower id.
                let nearer = b.0.total_cmp(&a.0).then(b.1.id.cmp(&a.1.id));
                Some(if nearer.is_le() { b.1 } else { a.1 })
            }
            (one, other) => one.or(other).map(|(_, k)| k),
        }
    }

    /// A player arrives: paired at once with the closest compatible player waiting (who
    /// leaves the pool; the opponent's id is returned), or else added to wait. The caller
    /// adds an id at most once, as for `insert`.
    pub fn join(&mut self, id: u64, rating: f64, now: Instant) -> Option<u64> {
        let key = Key::new(rating, id);
        match self.best_match(key, now, now) {
            Some(other) => {
                self.by_rating.remove(&other);
                Some(other.id)
            }
            None => {
                self.by_rating.insert(key, now);
                None
            }
        }
    }

    /// Try to pair one waiting player right away: on success both
    /// leave the pool, and the pair is returned, this player first.
    pub fn pair_one(&mut self, id: u64, rating: f64, now: Instant) -> Option<(u64, u64)> {
        let key = Key::new(rating, id);
        let since = *self.by_rating.get(&key)?;
        let other = self.best_match(key, since, now)?;
        self.by_rating.remove(&key);
        self.by_rating.remove(&other);
        Some((id, other.id))
    }

    /// Pair everyone who can be paired, longest-waiting first. Each player appears in at
    /// most one pair.
    pub fn pair_all(&mut self, now: Instant) -> Vec<(u64, u64)> {
        let mut order: Vec<(Instant, Key)> = self.by_rating.iter().map(|(k, s)| (*s, *k)).collect();
        order.sort_unstable();
        let mut pairs = Vec::new();
        for (_, key) in order {
            if let Some(pair) = self.pair_one(key.id, key.rating(), now) {
                pairs.push(pair);
            }
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn pairs_the_closest_rating() {
        let t = Instant::now();
        let mut pool = Pool::new();
        pool.insert(1, 1.0, t);
        pool.insert(2, 1.3, t);
        pool.insert(3, 1.1, t);
        assert_eq!(pool.pair_one(3, 1.1, t), Some((3, 1)));
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn equal_distances_go_to_the_lower_id_and_leavers_are_gone() {
        let t = Instant::now();
        let mut pool = Pool::new();
        pool.insert(7, 1.0, t);
        pool.insert(3, 2.0, t);
        pool.insert(5, 1.5, t);
        assert!(pool.remove(3, 2.0));
        assert!(!pool.remove(3, 2.0), "already gone");
        assert!(!pool.contains(3, 2.0));
        pool.insert(4, 2.0, t);
        assert_eq!(pool.len(), 3);
        // After 10 s every window is 0.75: 7 and 4 are both 0.5 from 5; the lower id wins.
        let later = t + Duration::from_secs(10);
        assert_eq!(pool.pair_one(5, 1.5, later), Some((5, 4)));
        assert_eq!(pool.len(), 1);
        assert!(pool.contains(7, 1.0));
        let statuses: Vec<_> = pool.statuses(later).collect();
        assert_eq!(
            statuses,
            vec![(7, Duration::from_secs(10), window(Duration::from_secs(10)))]
        );
    }

    #[test]
    fn a_newcomer_pairs_on_arrival_or_waits() {
        let t = Instant::now();
        let mut pool = Pool::new();
        assert_eq!(pool.join(1, 1.0, t), None);
        assert_eq!(pool.join(2, 2.0, t), None, "1.0 away: outside both windows");
        assert_eq!(pool.len(), 2);
        // 1.9 is nearer 2.0 than 1.0 is.
        assert_eq!(pool.join(3, 1.9, t), Some(2));
        assert_eq!(pool.len(), 1);
        assert!(pool.contains(1, 1.0) && !pool.contains(3, 1.9));
        // One who waited long enough widens the window for a newcomer too.
        let later = t + Duration::from_secs(40);
        assert_eq!(pool.join(4, 3.0, later), Some(1));
        assert!(pool.is_empty());
    }

    #[test]
    fn far_ratings_wait_until_the_window_widens() {
        let t = Instant::now();
        let mut pool = Pool::new();
        pool.insert(1, 1.0, t);
        pool.insert(2, 3.0, t);
        assert!(pool.pair_all(t).is_empty());
        // Window reaches 2.0 after (2.0 - 0.25) / 0.05 = 35 s.
        assert!(pool.pair_all(t + Duration::from_secs(34)).is_empty());
        assert_eq!(pool.pair_all(t + Duration::from_secs(35)).len(), 1);
        assert!(pool.is_empty());
    }

    #[test]
    fn the_longer_waiter_decides() {
        let t = Instant::now();
        let mut pool = Pool::new();
        pool.insert(1, 1.0, t);
        let later = t + Duration::from_secs(40);
        pool.insert(2, 3.0, later);
        assert_eq!(pool.pair_one(2, 3.0, later), Some((2, 1)));
    }

    #[test]
    fn window_widens_monotonically_and_is_capped() {
        let mut last = 0.0;
        for s in 0..2_000 {
            let w = window(Duration::from_millis(s * 500));
            assert!(w >= last);
            last = w;
        }
        assert_eq!(last, MAX_WINDOW);
    }

    proptest! {
        #[test]
        fn nobody_is_matched_twice_and_pairs_are_compatible(
            players in prop::collection::vec((1.0f64..20.0, 0u64..120), 0..200),
            at in 0u64..200,
        ) {
            let t0 = Instant::now();
            let mut pool = Pool::new();
            for (i, (rating, joined)) in players.iter().enumerate() {
                pool.insert(i as u64, *rating, t0 + Duration::from_secs(*joined));
            }
            let now = t0 + Duration::from_secs(120 + at);
            let pairs = pool.pair_all(now);
            let mut seen = HashSet::new();
            for (a, b) in &pairs {
                prop_assert!(a != b);
                prop_assert!(seen.insert(*a) && seen.insert(*b));
                let (ra, ja) = players[*a as usize];
                let (rb, jb) = players[*b as usize];
                let wa = window(now - (t0 + Duration::from_secs(ja)));
                let wb = window(now - (t0 + Duration::from_secs(jb)));
                prop_assert!((ra - rb).abs() <= wa.max(wb) + 1e-12);
            }
            prop_assert_eq!(pool.len() + 2 * pairs.len(), players.len());
        }

        #[test]
        fn joining_pairs_as_waiting_and_pairing_at_once_would(
            players in prop::collection::vec((1.0f64..5.0, 0u64..60), 0..100),
            newcomer in 1.0f64..5.0,
        ) {
            let t0 = Instant::now();
            let now = t0 + Duration::from_secs(60);
            let mut joined = Pool::new();
            let mut waited = Pool::new();
            for (i, (rating, at)) in players.iter().enumerate() {
                joined.insert(i as u64, *rating, t0 + Duration::from_secs(*at));
                waited.insert(i as u64, *rating, t0 + Duration::from_secs(*at));
            }
            let id = players.len() as u64;
            let by_join = joined.join(id, newcomer, now);
            waited.insert(id, newcomer, now);
            let by_pair = waited.pair_one(id, newcomer, now).map(|(_, other)| other);
            prop_assert_eq!(by_join, by_pair);
            prop_assert_eq!(joined.len(), waited.len());
            prop_assert_eq!(joined.contains(id, newcomer), by_join.is_none());
        }

        #[test]
        fn two_compatible_waiters_are_always_paired(r1 in 1.0f64..60.0, r2 in 1.0f64..60.0, secs in 0u64..2000) {
            let t0 = Instant::now();
            let mut pool = Pool::new();
            pool.insert(1, r1, t0);
            pool.insert(2, r2, t0);
            let now = t0 + Duration::from_secs(secs);
            let pairs = pool.pair_all(now);
            let compatible = (r1 - r2).abs() <= window(Duration::from_secs(secs));
            prop_assert_eq!(pairs.len() == 1, compatible);
            // And with enough waiting, any two ratings within MAX_WINDOW are compatible.
            if (r1 - r2).abs() <= MAX_WINDOW {
                let mut pool = Pool::new();
                pool.insert(1, r1, t0);
                pool.insert(2, r2, t0);
                prop_assert_eq!(pool.pair_all(t0 + Duration::from_secs(1000)).len(), 1);
            }
        }
    }
}
