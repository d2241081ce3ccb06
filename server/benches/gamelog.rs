//! The cost of the durable game log: how long a game waits for its step to be committed
//! (which delays only that game's `ok` and events) with many games appending at once, and
//! how many steps per second the game log's batched appends (one write and one
//! `fdatasync` per batch, `db/journal.rs`) sustain.
//!
//! `cargo bench -p elementals-server --bench gamelog` (a plain program: it prints tables).
//! Each game appends its start, then `STEPS` commitment-sized steps, each awaited as the
//! game actor awaits it; all games run at once on the runtime. Saturated: every game
//! appends again as soon as its last step is durable (the writer's ceiling). Paced: every
//! game appends once per `PERIOD` (a fast game: four steps a round, a round a second),
//! which is what a step costs a game on a busy server.

use std::time::{Duration, Instant};

use elementals_protocol::messages::{GameId, SeatPair};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::TimeControl;
use elementals_server::db::{AccountRow, Db};
use elementals_server::record::GameSetup;
use elementals_server::record::{Hash32, LogEntry, LogStep, RecordPlayer};

/// Steps each game appends after its start.
const STEPS: u64 = 40;
/// Games appending at once, one run each.
const CONCURRENCY: [usize; 5] = [1, 10, 100, 1_000, 5_000];
/// Between two steps of one game, in the paced runs.
const PERIOD: Duration = Duration::from_millis(250);
/// Games at once in the paced runs.
const PACED: [usize; 3] = [1_000, 2_500, 5_000];

fn player(account: &AccountRow) -> RecordPlayer {
    RecordPlayer {
        account_id: account.id,
        name: account.name.clone(),
        guest: false,
        rating: account.rating,
    }
}

fn step(step: u64, entry: LogEntry) -> LogStep {
    LogStep {
        step,
        at: 1_767_225_600_000 + step,
        banks_us: SeatPair::new(170_000_000, 165_000_000),
        seq: step * 2,
        entry,
    }
}

/// One game: its start, then `STEPS` commitments, one every `period` (back to back if
/// `None`); returns each commitment's wait.
async fn game(db: Db, players: SeatPair<RecordPlayer>, period: Option<Duration>) -> Vec<Duration> {
    let setup = GameSetup {
        game_id: GameId(uuid::Uuid::new_v4()),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players,
    };
    let game_id = setup.game_id;
    let start = LogEntry::Start {
        setup,
        started_at: 1_767_225_600_000,
    };
    db.append_log(game_id, &[step(0, start)]).await.unwrap();
    let mut ticks = period.map(|period| {
        // Games start spread over one period, as they would on a server.
        let phase = period.mul_f64(rand::random::<f64>());
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + phase, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks
    });
    let mut waits = Vec::with_capacity(STEPS as usize);
    for n in 1..=STEPS {
        if let Some(ticks) = &mut ticks {
            ticks.tick().await;
        }
        let commit = LogEntry::Commit {
            round: n as u32,
            seat: if n % 2 == 0 { Seat::Two } else { Seat::One },
            commitment: Hash32([0xab; 32]),
            escrow: None,
        };
        let at = Instant::now();
        db.append_log(game_id, &[step(n, commit)]).await.unwrap();
        waits.push(at.elapsed());
    }
    waits
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// One run per entry of `concurrency`, one line each, each on a fresh database (a live
/// server's log holds only its live games: a finished game's log is compacted away).
async fn table(concurrency: &[usize], period: Option<Duration>) {
    println!("games at once | steps | steps/s | wait p50 ms | p90 ms | p99 ms | max ms");
    println!("---|---|---|---|---|---|---");
    for &games in concurrency {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("gamelog.db")).unwrap();
        let ann = db.create_account("ann".into(), "h".into()).await.unwrap();
        let bob = db.create_account("bob".into(), "h".into()).await.unwrap();
        let players = SeatPair::new(player(&ann), player(&bob));
        let started = Instant::now();
        let tasks: Vec<_> = (0..games)
            .map(|_| tokio::spawn(game(db.clone(), players.clone(), period)))
            .collect();
        let mut waits = Vec::new();
        for task in tasks {
            waits.extend(task.await.unwrap());
        }
        let took = started.elapsed();
        waits.sort();
        let steps = waits.len();
        println!(
            "{games} | {steps} | {:.0} | {} | {} | {} | {}",
            steps as f64 / took.as_secs_f64(),
            ms(percentile(&waits, 0.5)),
            ms(percentile(&waits, 0.9)),
            ms(percentile(&waits, 0.99)),
            ms(*waits.last().unwrap()),
        );
        db.shutdown().await.unwrap();
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("Saturated: each game appends as soon as its last step is durable.\n");
        table(&CONCURRENCY, None).await;
        println!("\nPaced: each game appends one step every {PERIOD:?}.\n");
        table(&PACED, Some(PERIOD)).await;
    });
}
