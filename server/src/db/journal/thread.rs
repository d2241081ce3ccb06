//! The game log's thread ("game-log"): its queue, batches and pacing.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{io_error, Journal, JournalStats, Request, MAX_BATCH_APPENDS, REQUEST_QUEUE};
use crate::db::DbResult;

/// Starts the journal's thread and returns the sender of its queue.
pub(in crate::db) fn spawn(
    journal: Journal,
    sync_interval: Duration,
) -> DbResult<mpsc::Sender<Request>> {
    let (requests, queue) = mpsc::channel(REQUEST_QUEUE);
    let path = journal.path.clone();
    std::thread::Builder::new()
        .name("game-log".into())
        .spawn(move || run(journal, queue, sync_interval))
        .map_err(|e| io_error("cannot start the game log thread", &path, e))?;
    Ok(requests)
}

/// The journal loop: runs until every sender is dropped or a `Shutdown` is reached.
/// Appends queued together are written together, up to `MAX_BATCH_APPENDS`; a batch is
/// begun no sooner than `sync_interval` after the last one began.
pub(in crate::db) fn run(
    mut journal: Journal,
    mut queue: mpsc::Receiver<Request>,
    sync_interval: Duration,
) -> JournalStats {
    let mut stats = JournalStats::default();
    // When the last batch began.
    let mut last_batch: Option<Instant> = None;
    let mut next: Option<Request> = None;
    // After a failed compaction, the length the file must reach before the next try.
    let mut retry_at = 0;
    let shutdown = loop {
        let Some(request) = next.take().or_else(|| queue.blocking_recv()) else {
            break None;
        };
        match request {
            Request::Append {
                game_id,
                rows,
                reply,
            } => {
                // Syncs are coming fast: let the appends of the rest of the interval
                // gather, and share this one's sync.
                if let Some(last) = last_batch {
                    std::thread::sleep(
                        (last + sync_interval).saturating_duration_since(Instant::now()),
                    );
                }
                let mut batch = vec![(game_id, rows, reply)];
                while batch.len() < MAX_BATCH_APPENDS {
                    match queue.try_recv() {
                        Ok(Request::Append {
                            game_id,
                            rows,
                            reply,
                        }) => batch.push((game_id, rows, reply)),
                        // A forget needs no place in the order: it comes once the game's
                        // record is durable, long after its last append was answered. So
                        // it does not cut a batch short (a game ends every few batches at
                        // full load, and each cut would cost an `fdatasync`).
                        Ok(Request::Forget { game_id }) => journal.forget(&game_id),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                stats.batches += 1;
                stats.appends += batch.len() as u64;
                last_batch = Some(Instant::now());
                journal.append_batch(batch);
            }
            Request::Forget { game_id } => journal.forget(&game_id),
            Request::Load { skip, reply } => {
                let _ = reply.send(journal.load(|id| !skip.contains(id)));
            }
            Request::LoadSome { games, reply } => {
                let _ = reply.send(journal.load_some(&games));
            }
            // Every append before it was answered only once durable.
            Request::Flush { reply } => {
                let _ = reply.send(Ok(()));
            }
            Request::Shutdown { reply } => break Some(reply),
            // A file serves one process: there are no leases to claim.
            Request::Claim { reply } => {
                let _ = reply.send(Ok(Vec::new()));
            }
            Request::ClaimLobby { reply } => {
                let _ = reply.send(Ok(None));
            }
        }
        if journal.wants_compaction() && journal.len >= retry_at {
            match journal.compact() {
                Ok(()) => stats.compactions += 1,
                Err(error) => {
                    tracing::error!(%error, "cannot compact the game log; it keeps growing");
                    retry_at = journal.len + journal.compaction.min_len;
                }
            }
        }
    };
    drop(queue);
    tracing::info!(
        batches = stats.batches,
        appends = stats.appends,
        compactions = stats.compactions,
        live_games = journal.live_games(),
        "game log stopped"
    );
    // Closed (and its lock released) before a shutdown is answered, so that the database
    // can be opened again at once.
    drop(journal);
    if let Some(reply) = shutdown {
        let _ = reply.send(Ok(()));
    }
    stats
}
