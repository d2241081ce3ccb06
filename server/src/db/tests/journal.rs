//! The live games' logs: appended, read back at startup, dropped once the game is
//! recorded, surviving torn writes and compaction.
//!
//! SQLite's log file alone (its frames, torn tails and compaction): PostgreSQL's steps are
//! rows of a table, whose writes and recovery the tests in `tests/it/recovery*.rs` and
//! `tests/it/disk_faults.rs` run on both backends.

use std::io::Write;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::super::journal::{self, Compaction, Journal, JournalStats, Request, MAX_BATCH_APPENDS};
use super::*;
use crate::record::GameSetup;
use crate::record::{Hash32, LogEntry, LogStep, RoundLog};
use elementals_protocol::rules::{Move, Outcome};

fn setup(record: &GameRecord) -> GameSetup {
    GameSetup {
        game_id: record.game_id,
        variant: record.variant,
        time_control: record.time_control,
        rated: record.rated,
        players: record.players.clone(),
    }
}

pub(super) fn step(step: u64, entry: LogEntry) -> LogStep {
    LogStep {
        step,
        at: 1_000 + step,
        banks_us: SeatPair::new(60_000_000, 59_000_001),
        seq: step,
        entry,
    }
}

pub(super) fn start(record: &GameRecord) -> LogStep {
    step(
        0,
        LogEntry::Start {
            setup: setup(record),
            started_at: record.started_at,
        },
    )
}

pub(super) fn commit(n: u64) -> LogStep {
    step(
        n,
        LogEntry::Commit {
            round: 1,
            seat: Seat::One,
            commitment: Hash32([0xab; 32]),
            escrow: None,
        },
    )
}

pub(super) async fn logs(db: &Db) -> Vec<GameLog> {
    let mut logs = db.unfinished_games().await.unwrap();
    logs.sort_by_key(|l| l.game_id.0);
    logs
}

pub(super) fn file_len(t: &TestDb) -> u64 {
    std::fs::metadata(journal::path_for(&t.path)).unwrap().len()
}

#[tokio::test]
async fn logged_steps_read_back_per_game_in_order_until_the_game_is_recorded() {
    for t in open_both() {
        let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
        let (a, b) = (won(&ann, &bob, Seat::One), won(&bob, &ann, Seat::Two));
        t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
        t.db.append_log(b.game_id, &[start(&b), commit(1)])
            .await
            .unwrap();
        t.db.append_log(a.game_id, &[commit(1), commit(2)])
            .await
            .unwrap();
        let logs = t.db.unfinished_games().await.unwrap();
        assert_eq!(logs.len(), 2);
        let log_a = logs.iter().find(|l| l.game_id == a.game_id).unwrap();
        let log_b = logs.iter().find(|l| l.game_id == b.game_id).unwrap();
        assert_eq!(log_a.steps, vec![start(&a), commit(1), commit(2)]);
        assert_eq!(log_b.steps, vec![start(&b), commit(1)]);

        // Once its record is committed a game's log is no longer the journal's.
        t.db.record_game(a.clone()).await.unwrap();
        let logs = t.db.unfinished_games().await.unwrap();
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].game_id, b.game_id);

        // And after a restart the same holds, read from the file.
        t.db.shutdown().await.unwrap();
        let db = Db::open(&t.path).unwrap();
        let logs = db.unfinished_games().await.unwrap();
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].steps, vec![start(&b), commit(1)]);
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_step_logged_twice_is_refused_and_changes_nothing() {
    for t in open_both() {
        let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
        let a = won(&ann, &bob, Seat::One);
        t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
        let again = t.db.append_log(a.game_id, &[commit(1), commit(0)]).await;
        assert!(
            matches!(
                again,
                Err(DbError::StepOutOfOrder {
                    step: 0,
                    expected: 2,
                    ..
                })
            ),
            "{again:?}"
        );
        let again = t.db.append_log(a.game_id, &[start(&a)]).await;
        assert!(
            matches!(again, Err(DbError::StepOutOfOrder { expected: 1, .. })),
            "{again:?}"
        );
        t.db.append_log(a.game_id, &[commit(1)]).await.unwrap();
        let logs = t.db.unfinished_games().await.unwrap();
        assert_eq!(logs[0].steps, vec![start(&a), commit(1)]);
    }
}

