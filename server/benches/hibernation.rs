//! Hibernation's two targets (issue 27):
//!
//! - `games`: 100,000 open games on one node, each started through the game tier
//!   (`spawn_game`, as the lobby starts one) on a SQLite database, in the `corr-7d`
//!   correspondence control, then put to sleep by its own actor (its players are never
//!   there, and round 1 is due in 7 days). The process's RSS is read before the first
//!   game and once every game sleeps: what 100,000 sleeping games cost the server.
//!   Games are started in waves, each wave asleep before the next.
//! - `stored`: 1,000,000 wake-up rows written straight into `game_wakeups` (their due
//!   times spread over 30 days), then the sweeper's read of a due batch (`due_wakeups`,
//!   256 games) timed, and the plan of its query printed.
//! - `wake`: as `games`, then one sleeping game after another is sent a command (a seat's
//!   `attach`, as a returning player's connection sends) and the time to its answer taken:
//!   the wake (its log read by key, put back, its row deleted, the game replayed) and the
//!   answer. `HIBERNATION_WAKES` games (default 201), one at a time.
//!
//! `cargo bench -p elementals-server --bench hibernation -- games` (`HIBERNATION_GAMES`,
//! default 100000), `-- wake` (the same, and `HIBERNATION_WAKES`) and `-- stored`
//! (`HIBERNATION_ROWS`, default 1000000). `stored` and `wake` run on PostgreSQL with
//! `PERSISTENCE_BACKEND=postgres` (a database of the bench's own, dropped after).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use elementals_server::db::testing::TestPostgres;
use elementals_server::db::Db;
use elementals_server::game::{
    install_waker, spawn_game, sweep, GameHandle, GameServices, GameSettings, GameSetup,
    Hibernation,
};
use elementals_server::metrics::Metrics;
use elementals_server::record::RecordPlayer;
use elementals_server::registry::Registry;

const WAVE: usize = 2_000;
const DAY_MS: u64 = 86_400_000;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The process's resident set, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = |name: &str| args.iter().any(|a| a == name);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if which("games") {
        runtime.block_on(games(env("HIBERNATION_GAMES", 100_000)));
    }
    if which("wake") {
        let count = env("HIBERNATION_GAMES", 100_000);
        runtime.block_on(wake(count, env("HIBERNATION_WAKES", 201)));
    }
    if which("stored") {
        runtime.block_on(stored(env("HIBERNATION_ROWS", 1_000_000)));
    }
}

async fn games(count: usize) {
    elementals_server::alloc::configure();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("hibernation.db")).unwrap();
    let before = rss_kib();
    let started = Instant::now();
    let asleep = fall_asleep(&db, count).await;
    let after = rss_kib();
    let live = asleep.metrics.live_games.load(Relaxed);
    println!(
        "hibernation/games: {count} games asleep (live {live}) in {:.1} s; RSS {} -> {} KiB, \
         growth {:.1} MiB ({:.0} bytes a game)",
        started.elapsed().as_secs_f64(),
        before,
        after,
        (after.saturating_sub(before)) as f64 / 1024.0,
        (after.saturating_sub(before) * 1024) as f64 / count as f64,
    );
    asleep.stop().await;
    db.shutdown().await.unwrap();
}

/// `count` games started and asleep, with the waker and the sweeper running.
struct Asleep {
    services: GameServices,
    metrics: Arc<Metrics>,
    sweeper: tokio::task::JoinHandle<()>,
    games: Vec<GameId>,
}

impl Asleep {
    async fn stop(self) {
        self.services.stop.cancel();
        let _ = self.sweeper.await;
        self.services.registry.bus().set_waker(None);
        self.services.tasks.close();
        self.services.tasks.wait().await;
    }
}

