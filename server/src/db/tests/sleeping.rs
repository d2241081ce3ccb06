//! Hibernated games' logs on SQLite (`db/hibernation.rs`): moved out of the step-log file
//! into the database when a game sleeps, read by key and put back when it wakes, with one
//! copy winning after a crash at any point of either move. (Both backends' wakes over the
//! real server: `tests/it/hibernation.rs`.)

use std::time::Duration;

use super::super::hibernation::encode_log;
use super::super::journal::Compaction;
use super::super::writer::Request;
use super::journal::{commit, logs, start};
use super::*;
use crate::record::{GameLog, LogStep};

/// A sleeping game's row, with the summary it is listed by.
fn sleeper(game_id: GameId) -> Sleeper {
    use elementals_protocol::messages::{LiveGame, PlayerInfo};
    let player = |name: &str| PlayerInfo {
        name: name.into(),
        rating: 1.5,
        guest: false,
        bot: false,
    };
    Sleeper {
        game_id,
        due_ms: 1_000_000,
        seats: SeatPair::new(1, 2),
        summary: Some(LiveGame {
            game_id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::CORR_1D,
            rated: true,
            players: SeatPair::new(player("ann"), player("bob")),
            round: 2,
            positions: vec![0, 1, 0, -1, 0],
            spectators: 0,
            correspondence: true,
        }),
    }
}

/// A game's steps: its start and `commits` commitments.
fn steps_of(record: &GameRecord, commits: u64) -> Vec<LogStep> {
    std::iter::once(start(record))
        .chain((1..=commits).map(commit))
        .collect()
}

/// `count` games with five steps each, logged; the first is the one the test puts to sleep.
async fn logged_games(db: &Db, count: usize) -> Vec<GameRecord> {
    let (ann, bob) = (register(db, "ann").await, register(db, "bob").await);
    let games: Vec<GameRecord> = (0..count).map(|_| won(&ann, &bob, Seat::One)).collect();
    for game in &games {
        db.append_log(game.game_id, &steps_of(game, 4))
            .await
            .unwrap();
    }
    games
}

/// The sleep's transaction alone (its wake-up row, and `log` as its moved log), without the
/// forget in the step-log file that follows it: what a crash between the two leaves.
async fn hibernate_unforgotten(db: &Db, game_id: GameId, log: Option<Vec<u8>>) {
    db.call(|reply| Request::Hibernate {
        sleeper: sleeper(game_id),
        log,
        reply,
    })
    .await
    .unwrap();
}

/// The steps a wake of `game_id` reads.
async fn wake(db: &Db, game_id: GameId) -> Vec<LogStep> {
    let mut woken = db.game_logs(vec![game_id]).await.unwrap();
    assert_eq!(woken.len(), 1);
    woken.remove(0).steps
}

/// `db` shut down and opened again, as after a crash: the step log is read anew.
async fn restart(db: &Db, t: &TestDb) -> Db {
    db.shutdown().await.unwrap();
    Db::open(&t.path).unwrap()
}

/// The steps of `game_id` among the live games' logs a restart read.
fn steps_in(logs: &[GameLog], game_id: GameId) -> &[LogStep] {
    &logs.iter().find(|l| l.game_id == game_id).unwrap().steps
}

/// The live steps of `game_id` after `db` is restarted; the restarted database is shut.
async fn steps_after_restart(db: &Db, t: &TestDb, game_id: GameId) -> Vec<LogStep> {
    let db = restart(db, t).await;
    let restored = logs(&db).await;
    db.shutdown().await.unwrap();
    steps_in(&restored, game_id).to_vec()
}

fn frames_read(db: &Db) -> u64 {
    db.game_log_frames_read().unwrap()
}

/// Whether the step-log file holds any frame of `game_id`.
fn file_holds(t: &TestDb, game_id: GameId) -> bool {
    let bytes = std::fs::read(super::super::journal::path_for(&t.path)).unwrap();
    let id = game_id.0.as_bytes();
    bytes.windows(id.len()).any(|w| w == id)
}