#[tokio::test]
async fn a_log_left_behind_by_a_recorded_game_is_not_restored_and_goes_at_compaction() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.record_game(a.clone()).await.unwrap();
    // As if the forget that follows a record had been lost in a crash.
    t.db.append_log(a.game_id, &[start(&a), commit(1)])
        .await
        .unwrap();
    t.db.shutdown().await.unwrap();
    let logged = file_len(&t);
    let small = Compaction {
        min_len: 0,
        ratio: 1,
    };
    let db = Db::open_with(&t.path, small, Duration::ZERO).unwrap();
    assert!(db.unfinished_games().await.unwrap().is_empty());
    // Opening copies nothing (see `opening_rewrites_nothing`): the frames wait for the
    // next compaction, which the next request runs.
    assert_eq!(file_len(&t), logged);
    db.flush().await.unwrap();
    db.shutdown().await.unwrap();
    assert_eq!(file_len(&t), 8, "only the magic is left");
}

#[tokio::test]
async fn a_torn_write_at_the_end_is_dropped_and_everything_before_it_kept() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.append_log(a.game_id, &[start(&a), commit(1)])
        .await
        .unwrap();
    t.db.shutdown().await.unwrap();
    let whole = file_len(&t);
    // A crash in the middle of the next append: a frame header and part of its payload,
    // then a frame whose bytes are all there but whose checksum is wrong.
    let path = journal::path_for(&t.path);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9])
        .unwrap();
    drop(file);

    let db = Db::open(&t.path).unwrap();
    assert_eq!(logs(&db).await[0].steps, vec![start(&a), commit(1)]);
    assert_eq!(file_len(&t), whole);
    db.append_log(a.game_id, &[commit(2)]).await.unwrap();
    db.shutdown().await.unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let valid = bytes.len();
    let mut bad = bytes[whole as usize..].to_vec();
    bad[5] ^= 0xff; // one bit of the checksum
    bytes.extend_from_slice(&bad);
    std::fs::write(&path, &bytes).unwrap();

    let db = Db::open(&t.path).unwrap();
    assert_eq!(
        logs(&db).await[0].steps,
        vec![start(&a), commit(1), commit(2)]
    );
    assert_eq!(file_len(&t) as usize, valid);
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn compaction_drops_recorded_games_and_keeps_live_ones_whole() {
    let t = open_db();
    t.db.shutdown().await.unwrap();
    let small = Compaction {
        min_len: 4 << 10,
        ratio: 2,
    };
    let db = Db::open_with(&t.path, small, Duration::ZERO).unwrap();
    let (ann, bob) = (register(&db, "ann").await, register(&db, "bob").await);
    let games: Vec<GameRecord> = (0..20).map(|_| won(&ann, &bob, Seat::One)).collect();
    for game in &games {
        let steps: Vec<LogStep> = std::iter::once(start(game))
            .chain((1..10).map(commit))
            .collect();
        db.append_log(game.game_id, &steps).await.unwrap();
    }
    let before = file_len(&t);
    assert!(before > small.min_len, "{before}");
    for game in &games[1..] {
        db.record_game(game.clone()).await.unwrap();
    }
    // The next request after the forgets finds the file mostly dead and rewrites it.
    db.append_log(games[0].game_id, &[commit(10)])
        .await
        .unwrap();
    db.flush().await.unwrap();
    let after = file_len(&t);
    // One game of twenty is left (its start, with the setup, is the largest step).
    assert!(after < before / 4, "{before} -> {after}");
    let expected: Vec<LogStep> = std::iter::once(start(&games[0]))
        .chain((1..=10).map(commit))
        .collect();
    let logs = logs(&db).await;
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].steps, expected);
    // Appends go on after the rewrite, and the file reads back whole.
    db.append_log(games[0].game_id, &[commit(11)])
        .await
        .unwrap();
    db.shutdown().await.unwrap();
    let db = Db::open(&t.path).unwrap();
    let logs = db.unfinished_games().await.unwrap();
    assert_eq!(logs[0].steps.len(), 12);
    assert_eq!(logs[0].steps[11], commit(11));
    db.shutdown().await.unwrap();
}

