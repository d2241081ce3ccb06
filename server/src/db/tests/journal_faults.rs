//! The game log under bad input and faults: steps out of order or too large, damage
//! before the end of the file, a failed sync, and opening without rewriting.
//!
//! SQLite's log file alone, as `journal.rs`.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use tokio::sync::mpsc;

use super::super::journal::{self, LogHealth, MAX_PAYLOAD_WRITTEN};
use super::journal::{commit, file_len, logs, open_journal, queue_append, start, step};
use super::*;
use crate::record::{Hash32, LogEntry, RoundLog};
use elementals_protocol::rules::{Move, Outcome};

#[tokio::test]
async fn a_step_that_skips_ahead_is_refused_and_nothing_is_written() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
    t.db.flush().await.unwrap();
    let before = file_len(&t);
    // Step 1 lost (a failed append, say): step 2 would leave a hole the replay cannot cross.
    let skipped = t.db.append_log(a.game_id, &[commit(2)]).await;
    assert!(
        matches!(
            skipped,
            Err(DbError::StepOutOfOrder {
                step: 2,
                expected: 1,
                ..
            })
        ),
        "{skipped:?}"
    );
    // A game's first step is step 0.
    let b = won(&ann, &bob, Seat::Two);
    let first = t.db.append_log(b.game_id, &[commit(1)]).await;
    assert!(
        matches!(first, Err(DbError::StepOutOfOrder { expected: 0, .. })),
        "{first:?}"
    );
    assert_eq!(file_len(&t), before);
    t.db.append_log(a.game_id, &[commit(1), commit(2)])
        .await
        .unwrap();
    assert_eq!(
        logs(&t.db).await[0].steps,
        vec![start(&a), commit(1), commit(2)]
    );
}

#[tokio::test]
async fn a_step_over_the_frame_limit_is_refused_and_nothing_is_written() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
    t.db.flush().await.unwrap();
    let before = file_len(&t);
    // A round result with far more positions than any board has: each 300 is three bytes.
    let huge = step(
        1,
        LogEntry::Result {
            round: RoundLog {
                round: 1,
                commitments: SeatPair::new(Hash32([0xab; 32]), Hash32([0xcd; 32])),
                nonces: SeatPair::new(Hash32([0x01; 32]), Hash32([0xfe; 32])),
                picks: SeatPair::new(1, 2),
                outcome: Outcome {
                    winner: None,
                    moved: None,
                },
                positions: vec![300; MAX_PAYLOAD_WRITTEN / 2],
                clocks_ms: SeatPair::new(1, 1),
                escrowed: Default::default(),
            },
        },
    );
    let refused = t.db.append_log(a.game_id, &[huge]).await;
    assert!(
        matches!(refused, Err(DbError::StepTooLarge { step: 1, bytes, limit, .. }) if bytes > limit),
        "{refused:?}"
    );
    assert_eq!(file_len(&t), before);
    // The game goes on from the same step, and the file reads back whole after a restart.
    t.db.append_log(a.game_id, &[commit(1)]).await.unwrap();
    t.db.shutdown().await.unwrap();
    let db = Db::open(&t.path).unwrap();
    assert_eq!(logs(&db).await[0].steps, vec![start(&a), commit(1)]);
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_largest_steps_fit_a_frame_many_times_over() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let mut record = won(&ann, &bob, Seat::One);
    for player in [&mut record.players.one, &mut record.players.two] {
        player.name = "n".repeat(20);
    }
    // A round's result on the widest board, every number at its largest.
    let result = RoundLog {
        round: 1_000,
        commitments: SeatPair::new(Hash32([0xab; 32]), Hash32([0xcd; 32])),
        nonces: SeatPair::new(Hash32([0x01; 32]), Hash32([0xfe; 32])),
        picks: SeatPair::new(99, 98),
        outcome: Outcome {
            winner: Some(Seat::Two),
            moved: Some(Move {
                element: 98,
                by: Seat::Two,
                from: -20,
                to: 20,
            }),
        },
        positions: vec![-20; 99],
        clocks_ms: SeatPair::new(u64::MAX, u64::MAX),
        escrowed: Default::default(),
    };
    let steps = [
        start(&record),
        step(1, LogEntry::Result { round: result }),
        step(
            2,
            LogEntry::End {
                result: record.result,
                ended_at: u64::MAX,
                final_clocks_ms: SeatPair::new(u64::MAX, u64::MAX),
            },
        ),
    ];
    for (row, step) in journal::encode(&steps).unwrap().iter().zip(&steps) {
        assert!(
            row.1.len() * 100 <= MAX_PAYLOAD_WRITTEN,
            "{} bytes: {step:?}",
            row.1.len()
        );
    }
    t.db.append_log(record.game_id, &steps).await.unwrap();
}