#[tokio::test]
async fn a_sleeping_game_is_read_by_key_and_its_frames_leave_the_file_at_compaction() {
    let t = open_db();
    t.db.shutdown().await.unwrap();
    let always = Compaction {
        min_len: 0,
        ratio: 1,
    };
    let db = Db::open_with(&t.path, always, Duration::ZERO).unwrap();
    let games = logged_games(&db, 50).await;
    let asleep = games[0].game_id;
    // Going to sleep reads the game's five frames, not the other 245.
    let before = frames_read(&db);
    db.hibernate(sleeper(asleep)).await.unwrap();
    assert_eq!(frames_read(&db) - before, 5);
    assert_eq!(count(&t.path, "sleeping_logs"), 1);
    // The next request finds the forgotten game's frames dead and compacts.
    db.append_log(games[1].game_id, &[commit(5)]).await.unwrap();
    db.flush().await.unwrap();
    assert!(!file_holds(&t, asleep));
    assert!(file_holds(&t, games[1].game_id));
    // Waking reads the row, not the file.
    let before = frames_read(&db);
    assert_eq!(wake(&db, asleep).await, steps_of(&games[0], 4));
    assert_eq!(frames_read(&db), before);
    db.woken(asleep).await.unwrap();
    assert_eq!(count(&t.path, "sleeping_logs"), 0);
    // Put back, it is a live game of the file again, and goes on from its last step.
    db.append_log(asleep, &[commit(5)]).await.unwrap();
    let db = restart(&db, &t).await;
    let restored = logs(&db).await;
    assert_eq!(restored.len(), 50);
    assert_eq!(steps_in(&restored, asleep), steps_of(&games[0], 5));
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_crash_after_the_row_before_the_forget_restores_the_game_asleep_once() {
    let t = open_db();
    let games = logged_games(&t.db, 3).await;
    let asleep = games[0].game_id;
    // The row and the wake-up committed, the forget lost: the file still holds the game.
    let log = encode_log(&steps_of(&games[0], 4)).unwrap();
    hibernate_unforgotten(&t.db, asleep, Some(log)).await;
    t.db.shutdown().await.unwrap();
    assert!(file_holds(&t, asleep));

    let db = Db::open(&t.path).unwrap();
    // The row wins: the file's frames are not a live game.
    let restored = logs(&db).await;
    assert_eq!(restored.len(), 2);
    assert!(restored.iter().all(|l| l.game_id != asleep));
    assert_eq!(db.sleepers().await.unwrap(), vec![sleeper(asleep)]);
    // Woken, its steps come back once, though the file now holds two runs of them.
    assert_eq!(wake(&db, asleep).await, steps_of(&games[0], 4));
    db.woken(asleep).await.unwrap();
    db.append_log(asleep, &[commit(5)]).await.unwrap();
    assert_eq!(
        steps_after_restart(&db, &t, asleep).await,
        steps_of(&games[0], 5)
    );
}

#[tokio::test]
async fn a_crash_after_the_put_back_before_the_rows_go_leaves_the_game_asleep_once() {
    let t = open_db();
    let games = logged_games(&t.db, 3).await;
    let asleep = games[0].game_id;
    t.db.hibernate(sleeper(asleep)).await.unwrap();
    // The wake put the steps back in the file, and the crash came before `woken`.
    assert_eq!(wake(&t.db, asleep).await, steps_of(&games[0], 4));

    let db = restart(&t.db, &t).await;
    assert_eq!(db.sleepers().await.unwrap(), vec![sleeper(asleep)]);
    assert!(logs(&db).await.iter().all(|l| l.game_id != asleep));
    assert_eq!(count(&t.path, "sleeping_logs"), 1);
    // The next wake puts the steps back once more, and they read back once.
    assert_eq!(wake(&db, asleep).await, steps_of(&games[0], 4));
    db.woken(asleep).await.unwrap();
    let db = restart(&db, &t).await;
    assert!(db.sleepers().await.unwrap().is_empty());
    let restored = logs(&db).await;
    assert_eq!(steps_in(&restored, asleep), steps_of(&games[0], 4));
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_wake_that_failed_after_its_put_back_is_tried_again_in_the_same_run() {
    let t = open_db();
    let games = logged_games(&t.db, 2).await;
    let asleep = games[0].game_id;
    t.db.hibernate(sleeper(asleep)).await.unwrap();
    // The first wake's `woken` never came (its write failed, say): the game sleeps on.
    wake(&t.db, asleep).await;
    assert_eq!(wake(&t.db, asleep).await, steps_of(&games[0], 4));
    t.db.woken(asleep).await.unwrap();
    t.db.append_log(asleep, &[commit(5)]).await.unwrap();
    assert_eq!(
        steps_after_restart(&t.db, &t, asleep).await,
        steps_of(&games[0], 5)
    );
}

#[tokio::test]
async fn a_game_that_slept_in_the_file_wakes_from_it() {
    // Put to sleep by a server that kept sleepers' logs in the file: a wake-up row and no
    // moved log.
    let t = open_db();
    let games = logged_games(&t.db, 2).await;
    let asleep = games[0].game_id;
    hibernate_unforgotten(&t.db, asleep, None).await;
    let db = restart(&t.db, &t).await;
    assert!(logs(&db).await.iter().all(|l| l.game_id != asleep));
    assert_eq!(wake(&db, asleep).await, steps_of(&games[0], 4));
    db.woken(asleep).await.unwrap();
    db.shutdown().await.unwrap();
}

#[tokio::test]
async fn postgres_keeps_a_sleeping_games_log_in_place() {
    let t = open_both().pop().unwrap();
    let games = logged_games(&t.db, 2).await;
    let asleep = games[0].game_id;
    t.db.hibernate(sleeper(asleep)).await.unwrap();
    assert_eq!(t.db.game_log_frames_read(), None);
    assert_eq!(wake(&t.db, asleep).await, steps_of(&games[0], 4));
    t.db.woken(asleep).await.unwrap();
    assert_eq!(count(&t.path, "game_wakeups"), 0);
}