/// One step of every kind, with every optional part present in one of them.
pub(super) fn every_kind_of_step(record: &GameRecord) -> Vec<LogStep> {
    let round = RoundLog {
        round: 1,
        commitments: SeatPair::new(Hash32([0xab; 32]), Hash32([0xcd; 32])),
        nonces: SeatPair::new(Hash32([0x01; 32]), Hash32([0xfe; 32])),
        picks: SeatPair::new(1, 4),
        outcome: Outcome {
            winner: Some(Seat::Two),
            moved: Some(Move {
                element: 4,
                by: Seat::Two,
                from: 0,
                to: -1,
            }),
        },
        positions: vec![-1, 0, 3],
        clocks_ms: SeatPair::new(59_000, 58_000),
        escrowed: Default::default(),
    };
    vec![
        start(record),
        commit(1),
        step(
            2,
            LogEntry::Reveal {
                round: 1,
                seat: Seat::Two,
                pick: 4,
                nonce: Hash32([0xfe; 32]),
            },
        ),
        step(3, LogEntry::Result { round }),
        step(4, LogEntry::Restarted { voided: Some(2) }),
        step(5, LogEntry::Restarted { voided: None }),
        step(
            6,
            LogEntry::End {
                result: record.result,
                ended_at: record.ended_at,
                final_clocks_ms: record.final_clocks_ms,
            },
        ),
    ]
}

#[tokio::test]
async fn every_kind_of_step_reads_back_as_it_was_written() {
    for t in open_both() {
        let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
        let a = won(&ann, &bob, Seat::One);
        let steps = every_kind_of_step(&a);
        for (row, step) in journal::encode(&steps).unwrap().iter().zip(&steps) {
            assert_eq!(row.0, step.step);
            assert_eq!(&journal::decode_step(&row.1).unwrap(), step);
        }
        // And through the file, across a restart.
        t.db.append_log(a.game_id, &steps).await.unwrap();
        t.db.shutdown().await.unwrap();
        let db = Db::open(&t.path).unwrap();
        assert_eq!(logs(&db).await[0].steps, steps);
        db.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_file_that_is_no_game_log_is_refused() {
    let t = open_db();
    t.db.shutdown().await.unwrap();
    // Another version's magic (the first version's JSON steps, a later one's): refused,
    // not misread.
    for magic in [b"ELGLOG\0\x01", b"ELGLOG\0\x03"] {
        std::fs::write(journal::path_for(&t.path), magic).unwrap();
        let opened = Db::open(&t.path);
        assert!(
            matches!(opened, Err(DbError::Io { kind: std::io::ErrorKind::InvalidData, ref message, .. }) if message.contains("wrong magic")),
            "{:?}",
            opened.err()
        );
    }
}

#[tokio::test]
async fn a_second_server_on_the_same_database_is_refused() {
    let t = open_db();
    let second = Db::open(&t.path);
    assert!(matches!(second, Err(DbError::Locked { .. })));
    t.db.shutdown().await.unwrap();
    Db::open(&t.path).unwrap().shutdown().await.unwrap();
}

pub(super) fn open_journal(dir: &tempfile::TempDir) -> Journal {
    Journal::open(&dir.path().join("j-gamelog"), Compaction::default(), |_| {
        Ok(false)
    })
    .unwrap()
}

/// Queues an append before the journal's loop runs; returns where its answer comes.
pub(super) fn queue_append(
    queue: &mpsc::Sender<Request>,
    game_id: GameId,
    steps: &[LogStep],
) -> oneshot::Receiver<DbResult<()>> {
    let (reply, answer) = oneshot::channel();
    let rows = journal::encode(steps).unwrap();
    let append = Request::Append {
        game_id,
        rows,
        reply,
    };
    assert!(queue.try_send(append).is_ok());
    answer
}

mod batches;
