//! `writer::run` on a queue filled before it starts, so what it finds already queued (and
//! therefore batches) is known exactly. Plain tests: the loop blocks, as on its own thread.

use tokio::sync::{mpsc, oneshot};

use super::super::writer::{self, Request, WriterStats, MAX_BATCH_GAMES};
use super::super::{accounts, schema, stored};
use super::*;

struct Prepared {
    _dir: TempDir,
    path: PathBuf,
    conn: rusqlite::Connection,
    ann: AccountRow,
    bob: AccountRow,
}

fn prepared() -> Prepared {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elementals.db");
    let conn = schema::open(&path).unwrap();
    let ann = accounts::create_account(&conn, "Ann", "h").unwrap();
    let bob = accounts::create_account(&conn, "Bob", "h").unwrap();
    Prepared {
        _dir: dir,
        path,
        conn,
        ann,
        bob,
    }
}

type Answer<T> = oneshot::Receiver<DbResult<T>>;

fn queue_game(
    queue: &mpsc::Sender<Request>,
    record: GameRecord,
) -> Answer<Option<SeatPair<RatingChange>>> {
    let (reply, answer) = oneshot::channel();
    let record = std::sync::Arc::new(record);
    assert!(queue
        .try_send(Request::RecordGame {
            stored: stored::encode(&record).unwrap(),
            record,
            reply,
        })
        .is_ok());
    answer
}

fn queue_lookup(queue: &mpsc::Sender<Request>, id: AccountId) -> Answer<Option<AccountRow>> {
    let (reply, answer) = oneshot::channel();
    assert!(queue.try_send(Request::AccountById { id, reply }).is_ok());
    answer
}

fn queue_flush(queue: &mpsc::Sender<Request>) -> Answer<()> {
    let (reply, answer) = oneshot::channel();
    assert!(queue.try_send(Request::Flush { reply }).is_ok());
    answer
}

#[test]
fn queued_requests_share_a_transaction_and_each_sees_those_before_it() {
    let p = prepared();
    let (queue, requests) = mpsc::channel(writer::REQUEST_QUEUE);
    let a = won(&p.ann, &p.bob, Seat::One);
    let nobody = AccountRow {
        id: 999,
        ..p.bob.clone()
    };

    let first = queue_game(&queue, a.clone());
    let second = queue_game(&queue, won(&p.ann, &p.bob, Seat::One));
    let lookup = queue_lookup(&queue, p.ann.id);
    let repeat = queue_game(&queue, a);
    let broken = queue_game(&queue, won(&p.ann, &nobody, Seat::One));
    let last = queue_game(&queue, won(&p.ann, &p.bob, Seat::Two));
    let flush = queue_flush(&queue);
    drop(queue);

    // Ends because every sender is gone: the loop stops when its handles do.
    let stats = writer::run(p.conn, requests);
    // [first, second, lookup, repeat, broken, last] in one transaction; then the flush.
    assert_eq!(
        stats,
        WriterStats {
            batches: 1,
            requests: 6,
            games: 5,
        }
    );

    let first = first.blocking_recv().unwrap().unwrap();
    assert!(first.is_some());
    assert!(second.blocking_recv().unwrap().unwrap().is_some());
    // Run in its place: it sees the two games queued before it and none after.
    let ann = lookup.blocking_recv().unwrap().unwrap().unwrap();
    assert_eq!((ann.wins, ann.losses), (2, 0));
    assert_eq!(repeat.blocking_recv().unwrap().unwrap(), first);
    let broken = broken.blocking_recv().unwrap();
    assert!(matches!(broken, Err(DbError::Sqlite(_))), "{broken:?}");
    assert!(last.blocking_recv().unwrap().unwrap().is_some());
    flush.blocking_recv().unwrap().unwrap();

    // The failed game took nothing else down with it.
    assert_eq!(count(&p.path, "games"), 3);
    assert_eq!(count(&p.path, "rating_history"), 6);
}

#[test]
fn a_batch_holds_at_most_the_game_limit() {
    let p = prepared();
    let (queue, requests) = mpsc::channel(writer::REQUEST_QUEUE);
    let total = MAX_BATCH_GAMES + 44;
    let answers: Vec<_> = (0..total)
        .map(|_| queue_game(&queue, won(&p.ann, &p.bob, Seat::One)))
        .collect();
    drop(queue);

    let stats = writer::run(p.conn, requests);
    assert_eq!(
        stats,
        WriterStats {
            batches: 2,
            requests: total as u64,
            games: total as u64,
        }
    );
    for answer in answers {
        assert!(answer.blocking_recv().unwrap().unwrap().is_some());
    }
    assert_eq!(count(&p.path, "games"), total as i64);
}

#[test]
fn requests_queued_behind_a_shutdown_are_closed() {
    let p = prepared();
    let (queue, requests) = mpsc::channel(writer::REQUEST_QUEUE);
    let game = queue_game(&queue, won(&p.ann, &p.bob, Seat::One));
    let (reply, shut) = oneshot::channel();
    assert!(queue.try_send(Request::Shutdown { reply }).is_ok());
    let late = queue_lookup(&queue, p.ann.id);

    // Returns although `queue` is still alive: the shutdown stopped it.
    writer::run(p.conn, requests);
    assert!(game.blocking_recv().unwrap().unwrap().is_some());
    shut.blocking_recv().unwrap().unwrap();
    // The writer is gone; `Db::call` turns this into `DbError::Closed`.
    assert!(late.blocking_recv().is_err());
    assert!(queue.is_closed());
}
