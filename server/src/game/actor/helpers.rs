//! Fan-out helpers: threads that share a game's writes to its spectators.
//!
//! A delivery writes each spectator its frames with one non-blocking `send` (see
//! `Outbox::write_frames`), and with ten thousand spectators those sends are nearly all of
//! a delivery's time. One game's actor runs on one worker at a time, so without help a
//! delivery uses one core however many the machine has. A chunk of sends is offered to
//! the helpers as a [`Job`]: the actor and at most one helper take its sends one at a time
//! from a shared counter, so a helper that is busy elsewhere, or slow to wake, takes
//! nothing and costs the actor nothing but the offer; the actor never waits for a helper
//! to start, only for a send a helper has already begun.
//!
//! The helpers are plain threads, not tasks: a task spawned from a worker waits in that
//! worker's own slot, where the other worker cannot take it (BENCHMARKS.md §4, server J).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{
    AtomicU8, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crate::outbox::{Framed, Outbox, SendError};

/// Fewer sends than this are made by the actor alone: offering them costs more than
/// sharing them saves.
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

/// Sends each `(outbox, from)` of `work` `backlog[from..]`, sharing the sends with a
/// helper when there are enough of them; returns what each send did, in `work`'s order.
pub(super) fn send_all(work: Vec<(Arc<Outbox>, usize)>, backlog: &Arc<Framed>) -> Vec<Sent> {
    share(work, backlog).0
}

/// `send_all`, and how many of the sends a helper made.
fn share(work: Vec<(Arc<Outbox>, usize)>, backlog: &Arc<Framed>) -> (Vec<Sent>, usize) {
    let helpers = match init(None) {
        Some(helpers) if work.len() >= MIN_SHARED => helpers,
        _ => {
            let sent = work
                .iter()
                .map(|(outbox, from)| send(outbox, backlog, *from))
                .collect();
            return (sent, 0);
        }
    };
    let job = Arc::new(Job {
        backlog: Arc::clone(backlog),
        outcomes: work.iter().map(|_| AtomicU8::new(0)).collect(),
        work,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        helped: AtomicUsize::new(0),
    });
    helpers.offer(&job);
    job.run(false);
    // Nothing is left to take; a helper may still be making one send it took. Waiting
    // for it keeps each connection's frames in order: the next chunk or pass may write
    // to the same spectator.
    helpers.withdraw(&job);
    let mut spins = 0u32;
    while job.done.load(Acquire) < job.work.len() {
        spins += 1;
        if spins < 100 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let sent = job
        .outcomes
        .iter()
        .map(|o| Sent::from_u8(o.load(Relaxed)))
        .collect();
    (sent, job.helped.load(Relaxed))
}

fn send(outbox: &Outbox, backlog: &Framed, from: usize) -> Sent {
    match outbox.write_frames(backlog, from) {
        Ok(()) => Sent::Ok,
        Err(SendError::Full) => Sent::Full,
        Err(SendError::Closed) => Sent::Closed,
    }
}

/// A chunk of sends, taken one at a time by whoever runs it.
struct Job {
    backlog: Arc<Framed>,
    work: Vec<(Arc<Outbox>, usize)>,
    /// The next send to take.
    next: AtomicUsize,
    outcomes: Vec<AtomicU8>,
    /// Sends finished (their outcome stored).
    done: AtomicUsize,
    /// Sends a helper made.
    helped: AtomicUsize,
}

impl Job {
    /// Takes sends until none are left; a `helper` counts its own in `helped`.
    fn run(&self, helper: bool) {
        loop {
            let k = self.next.fetch_add(1, Relaxed);
            let Some((outbox, from)) = self.work.get(k) else {
                return;
            };
            // On a helper, a panic in a send (there should be none) drops that spectator's
            // connection and the helper lives on: the game counts on every send it took
            // finishing. On the game's task it unwinds to the game's supervisor, as any
            // panic there does.
            let sent = if helper {
                std::panic::catch_unwind(AssertUnwindSafe(|| send(outbox, &self.backlog, *from)))
                    .unwrap_or_else(|_| {
                        outbox.kill();
                        Sent::Closed
                    })
            } else {
                send(outbox, &self.backlog, *from)
            };
            self.outcomes[k].store(sent as u8, Relaxed);
            if helper {
                self.helped.fetch_add(1, Relaxed);
            }
            // Release: whoever sees the count sees the outcome (and the helper's count).
            self.done.fetch_add(1, Release);
        }
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
            job.run(true);
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
    fn withdraw(&self, job: &Arc<Job>) {
        self.queue.lock().retain(|queued| !Arc::ptr_eq(queued, job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_send_is_made_once_and_its_outcome_kept_in_order() {
        start(Some(1));
        let framed = Arc::new(Framed::new(Arc::from([bytes::Bytes::from_static(b"x")])));
        let mut helped = 0;
        // Enough sends that the helper wakes while some are left (a queued send is well
        // under a microsecond), a few times over.
        for round in 0..3 {
            let mut receivers = Vec::new();
            let work: Vec<(Arc<Outbox>, usize)> = (0..100_000u64)
                .map(|i| {
                    // Capacity 1: a second item does not fit. Every third is closed.
                    let (outbox, rx) = Outbox::new(i, 1);
                    if i.is_multiple_of(3) {
                        drop(rx);
                    } else {
                        receivers.push((i, rx));
                    }
                    (Arc::new(outbox), 0)
                })
                .collect();
            let expect = |i: usize, open: Sent| {
                if i.is_multiple_of(3) {
                    Sent::Closed
                } else {
                    open
                }
            };
            let (sent, by_helper) = share(work.clone(), &framed);
            helped += by_helper;
            assert!(
                sent.iter()
                    .enumerate()
                    .all(|(i, s)| *s == expect(i, Sent::Ok)),
                "round {round}"
            );
            // Each open outbox holds its one item now: a second send finds it full.
            let (again, by_helper) = share(work, &framed);
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
}
