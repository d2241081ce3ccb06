//! Fan-out helpers: threads that share a game's writes to its spectators.
//!
//! A delivery writes each spectator its frames with one non-blocking `send` (see
//! `Outbox::write_frames`), and with ten thousand spectators those sends are nearly all of
//! a delivery's time. One game's actor runs on one worker at a time, so without help a
//! delivery uses one core however many the machine has. A pass of sends is offered to the
//! helpers as a [`Job`]: the actor (a chunk of sends per turn of its loop) and at most one
//! helper (without a break) take its sends one at a time from a shared counter. A helper
//! that is busy elsewhere, or slow to wake, takes nothing and costs the actor nothing but
//! the offer; one that is awake goes on sending while the actor answers the players or
//! waits for the scheduler. The actor never waits for a helper: it settles a job once
//! every send taken from it is finished, on a later turn if a helper's send is still under
//! way (only a game that is stopping, or a spectator removed mid-pass, waits for it).
//!
//! The helpers are plain threads, not tasks: a task spawned from a worker waits in that
//! worker's own slot, where the other worker cannot take it (BENCHMARKS.md §4, server J).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{
    AtomicU8, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;

use crate::outbox::{Framed, Outbox, SendError};

/// Jobs of fewer sends than this are made by the actor alone: offering them costs more
/// than sharing them saves.
const MIN_SHARED: usize = 16;

/// The helpers of a process: `--fanout-helpers`, or by default one fewer than the cores
/// (at most [`MAX_DEFAULT`]).
static HELPERS: OnceLock<Option<Helpers>> = OnceLock::new();

/// The most helpers started by default.
const MAX_DEFAULT: usize = 3;

/// What one send did (as a `u8` in a job's outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Sent {
    /// Written, or queued for the connection's writer.
    Ok,
    /// The connection's queue is full: the spectator is behind.
    Full,
    /// The connection is gone.
    Closed,
}

impl Sent {
    fn from_u8(outcome: u8) -> Sent {
        match outcome {
            o if o == Sent::Full as u8 => Sent::Full,
            o if o == Sent::Closed as u8 => Sent::Closed,
            _ => Sent::Ok,
        }
    }

    fn of(result: Result<(), SendError>) -> Sent {
        match result {
            Ok(()) => Sent::Ok,
            Err(SendError::Full) => Sent::Full,
            Err(SendError::Closed) => Sent::Closed,
        }
    }
}

/// Starts `count` helpers, unless helpers have already been started (or declined): the
/// first call of the process decides. `None` is the default.
pub fn start(count: Option<usize>) {
    init(count);
}

/// The process's helpers, started with `count` (see `start`) if they were not yet.
fn init(count: Option<usize>) -> Option<&'static Helpers> {
    HELPERS
        .get_or_init(|| {
            let count = count.unwrap_or_else(|| {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                (cores - 1).min(MAX_DEFAULT)
            });
            Helpers::spawn(count)
        })
        .as_ref()
}

/// One send of a job: `backlog[from..]` written to `outbox`, or with `from` `None`, the
/// job's snapshot queued to it (a spectator that fell behind).
pub(super) struct Item {
    pub outbox: Arc<Outbox>,
    pub from: Option<usize>,
}

/// A pass of sends, taken one at a time by whoever runs it: the actor a chunk at a time
/// (`run_some`), a helper until none is left. `stop` ends it, where it stands or once
/// everything is taken, and waits for the sends already begun.
pub(super) struct Job {
    backlog: Arc<Framed>,
    snapshot: Option<Bytes>,
    work: Vec<Item>,
    /// The next send to take.
    next: AtomicUsize,
    outcomes: Vec<AtomicU8>,
    /// Sends finished (their outcome stored).
    done: AtomicUsize,
    /// Sends a helper made.
    helped: AtomicUsize,
    /// How many sends were taken when the job was stopped.
    stopped: OnceLock<usize>,
}

/// Counts a send as finished when dropped. Release: whoever sees the count sees the
/// send's outcome (and a helper's count).
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Release);
    }
}

impl Job {
    /// A job of `work`, offered to a helper when it is big enough to share.
    pub fn start(work: Vec<Item>, backlog: Arc<Framed>, snapshot: Option<Bytes>) -> Arc<Job> {
        let job = Arc::new(Job {
            backlog,
            snapshot,
            outcomes: work.iter().map(|_| AtomicU8::new(0)).collect(),
            work,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            helped: AtomicUsize::new(0),
            stopped: OnceLock::new(),
        });
        if job.work.len() >= MIN_SHARED {
            if let Some(helpers) = init(None) {
                helpers.offer(&job);
            }
        }
        job
    }

