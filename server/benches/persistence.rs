//! Persistence throughput: finished rated games (about 30 rounds each, both rating
//! changes) durably recorded per second through `Db::record_game`, with the writer's
//! batched transactions (many games ending at once) and without (one at a time).
//!
//! `cargo bench -p elementals-server --bench persistence`
//!
//! The games are played between `PERSISTENCE_ACCOUNTS` accounts (default 200). With few
//! accounts a batch's per-account index entries share pages; with many (a real server's
//! thousands of players) they fall on pages of their own, which is the harder case:
//! `PERSISTENCE_ACCOUNTS=20000 cargo bench -p elementals-server --bench persistence`.
//!
//! On PostgreSQL (a database of the bench's own on the tests' server, 127.0.0.1:5432,
//! dropped after): `PERSISTENCE_BACKEND=postgres cargo bench -p elementals-server --bench
//! persistence`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elementals_protocol::messages::{EndReason, GameId, GameResult, SeatPair};
use elementals_protocol::rules::{Outcome, Seat, Variant};
use elementals_protocol::TimeControl;
use elementals_server::db::testing::TestPostgres;
use elementals_server::db::{AccountRow, Db};
use elementals_server::record::{GameRecord, Hash32, RecordPlayer, RoundLog};

/// Games in flight at once in the batched case: as many games ending together as the
/// writer can gather into its batches.
const CONCURRENT_GAMES: u64 = 1_000;
/// Games recorded one after another (each waits for its own fsync).
const SEQUENTIAL_GAMES: u64 = 50;
const ROUNDS: u32 = 30;
/// Accounts the games are spread over, unless `PERSISTENCE_ACCOUNTS` says otherwise.
const DEFAULT_ACCOUNTS: usize = 200;

fn accounts_wanted() -> usize {
    std::env::var("PERSISTENCE_ACCOUNTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n >= 2)
        .unwrap_or(DEFAULT_ACCOUNTS)
}

fn player(account: &AccountRow) -> RecordPlayer {
    RecordPlayer {
        account_id: account.id,
        name: account.name.clone(),
        guest: false,
        rating: account.rating,
    }
}

/// 32 random bytes, as a commitment or a nonce: every one distinct and incompressible, as
/// real ones are (a repeated pattern would flatter any encoding that packs or compresses
/// the record).
fn random_hash() -> Hash32 {
    Hash32(rand::random())
}

/// A rated game of `ROUNDS` rounds won at the edge by seat one.
fn record(one: &AccountRow, two: &AccountRow) -> GameRecord {
    let rounds = (1..=ROUNDS)
        .map(|round| RoundLog {
            round,
            commitments: SeatPair::new(random_hash(), random_hash()),
            nonces: SeatPair::new(random_hash(), random_hash()),
            picks: SeatPair::new(1, 1),
            outcome: Outcome {
                winner: None,
                moved: None,
            },
            positions: vec![0, 1, -1, 2, 0],
            clocks_ms: SeatPair::new(170_000, 165_000),
            escrowed: Default::default(),
        })
        .collect();
    GameRecord {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player(one), player(two)),
        started_at: 1_000,
        ended_at: 121_000,
        result: GameResult {
            winner: Some(Seat::One),
            reason: EndReason::Edge,
        },
        rounds,
        final_clocks_ms: SeatPair::new(150_000, 140_000),
    }
}

struct Bench {
    runtime: tokio::runtime::Runtime,
    db: Db,
    accounts: Vec<AccountRow>,
    _dir: tempfile::TempDir,
    _pg: Option<TestPostgres>,
}

impl Bench {
    fn new() -> Bench {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let dir = tempfile::tempdir().expect("temporary directory");
        let pg = (std::env::var("PERSISTENCE_BACKEND").as_deref() == Ok("postgres"))
            .then(TestPostgres::create);
        let path = match &pg {
            Some(pg) => std::path::PathBuf::from(pg.url()),
            None => dir.path().join("bench.db"),
        };
        let db = Db::open(&path).expect("database");
        println!(
            "persistence: on {}",
            if pg.is_some() { "PostgreSQL" } else { "SQLite" }
        );
        let wanted = accounts_wanted();
        let accounts = runtime.block_on(async {
            // Created many at a time, so that the writer batches them.
            let mut accounts = Vec::with_capacity(wanted);
            for start in (0..wanted).step_by(1_000) {
                let calls: Vec<_> = (start..wanted.min(start + 1_000))
                    .map(|i| {
                        let db = db.clone();
                        tokio::spawn(async move {
                            db.create_account(format!("bench{i}"), "not-a-real-hash".into())
                                .await
                        })
                    })
                    .collect();
                for call in calls {
                    accounts.push(call.await.expect("task").expect("account"));
                }
            }
            accounts
        });
        println!("persistence: {} accounts", accounts.len());
        Bench {
            runtime,
            db,
            accounts,
            _dir: dir,
            _pg: pg,
        }
    }

    fn records(&self, n: u64) -> Vec<GameRecord> {
        (0..n as usize)
            .map(|_| {
                // Pairs drawn at random, as a lobby's would be: with many accounts a
                // batch's games touch index pages of their own.
                let n = self.accounts.len();
                let a = rand::random_range(0..n);
                let b = (a + rand::random_range(1..n)) % n;
                let (one, two) = (&self.accounts[a], &self.accounts[b]);
                record(one, two)
            })
            .collect()
    }
}

fn record_games(c: &mut Criterion) {
    let bench = Bench::new();
    let mut group = c.benchmark_group("persistence");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));

    group.throughput(Throughput::Elements(CONCURRENT_GAMES));
    group.bench_function("record_game/batched", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let records = bench.records(CONCURRENT_GAMES);
                let started = Instant::now();
                bench.runtime.block_on(async {
                    let calls = records.into_iter().map(|r| {
                        let db = bench.db.clone();
                        tokio::spawn(async move { db.record_game(r).await })
                    });
                    for call in calls.collect::<Vec<_>>() {
                        call.await.expect("task").expect("recorded");
                    }
                });
                total += started.elapsed();
            }
            total
        })
    });

    group.throughput(Throughput::Elements(SEQUENTIAL_GAMES));
    group.bench_function("record_game/one_at_a_time", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let records = bench.records(SEQUENTIAL_GAMES);
                let started = Instant::now();
                bench.runtime.block_on(async {
                    for r in records {
                        bench.db.record_game(r).await.expect("recorded");
                    }
                });
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, record_games);
criterion_main!(benches);
