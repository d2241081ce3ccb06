//! Lobby pairing cost as the pool grows: with n players queued, what one more player
//! costs to match (join, find the closest compatible rating, leave as a pair), and what
//! a full `pair_all` pass costs per player. Both should grow no faster than log n.
//!
//! `cargo bench -p elementals-server --bench pairing`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use elementals_server::lobby::pairing::Pool;

const SIZES: [u64; 4] = [100, 1_000, 10_000, 100_000];

/// Ratings one apart: wider than any fresh window (0.25), so nobody in the pool pairs
/// with anybody else, and a newcomer pairs with exactly its neighbour.
fn spread_pool(n: u64, now: Instant) -> Pool {
    let mut pool = Pool::new();
    for id in 0..n {
        pool.insert(id, 1.0 + id as f64, now);
    }
    pool
}

/// Everyone compatible with their neighbours: a pass pairs the whole pool.
fn dense_pool(n: u64, now: Instant) -> Pool {
    let mut pool = Pool::new();
    for id in 0..n {
        // A deterministic scatter over 1.0..3.0.
        let rating = 1.0 + ((id * 7_919) % 20_000) as f64 / 10_000.0;
        pool.insert(id, rating, now);
    }
    pool
}

fn join_and_match(c: &mut Criterion) {
    let mut group = c.benchmark_group("pairing/join_and_match");
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    for n in SIZES {
        let now = Instant::now();
        let mut pool = spread_pool(n, now);
        let newcomer = u64::MAX;
        let mut target = 0u64;
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| {
                // Next to a different queued player each time, so no cache stays warm.
                target = (target + 7_919) % n;
                let pair = pool.join(newcomer, 1.0 + target as f64 + 0.1, now);
                // Put the matched player back: the pool stays at n.
                pool.insert(target, 1.0 + target as f64, now);
                black_box(pair)
            })
        });
        assert_eq!(pool.len() as u64, n);
    }
    group.finish();
}

fn pair_all_pass(c: &mut Criterion) {
    let mut group = c.benchmark_group("pairing/pair_all");
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    group.sample_size(10);
    for n in SIZES {
        let now = Instant::now();
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || dense_pool(n, now),
                |mut pool| black_box(pool.pair_all(now)),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, join_and_match, pair_all_pass);
criterion_main!(benches);