/// Writes a log of three steps of one game and returns the path, its bytes and where
/// each frame begins.
async fn three_frames(t: &TestDb) -> (std::path::PathBuf, Vec<u8>, Vec<usize>, GameRecord) {
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    let mut starts = Vec::new();
    for steps in [vec![start(&a)], vec![commit(1)], vec![commit(2)]] {
        t.db.flush().await.unwrap();
        starts.push(file_len(t) as usize);
        t.db.append_log(a.game_id, &steps).await.unwrap();
    }
    t.db.shutdown().await.unwrap();
    let path = journal::path_for(&t.path);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes, starts, a)
}

/// Opens a log damaged at `offset` and checks that it is refused, kept, and copied.
fn assert_refused_as_damaged(t: &TestDb, path: &std::path::Path, bytes: &[u8], at: usize) {
    let opened = Db::open(&t.path);
    let Err(DbError::LogDamaged {
        path: named,
        offset,
        copy,
    }) = opened
    else {
        panic!("{:?}", opened.err());
    };
    assert_eq!((named.as_path(), offset), (path, at as u64));
    // Nothing was cut: the file and its copy hold every byte.
    assert_eq!(std::fs::read(path).unwrap(), bytes);
    let copy = copy.expect("a copy is kept");
    assert!(copy
        .to_string_lossy()
        .contains(&format!("{}.damaged-", path.display())));
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    // The message names the file and the offset.
    let message = DbError::LogDamaged {
        path: named,
        offset,
        copy: Some(copy),
    }
    .to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains(&at.to_string()));
}

#[tokio::test]
async fn a_bad_checksum_before_whole_frames_is_damage_not_a_torn_tail() {
    let t = open_db();
    let (path, mut bytes, starts, _) = three_frames(&t).await;
    // One bit of the middle frame's payload: the last frame is whole after it.
    bytes[starts[1] + 20] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    assert_refused_as_damaged(&t, &path, &bytes, starts[1]);
}

#[tokio::test]
async fn an_impossible_length_before_whole_frames_is_damage_not_a_torn_tail() {
    let t = open_db();
    let (path, mut bytes, starts, _) = three_frames(&t).await;
    bytes[starts[1]..starts[1] + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_refused_as_damaged(&t, &path, &bytes, starts[1]);
}

#[tokio::test]
async fn a_torn_last_frame_is_still_dropped() {
    let t = open_db();
    let (path, bytes, starts, a) = three_frames(&t).await;
    // The last frame cut anywhere within it (a crash mid-append), or its checksum wrong.
    for cut in [starts[2] + 3, starts[2] + 12, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let db = Db::open(&t.path).unwrap();
        assert_eq!(logs(&db).await[0].steps, vec![start(&a), commit(1)]);
        db.shutdown().await.unwrap();
        assert_eq!(file_len(&t) as usize, starts[2]);
    }
    let mut bad = bytes.clone();
    *bad.last_mut().unwrap() ^= 0x01;
    std::fs::write(&path, &bad).unwrap();
    let db = Db::open(&t.path).unwrap();
    assert_eq!(logs(&db).await[0].steps, vec![start(&a), commit(1)]);
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn opening_rewrites_nothing() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let (live, ended) = (won(&ann, &bob, Seat::One), won(&ann, &bob, Seat::Two));
    t.db.append_log(live.game_id, &[start(&live)])
        .await
        .unwrap();
    t.db.append_log(ended.game_id, &[start(&ended)])
        .await
        .unwrap();
    t.db.record_game(ended.clone()).await.unwrap();
    t.db.shutdown().await.unwrap();
    let path = journal::path_for(&t.path);
    let (inode, bytes) = (
        std::fs::metadata(&path).unwrap().ino(),
        std::fs::read(&path).unwrap(),
    );
    // A recorded game's frames to drop, and still the file is the same file, unchanged
    // (a rewrite would be a new file renamed over it): a disk too full for a second copy
    // of the log still starts.
    let db = Db::open(&t.path).unwrap();
    assert_eq!(logs(&db).await.len(), 1);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    db.append_log(live.game_id, &[commit(1)]).await.unwrap();
    db.shutdown().await.unwrap();
}

#[test]
fn a_failed_sync_breaks_the_log_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = open_journal(&dir);
    let health = journal.health();
    journal.fail_syncs = true;
    let game_id = GameId(uuid::Uuid::new_v4());
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let failed = queue_append(&queue, game_id, &[commit(0)]);
    let thread = std::thread::spawn(move || journal::run(journal, requests, Duration::ZERO));
    let failed = failed.blocking_recv().unwrap();
    assert!(
        matches!(
            failed,
            Err(DbError::LogBroken {
                what: "cannot sync",
                ..
            })
        ),
        "{failed:?}"
    );
    assert_eq!(*health.borrow(), LogHealth::Broken);
    // Nothing is written after it, whatever comes next.
    for steps in [[commit(0)], [commit(1)]] {
        let later = queue_append(&queue, game_id, &steps)
            .blocking_recv()
            .unwrap();
        assert!(matches!(later, Err(DbError::LogBroken { .. })), "{later:?}");
    }
    drop(queue);
    thread.join().unwrap();
}