async fn fall_asleep(db: &Db, count: usize) -> Asleep {
    let settings = GameSettings {
        hibernate: Some(Hibernation {
            idle: Duration::from_secs(1),
            min_deadline: Duration::from_secs(600),
        }),
        ..GameSettings::default()
    };
    let metrics = Arc::new(Metrics::default());
    let services = GameServices::new(
        db.clone(),
        Arc::new(Registry::new()),
        metrics.clone(),
        settings,
    );
    install_waker(&services);
    let sweeper = tokio::spawn(sweep(services.clone()));
    let player = |account_id: i64| RecordPlayer {
        account_id,
        name: format!("sleeper{account_id}"),
        guest: false,
        rating: 1.0,
    };
    let mut games = Vec::with_capacity(count);
    let mut made = 0;
    while made < count {
        let wave = WAVE.min(count - made);
        for n in made..made + wave {
            let game_id = GameId(uuid::Uuid::new_v4());
            games.push(game_id);
            let setup = GameSetup {
                game_id,
                variant: Variant::CLASSIC,
                time_control: TimeControl::CORR_7D,
                rated: true,
                players: SeatPair::new(player(2 * n as i64 + 1), player(2 * n as i64 + 2)),
            };
            spawn_game(setup, services.clone());
        }
        made += wave;
        let deadline = Instant::now() + Duration::from_secs(120);
        while services.registry.asleep_count() < made {
            assert!(Instant::now() < deadline, "wave of {wave} did not sleep");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Asleep {
        services,
        metrics,
        sweeper,
        games,
    }
}

/// A PostgreSQL database of the bench's own if `PERSISTENCE_BACKEND=postgres`, else a
/// SQLite file in `dir` named `name`.
async fn database(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, Option<TestPostgres>) {
    if !std::env::var("PERSISTENCE_BACKEND").is_ok_and(|b| b == "postgres") {
        return (dir.join(name), None);
    }
    // The blocking client, off the runtime's threads.
    let pg = tokio::task::spawn_blocking(TestPostgres::create)
        .await
        .unwrap();
    (std::path::PathBuf::from(pg.url()), Some(pg))
}

async fn wake(count: usize, wakes: usize) {
    elementals_server::alloc::configure();
    let dir = tempfile::tempdir().unwrap();
    let (path, pg) = database(dir.path(), "wake.db").await;
    let db = Db::open(&path).unwrap();
    let started = Instant::now();
    let asleep = fall_asleep(&db, count).await;
    println!(
        "hibernation/wake: {count} games asleep in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let bus = asleep.services.registry.bus();
    let mut times = Vec::with_capacity(wakes);
    // Spread over the games, first to last asleep.
    for n in 0..wakes {
        let game_id = asleep.games[n * count / wakes];
        let conn = 1_000_000 + n as u64;
        let (outbox, _frames) = elementals_server::outbox::Outbox::new(conn, 64);
        let seat = GameHandle::new(game_id, bus.clone()).player(Seat::One);
        let start = Instant::now();
        assert!(seat.attach_outbox(&outbox).await, "game {game_id} answers");
        times.push(start.elapsed());
    }
    let woken = asleep.metrics.games_woken.load(Relaxed);
    assert_eq!(woken, wakes as u64);
    times.sort();
    let at = |q: usize| times[(times.len() - 1) * q / 100].as_secs_f64() * 1e3;
    println!(
        "hibernation/wake: a command to one of {count} sleeping games answered in: median \
         {:.2} ms, p90 {:.2} ms, max {:.2} ms ({wakes} wakes, one at a time, {})",
        at(50),
        at(90),
        at(100),
        if pg.is_some() { "PostgreSQL" } else { "SQLite" },
    );
    asleep.stop().await;
    db.shutdown().await.unwrap();
    if let Some(pg) = pg {
        tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
    }
}

async fn stored(rows: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (path, pg) = database(dir.path(), "wakeups.db").await;
    // Migrated by the first open; the rows go in while it is closed.
    Db::open(&path).unwrap().shutdown().await.unwrap();
    let now_ms = elementals_server::clock::unix_ms();
    let fill = Instant::now();
    let plan = match &pg {
        Some(pg) => {
            let url = pg.url().to_owned();
            tokio::task::spawn_blocking(move || fill_postgres(&url, rows, now_ms))
                .await
                .unwrap()
        }
        None => fill_sqlite(&path, rows, now_ms),
    };
    println!(
        "hibernation/stored: {rows} rows written in {:.1} s; the sweeper's query plan:\n{plan}",
        fill.elapsed().as_secs_f64()
    );
    let db = Db::open(&path).unwrap();
    let mut times = Vec::new();
    for _ in 0..101 {
        let start = Instant::now();
        let due = db.due_wakeups(now_ms, 256).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(due.games.len(), 256);
    }
    times.sort();
    println!(
        "hibernation/stored: due batch of 256 among {rows}: median {:.3} ms, p90 {:.3} ms \
         ({} reads, {})",
        times[50].as_secs_f64() * 1e3,
        times[90].as_secs_f64() * 1e3,
        times.len(),
        if pg.is_some() { "PostgreSQL" } else { "SQLite" },
    );
    db.shutdown().await.unwrap();
    if let Some(pg) = pg {
        tokio::task::spawn_blocking(move || drop(pg)).await.unwrap();
    }
}

/// The due times: spread over 30 days from a day ago, so a few thousand are due now.
fn due(n: usize, rows: usize, now_ms: u64) -> i64 {
    (now_ms - DAY_MS + (n as u64 * 30 * DAY_MS) / rows as u64) as i64
}

const DUE_QUERY: &str = "SELECT game_id, due_ms FROM game_wakeups ORDER BY due_ms LIMIT 257";

fn fill_sqlite(path: &std::path::Path, rows: usize, now_ms: u64) -> String {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO game_wakeups (game_id, due_ms, one_id, two_id) VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        for n in 0..rows {
            let id = uuid::Uuid::new_v4().to_string();
            insert
                .execute(rusqlite::params![
                    id,
                    due(n, rows, now_ms),
                    2 * n as i64,
                    2 * n as i64 + 1
                ])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    let mut explain = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {DUE_QUERY}"))
        .unwrap();
    let plan: Vec<String> = explain
        .query_map([], |row| row.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    plan.join("\n")
}

fn fill_postgres(url: &str, rows: usize, now_ms: u64) -> String {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .execute(
            "INSERT INTO game_wakeups (game_id, due_ms, one_id, two_id)
             SELECT gen_random_uuid()::text,
                    $1::bigint + (n * 30 * 86400000::bigint) / $2::bigint,
                    2 * n, 2 * n + 1
             FROM generate_series(0, $2::bigint - 1) AS n",
            &[&((now_ms - DAY_MS) as i64), &(rows as i64)],
        )
        .unwrap();
    client.execute("ANALYZE game_wakeups", &[]).unwrap();
    client
        .query(&format!("EXPLAIN ANALYZE {DUE_QUERY}"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}
