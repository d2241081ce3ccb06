//! Quick-pairing within one pool: pure, so it is tested directly and benchmarked.
//!
//! Waiting players are kept ordered by rating. A player accepts an opponent whose rating
//! is within its window; the window starts narrow and widens the longer the player
//! waits. Two players are paired when the difference is within the *wider* of their two
//! windows, so whoever has waited longest decides: nobody waits forever while a
//! compatible opponent waits. Joining and leaving are O(log n); one pass of `pair_all`
//! is O(n log n).

use std::collections::{BTreeSet, HashMap};
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

#[derive(Debug, Clone, Copy)]
struct Waiting {
    rating: f64,
    since: Instant,
}

/// The players waiting in one pool, by id.
#[derive(Debug, Default)]
pub struct Pool {
    by_rating: BTreeSet<Key>,
    waiting: HashMap<u64, Waiting>,
}

impl Pool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.waiting.contains_key(&id)
    }

    /// How long `id` has waited, and its current window.
    pub fn status(&self, id: u64, now: Instant) -> Option<(Duration, f64)> {
        let w = self.waiting.get(&id)?;
        let waited = now.saturating_duration_since(w.since);
        Some((waited, window(waited)))
    }

    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.waiting.keys().copied()
    }

    /// Add a player (replacing an earlier entry with the same id).
    pub fn insert(&mut self, id: u64, rating: f64, now: Instant) {
        self.remove(id);
        self.by_rating.insert(Key::new(rating, id));
        self.waiting.insert(id, Waiting { rating, since: now });
    }

    pub fn remove(&mut self, id: u64) -> bool {
        match self.waiting.remove(&id) {
            Some(w) => {
                self.by_rating.remove(&Key::new(w.rating, id));
                true
            }
            None => false,
        }
    }

    /// The closest-rated compatible opponent for `id`, if any.
    fn best_match(&self, id: u64, now: Instant) -> Option<u64> {
        let me = self.waiting.get(&id)?;
        let key = Key::new(me.rating, id);
        let below = self.by_rating.range(..key).next_back();
        let above = self.by_rating.range(key..).find(|k| k.id != id);
        let compatible = |k: &&Key| {
            let other = &self.waiting[&k.id];
            let widest = window(now.saturating_duration_since(me.since))
                .max(window(now.saturating_duration_since(other.since)));
            (k.rating() - me.rating).abs() <= widest
        };
        // Only the nearest neighbour on each side can be the closest; a farther one on the
        // same side is never better, and windows are symmetric in the difference.
        let mut candidates: Vec<&Key> = below.into_iter().chain(above).filter(compatible).collect();
        candidates.sort_by(|a, b| {
            let da = (a.rating() - me.rating).abs();
            let db = (b.rating() - me.rating).abs();
            da.total_cmp(&db).then(a.id.cmp(&b.id))
        });
        candidates.first().map(|k| k.id)
    }

    /// Try to pair one newly joined (or any) player right away.
    pub fn pair_one(&mut self, id: u64, now: Instant) -> Option<(u64, u64)> {
        let other = self.best_match(id, now)?;
        self.remove(id);
        self.remove(other);
        Some((id, other))
    }

    /// Pair everyone who can be paired, longest-waiting first. Each player appears in at
    /// most one pair.
    pub fn pair_all(&mut self, now: Instant) -> Vec<(u64, u64)> {
        let mut order: Vec<(Instant, u64)> =
            self.waiting.iter().map(|(id, w)| (w.since, *id)).collect();
        order.sort_unstable();
        let mut pairs = Vec::new();
        for (_, id) in order {
            if !self.contains(id) {
                continue;
            }
            if let Some(pair) = self.pair_one(id, now) {
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
        assert_eq!(pool.pair_one(3, t), Some((3, 1)));
        assert_eq!(pool.len(), 1);
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
        assert_eq!(pool.pair_one(2, later), Some((2, 1)));
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