    pub fn len(&self) -> usize {
        self.work.len()
    }

    /// Makes up to `max` of the sends not yet taken; returns whether some are left.
    pub fn run_some(&self, max: usize) -> bool {
        for _ in 0..max {
            if !self.take(false) {
                return false;
            }
        }
        self.next.load(Relaxed) < self.work.len()
    }

    /// Takes no more sends, and returns how many were taken: sends `0..n` are made or
    /// being made, the rest never will be. (It may be called again: the count stays.)
    pub fn halt(&self) -> usize {
        *self.stopped.get_or_init(|| {
            if let Some(helpers) = init(None) {
                helpers.withdraw(self);
            }
            // Whoever takes after this gets a number past the end. (Each taker goes past
            // the end at most once, so the count cannot run away.)
            let len = self.work.len();
            self.next.swap(len, Relaxed).min(len)
        })
    }

    /// Whether the job is halted and every send it took is finished (its outcome there).
    pub fn settled(&self) -> bool {
        self.stopped
            .get()
            .is_some_and(|&taken| self.done.load(Acquire) >= taken)
    }

    /// Halts the job and waits for the sends already begun: a helper may still be making
    /// one. Waiting for it keeps each connection's frames in order (the next job may write
    /// to the same spectator). Returns `halt`'s count. The game's own turn does not wait
    /// here when it can come back later (see `Fanout::deliver`).
    pub fn stop(&self) -> usize {
        let taken = self.halt();
        let mut spins = 0u32;
        while !self.settled() {
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        taken
    }

    /// What send `k` did; only for `k` below what `stop` returned.
    pub fn outcome(&self, k: usize) -> Sent {
        Sent::from_u8(self.outcomes[k].load(Relaxed))
    }

    /// Takes and makes one send; false when none was left. A `helper` counts its own.
    fn take(&self, helper: bool) -> bool {
        let k = self.next.fetch_add(1, Relaxed);
        let Some(item) = self.work.get(k) else {
            return false;
        };
        // Counted as finished however it ends, so that `stop` never waits for a send that
        // unwound.
        let finished = Finished(&self.done);
        // On a helper, a panic in a send (there should be none) drops that spectator's
        // connection and the helper lives on. On the game's task it unwinds to the game's
        // supervisor, as any panic there does.
        let sent = if helper {
            std::panic::catch_unwind(AssertUnwindSafe(|| self.send(item))).unwrap_or_else(|_| {
                item.outbox.kill();
                Sent::Closed
            })
        } else {
            self.send(item)
        };
        self.outcomes[k].store(sent as u8, Relaxed);
        if helper {
            self.helped.fetch_add(1, Relaxed);
        }
        drop(finished);
        true
    }

    fn send(&self, item: &Item) -> Sent {
        match (item.from, &self.snapshot) {
            (Some(from), _) => Sent::of(item.outbox.write_frames(&self.backlog, from)),
            (None, Some(snapshot)) => Sent::of(item.outbox.send(snapshot.clone())),
            // (A job is never given a snapshot item without its snapshot.)
            (None, None) => Sent::Ok,
        }
    }

    /// Sends a helper made.
    #[cfg(test)]
    fn helped(&self) -> usize {
        self.helped.load(Relaxed)
    }
}

struct Helpers {
    queue: Arc<Queue>,
}

/// Jobs offered and not yet picked up, and the helpers' wait for them.
#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Arc<Job>>>,
    offered: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Arc<Job>>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A helper's life: the next job offered, run, forever.
    fn serve(&self) {
        loop {
            let job = {
                let mut jobs = self.lock();
                loop {
                    match jobs.pop_front() {
                        Some(job) => break job,
                        None => {
                            jobs = self.offered.wait(jobs).unwrap_or_else(|e| e.into_inner());
                        }
                    }
                }
            };
            while job.take(true) {}
        }
    }
}

