//! The journal's loop on a queue filled before it runs: which appends share a write and a
//! sync, pacing by the sync interval, a forget inside a batch, the batch's limit.

use super::*;

#[test]
fn appends_queued_together_share_one_write() {
    let dir = tempfile::tempdir().unwrap();
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let games: Vec<GameId> = (0..10).map(|_| GameId(uuid::Uuid::new_v4())).collect();
    let answers: Vec<_> = games
        .iter()
        .map(|game_id| queue_append(&queue, *game_id, &[commit(0), commit(1)]))
        .collect();
    drop(queue);
    let stats = journal::run(open_journal(&dir), requests, Duration::ZERO);
    assert_eq!(
        stats,
        JournalStats {
            batches: 1,
            appends: 10,
            compactions: 0,
        }
    );
    for answer in answers {
        answer.blocking_recv().unwrap().unwrap();
    }
}

#[test]
fn appends_that_come_within_the_sync_interval_share_the_next_sync() {
    let dir = tempfile::tempdir().unwrap();
    let interval = Duration::from_millis(500);
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let journal = open_journal(&dir);
    let thread = std::thread::spawn(move || journal::run(journal, requests, interval));
    let game_id = GameId(uuid::Uuid::new_v4());

    let sent = Instant::now();
    queue_append(&queue, game_id, &[commit(0)])
        .blocking_recv()
        .unwrap()
        .unwrap();
    // The last sync began a moment ago: these two wait for the rest of the interval and
    // share one sync.
    let second = queue_append(&queue, game_id, &[commit(1)]);
    let third = queue_append(&queue, game_id, &[commit(2)]);
    second.blocking_recv().unwrap().unwrap();
    assert!(
        sent.elapsed() >= interval,
        "the second sync began within the interval of the first"
    );
    third.blocking_recv().unwrap().unwrap();
    drop(queue);
    let stats = thread.join().unwrap();
    assert_eq!((stats.batches, stats.appends), (2, 3));
}

#[test]
fn an_append_after_a_quiet_spell_is_synced_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // An interval no test would outlive: the first append must not wait for it.
    let interval = Duration::from_secs(3600);
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let journal = open_journal(&dir);
    std::thread::spawn(move || journal::run(journal, requests, interval));
    let answer = queue_append(&queue, GameId(uuid::Uuid::new_v4()), &[commit(0)]);
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(answer.blocking_recv()));
    answered
        .recv_timeout(Duration::from_secs(60))
        .expect("the append waited for the interval")
        .unwrap()
        .unwrap();
}

#[test]
fn a_forget_between_appends_does_not_cut_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    // A game logged earlier (its appends long answered) whose record is now durable.
    let ended = GameId(uuid::Uuid::new_v4());
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let logged = queue_append(&queue, ended, &[commit(0)]);
    drop(queue);
    journal::run(open_journal(&dir), requests, Duration::ZERO);
    logged.blocking_recv().unwrap().unwrap();

    let (first, second) = (GameId(uuid::Uuid::new_v4()), GameId(uuid::Uuid::new_v4()));
    let (queue, requests) = mpsc::channel(journal::REQUEST_QUEUE);
    let mut answers = vec![queue_append(&queue, first, &[commit(0)])];
    assert!(queue.try_send(Request::Forget { game_id: ended }).is_ok());
    answers.push(queue_append(&queue, second, &[commit(0)]));
    let (reply, loaded) = oneshot::channel();
    assert!(queue
        .try_send(Request::Load {
            skip: Default::default(),
            reply,
        })
        .is_ok());
    drop(queue);
    let stats = journal::run(open_journal(&dir), requests, Duration::ZERO);
    assert_eq!((stats.batches, stats.appends), (1, 2));
    for answer in answers {
        answer.blocking_recv().unwrap().unwrap();
    }
    // The forgotten game is gone from what a restart would restore; the others are there.
    let mut live: Vec<GameId> = loaded
        .blocking_recv()
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|log| log.game_id)
        .collect();
    live.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(live, expected);
}

#[test]
fn a_batch_holds_at_most_the_append_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (queue, requests) = mpsc::channel(MAX_BATCH_APPENDS + 10);
    let game_id = GameId(uuid::Uuid::new_v4());
    let answers: Vec<_> = (0..MAX_BATCH_APPENDS as u64 + 10)
        .map(|n| queue_append(&queue, game_id, &[commit(n)]))
        .collect();
    drop(queue);
    let stats = journal::run(open_journal(&dir), requests, Duration::ZERO);
    assert_eq!(
        (stats.batches, stats.appends),
        (2, MAX_BATCH_APPENDS as u64 + 10)
    );
    for answer in answers {
        answer.blocking_recv().unwrap().unwrap();
    }
}
