//! The live games' logs: appended, read back at startup, cleared with the game's record.

use tokio::sync::{mpsc, oneshot};

use super::super::writer::{self, Request, WriterStats, MAX_BATCH_APPENDS};
use super::super::{gamelog, schema};
use super::*;
use crate::game::GameSetup;
use crate::record::{LogEntry, LogStep};

fn setup(record: &GameRecord) -> GameSetup {
    GameSetup {
        game_id: record.game_id,
        variant: record.variant,
        time_control: record.time_control,
        rated: record.rated,
        players: record.players.clone(),
    }
}

fn step(step: u64, entry: LogEntry) -> LogStep {
    LogStep {
        step,
        at: 1_000 + step,
        banks_us: SeatPair::new(60_000_000, 59_000_001),
        seq: step,
        entry,
    }
}

fn start(record: &GameRecord) -> LogStep {
    step(
        0,
        LogEntry::Start {
            setup: setup(record),
            started_at: record.started_at,
        },
    )
}

fn commit(n: u64) -> LogStep {
    step(
        n,
        LogEntry::Commit {
            round: 1,
            seat: Seat::One,
            commitment: "ab".repeat(32),
        },
    )
}

#[tokio::test]
async fn logged_steps_read_back_per_game_in_order_until_the_game_is_recorded() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let (a, b) = (won(&ann, &bob, Seat::One), won(&bob, &ann, Seat::Two));
    t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
    t.db.append_log(b.game_id, &[start(&b), commit(1)])
        .await
        .unwrap();
    t.db.append_log(a.game_id, &[commit(1), commit(2)])
        .await
        .unwrap();
    let mut logs = t.db.unfinished_games().await.unwrap();
    logs.sort_by_key(|l| l.game_id != a.game_id);
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0].game_id, a.game_id);
    assert_eq!(logs[0].steps, vec![start(&a), commit(1), commit(2)]);
    assert_eq!(logs[1].steps, vec![start(&b), commit(1)]);

    // Recording a game deletes its log in the same transaction.
    t.db.record_game(a.clone()).await.unwrap();
    let logs = t.db.unfinished_games().await.unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].game_id, b.game_id);
    assert_eq!(count(&t.path, "game_log"), 2);
}

#[tokio::test]
async fn a_step_logged_twice_is_refused_and_changes_nothing() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
    let again = t.db.append_log(a.game_id, &[commit(1), commit(0)]).await;
    assert!(matches!(again, Err(DbError::Sqlite(_))), "{again:?}");
    let logs = t.db.unfinished_games().await.unwrap();
    assert_eq!(logs[0].steps, vec![start(&a)]);
}

#[tokio::test]
async fn a_log_left_behind_by_a_recorded_game_is_cleared_at_load() {
    let t = open_db();
    let (ann, bob) = (register(&t.db, "ann").await, register(&t.db, "bob").await);
    let a = won(&ann, &bob, Seat::One);
    t.db.record_game(a.clone()).await.unwrap();
    t.db.append_log(a.game_id, &[start(&a)]).await.unwrap();
    assert!(t.db.unfinished_games().await.unwrap().is_empty());
    assert_eq!(count(&t.path, "game_log"), 0);
}

#[test]
fn appends_and_records_queued_together_share_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elementals.db");
    let conn = schema::open(&path).unwrap();
    let ann = super::super::accounts::create_account(&conn, "Ann", "h").unwrap();
    let bob = super::super::accounts::create_account(&conn, "Bob", "h").unwrap();
    let (queue, requests) = mpsc::channel(writer::REQUEST_QUEUE);
    let games: Vec<GameRecord> = (0..10).map(|_| won(&ann, &bob, Seat::One)).collect();
    let mut answers = Vec::new();
    for game in &games {
        let (reply, answer) = oneshot::channel();
        let rows = gamelog::encode(&[start(game), commit(1)]).unwrap();
        let game_id = game.game_id;
        let append = Request::AppendLog {
            game_id,
            rows,
            reply,
        };
        assert!(queue.try_send(append).is_ok());
        answers.push(answer);
    }
    let (reply, recorded) = oneshot::channel();
    let record = Box::new(games[0].clone());
    assert!(queue
        .try_send(Request::RecordGame { record, reply })
        .is_ok());
    drop(queue);

    let stats = writer::run(conn, requests);
    assert_eq!(
        stats,
        WriterStats {
            batches: 1,
            games: 1,
            appends: 10,
        }
    );
    for answer in answers {
        answer.blocking_recv().unwrap().unwrap();
    }
    assert!(recorded.blocking_recv().unwrap().unwrap().is_some());
    // The recorded game's log went with it; the nine others' remain.
    assert_eq!(count(&path, "game_log"), 18);
}

#[test]
fn a_batch_holds_at_most_the_append_limit() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let (queue, requests) = mpsc::channel(MAX_BATCH_APPENDS + 10);
    let game_id = GameId(uuid::Uuid::new_v4());
    let answers: Vec<_> = (0..MAX_BATCH_APPENDS as u64 + 10)
        .map(|n| {
            let (reply, answer) = oneshot::channel();
            let rows = gamelog::encode(&[commit(n)]).unwrap();
            let append = Request::AppendLog {
                game_id,
                rows,
                reply,
            };
            assert!(queue.try_send(append).is_ok());
            answer
        })
        .collect();
    drop(queue);
    let stats = writer::run(conn, requests);
    assert_eq!(
        (stats.batches, stats.appends),
        (2, MAX_BATCH_APPENDS as u64 + 10)
    );
    for answer in answers {
        answer.blocking_recv().unwrap().unwrap();
    }
}