impl Helpers {
    fn spawn(count: usize) -> Option<Helpers> {
        if count == 0 {
            return None;
        }
        let queue = Arc::new(Queue::default());
        for i in 0..count {
            let serving = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("fanout-helper-{i}"))
                .spawn(move || serving.serve());
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "could not start a fan-out helper");
                if i == 0 {
                    return None;
                }
                break;
            }
        }
        Some(Helpers { queue })
    }

    /// Offers `job` to one idle helper.
    fn offer(&self, job: &Arc<Job>) {
        self.queue.lock().push_back(Arc::clone(job));
        self.queue.offered.notify_one();
    }

    /// Takes `job` back if no helper has picked it up.
    fn withdraw(&self, job: &Job) {
        self.queue
            .lock()
            .retain(|queued| !std::ptr::eq(Arc::as_ptr(queued), job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbound;
    use tokio::sync::mpsc;

    /// The open outboxes' receivers, by number.
    type Receivers = Vec<(u64, mpsc::Receiver<Outbound>)>;

    /// `n` outboxes of capacity 1 (a second item does not fit); every third is closed.
    fn outboxes(n: u64) -> (Vec<Arc<Outbox>>, Receivers) {
        let mut receivers = Vec::new();
        let outboxes = (0..n)
            .map(|i| {
                let (outbox, rx) = Outbox::new(i, 1);
                if !i.is_multiple_of(3) {
                    receivers.push((i, rx));
                }
                Arc::new(outbox)
            })
            .collect();
        (outboxes, receivers)
    }

    fn job(outboxes: &[Arc<Outbox>], framed: &Arc<Framed>) -> Arc<Job> {
        let work = outboxes
            .iter()
            .map(|outbox| Item {
                outbox: Arc::clone(outbox),
                from: Some(0),
            })
            .collect();
        Job::start(work, Arc::clone(framed), None)
    }

    /// Runs a whole job as the actor does, a chunk at a time; its outcomes and how many
    /// sends the helper made.
    fn run(outboxes: &[Arc<Outbox>], framed: &Arc<Framed>) -> (Vec<Sent>, usize) {
        let job = job(outboxes, framed);
        while job.run_some(64) {}
        let taken = job.stop();
        assert_eq!(taken, outboxes.len(), "every send is taken");
        ((0..taken).map(|k| job.outcome(k)).collect(), job.helped())
    }

    fn expect(i: usize, open: Sent) -> Sent {
        if i.is_multiple_of(3) {
            Sent::Closed
        } else {
            open
        }
    }

    #[test]
    fn every_send_is_made_once_and_its_outcome_kept_in_order() {
        start(Some(1));
        let framed = Arc::new(Framed::new(Arc::from([bytes::Bytes::from_static(b"x")])));
        let mut helped = 0;
        // Enough sends that the helper wakes while some are left (a queued send is well
        // under a microsecond), a few times over.
        for round in 0..3 {
            let (outboxes, mut receivers) = outboxes(100_000);
            let (sent, by_helper) = run(&outboxes, &framed);
            helped += by_helper;
            assert!(
                sent.iter()
                    .enumerate()
                    .all(|(i, s)| *s == expect(i, Sent::Ok)),
                "round {round}"
            );
            // Each open outbox holds its one item now: a second send finds it full.
            let (again, by_helper) = run(&outboxes, &framed);
            helped += by_helper;
            assert!(
                again
                    .iter()
                    .enumerate()
                    .all(|(i, s)| *s == expect(i, Sent::Full)),
                "round {round}"
            );
            for (i, rx) in &mut receivers {
                assert!(rx.try_recv().is_ok(), "outbox {i} got its item");
                assert!(rx.try_recv().is_err(), "outbox {i} got one item only");
            }
        }
        assert!(helped > 0, "the helper made some of the sends");
    }

    #[test]
    fn a_job_stopped_part_way_made_exactly_the_sends_it_reports() {
        start(Some(1));
        let framed = Arc::new(Framed::new(Arc::from([bytes::Bytes::from_static(b"y")])));
        for round in 0..5 {
            let (outboxes, mut receivers) = outboxes(100_000);
            let job = job(&outboxes, &framed);
            job.run_some(10);
            // The helper may be sending meanwhile; it stops wherever it stands.
            let taken = job.halt();
            assert_eq!(job.stop(), taken, "round {round}: the count stays");
            assert!(job.settled());
            assert!(
                (10..=outboxes.len()).contains(&taken),
                "round {round}: {taken}"
            );
            assert!(!job.run_some(64), "nothing is taken after a stop");
            for k in 0..taken {
                assert_eq!(job.outcome(k), expect(k, Sent::Ok), "round {round}");
            }
            // Sends below the count were made, none above it.
            for (i, rx) in &mut receivers {
                let got = rx.try_recv().is_ok();
                assert_eq!(got, (*i as usize) < taken, "round {round}: outbox {i}");
            }
        }
    }
}
