//! `Reader`: the lean spectators' thread. One mio poll over every adopted socket; while
//! sockets keep becoming ready it only reads them, timing each read, and decodes after.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{ErrorKind, Read};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ctx::{jittered, Ctx};
use crate::stats::Stats;

use super::frame::OP_CLOSE;
use super::watcher::{State, Watcher};
use super::{Adopted, DECODE_SLICE, EVENTS, READ_PHASE, SPIN, TICK, WAKE};

/// The thread's state: every adopted socket, by its token.
pub struct Reader {
    poll: Poll,
    adopted: mpsc::Receiver<Adopted>,
    stats: Arc<Stats>,
    stop: CancellationToken,
    watchers: Vec<Option<Watcher>>,
    free: Vec<usize>,
    /// Spectators waiting to list the games again, soonest first.
    backoff: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl Reader {
    pub(super) fn new(
        poll: Poll,
        adopted: mpsc::Receiver<Adopted>,
        stats: Arc<Stats>,
        stop: CancellationToken,
    ) -> Reader {
        Reader {
            poll,
            adopted,
            stats,
            stop,
            watchers: Vec::new(),
            free: Vec::new(),
            backoff: BinaryHeap::new(),
        }
    }

    /// Run on a thread of its own until the run stops.
    pub fn spawn(self, ctx: Arc<Ctx>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("lean-spectators".into())
            .spawn(move || self.run(&ctx))
    }

    fn run(mut self, ctx: &Ctx) {
        let mut events = Events::with_capacity(EVENTS);
        let mut buf = vec![0u8; 64 * 1024];
        let mut touched = Vec::with_capacity(EVENTS);
        let mut active_at: Option<Instant> = None;
        while !self.stop.is_cancelled() {
            let wait = match active_at {
                Some(at) if at.elapsed() < SPIN => Duration::ZERO,
                _ => TICK,
            };
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != ErrorKind::Interrupted {
                    self.stats.error("lean spectators: poll failed");
                    break;
                }
            }
            // Every socket that is ready, and every one that becomes ready meanwhile, is
            // read before any frame is decoded: each read is timed as it happens, so a
            // frame's time is when this client had it, not when the thread got round to
            // decoding it. (Ten thousand real spectators decode on ten thousand machines;
            // here one thread would otherwise make the last of them wait for all the
            // others' decoding.)
            let mut adopt = false;
            let reading_until = Instant::now() + READ_PHASE;
            let mut last_read = Instant::now();
            loop {
                adopt |= self.read_events(&events, &mut buf, &mut touched);
                let now = Instant::now();
                if !events.is_empty() {
                    last_read = now;
                }
                // The phase ends when no socket has become ready for `SPIN`. This thread
                // reads faster than the server sends, so in the middle of a delivery it
                // often finds nothing ready: that is not the delivery's end. Ending the
                // phase there would decode between reads, and arrivals waiting for it would
                // be stamped later than they came.
                if touched.is_empty() || now >= reading_until || now - last_read >= SPIN {
                    break;
                }
                if self.poll.poll(&mut events, Some(Duration::ZERO)).is_err() {
                    break;
                }
            }
            if !touched.is_empty() {
                active_at = Some(Instant::now());
            }
            // Decoding gives way to reading: every `DECODE_SLICE` spectators it reads the
            // sockets that have become ready meanwhile, so that no arrival waits for more
            // than a slice of decoding (a read phase may end at `READ_PHASE` in the middle
            // of a delivery, and ten thousand spectators' frames take ~100 ms to decode).
            let mut decoded = 0;
            while decoded < touched.len() {
                self.handle(touched[decoded], ctx);
                decoded += 1;
                if decoded % DECODE_SLICE == 0
                    && self.poll.poll(&mut events, Some(Duration::ZERO)).is_ok()
                {
                    adopt |= self.read_events(&events, &mut buf, &mut touched);
                }
            }
            touched.clear();
            if adopt {
                self.adopt_all();
            }
            let now = Instant::now();
            while let Some(&Reverse((at, slot))) = self.backoff.peek() {
                if at > now {
                    break;
                }
                self.backoff.pop();
                // Only a spectator still waiting: the slot may have been reused since.
                self.step(slot, |w| match w.state {
                    State::Waiting => w.list(),
                    _ => Ok(()),
                });
            }
        }
        for slot in 0..self.watchers.len() {
            if let Some(watcher) = self.watchers[slot].as_mut() {
                // A polite close; the socket goes either way.
                let _ = watcher.send_frame(OP_CLOSE, &1000u16.to_be_bytes());
                self.remove(slot);
            }
        }
    }

    fn adopt_all(&mut self) {
        while let Ok(adopted) = self.adopted.try_recv() {
            let slot = self.free.pop().unwrap_or_else(|| {
                self.watchers.push(None);
                self.watchers.len() - 1
            });
            let mut stream = TcpStream::from_std(adopted.stream);
            if self
                .poll
                .registry()
                .register(&mut stream, Token(slot), Interest::READABLE)
                .is_err()
            {
                self.stats.error("spectator adopt: register");
                self.stats.spectator_out();
                self.free.push(slot);
                continue;
            }
            self.watchers[slot] = Some(Watcher {
                index: adopted.index,
                stream,
                pending: Vec::new(),
                reads: VecDeque::new(),
                ended: None,
                touched: false,
                next_id: adopted.next_id,
                state: State::Idle,
                seq: 0,
                watching: None,
                stats: self.stats.clone(),
            });
            self.step(slot, |w| w.list());
        }
    }

    /// Reads the sockets `events` says are ready; each one newly waiting to be handled
    /// goes on `touched`. Returns whether the adopt signal was among them.
    fn read_events(&mut self, events: &Events, buf: &mut [u8], touched: &mut Vec<usize>) -> bool {
        let mut adopt = false;
        for event in events.iter() {
            match event.token() {
                WAKE => adopt = true,
                Token(slot) => {
                    if self.read_ready(slot, buf) {
                        touched.push(slot);
                    }
                }
            }
        }
        adopt
    }

    /// Read everything the socket holds (readiness is edge-triggered) into its buffer,
    /// noting when each read was and whether the socket ended. Returns whether the socket
    /// is newly waiting to be handled.
    fn read_ready(&mut self, slot: usize, buf: &mut [u8]) -> bool {
        let Some(watcher) = self.watchers.get_mut(slot).and_then(Option::as_mut) else {
            return false;
        };
        while watcher.ended.is_none() {
            match watcher.stream.read(buf) {
                Ok(0) => watcher.ended = Some("spectating: connection closed"),
                Ok(n) => {
                    watcher.pending.extend_from_slice(&buf[..n]);
                    watcher
                        .reads
                        .push_back((watcher.pending.len(), Instant::now()));
                    if n < buf.len() {
                        // The socket held less than the buffer: it is empty now, and
                        // whatever comes later makes it ready again (readiness is
                        // signalled on every arrival). Not asking again saves a `read`
                        // that would say so, half of this thread's calls in a fan-out.
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => watcher.ended = Some("spectating: connection closed"),
            }
        }
        !std::mem::replace(&mut watcher.touched, true)
    }

    /// Handle the frames the socket's reads brought, then its end if it ended.
    fn handle(&mut self, slot: usize, ctx: &Ctx) {
        let Some(watcher) = self.watchers.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        watcher.touched = false;
        let ended = watcher.ended;
        let outcome = watcher
            .handle_frames(ctx)
            .and_then(|()| ended.map_or(Ok(()), Err));
        match outcome {
            Ok(()) => {
                if let State::Backoff(pause) = watcher.state {
                    let at = Instant::now() + jittered(pause);
                    self.backoff.push(Reverse((at, slot)));
                    watcher.enter(State::Waiting);
                }
            }
            Err(kind) => {
                if !self.stop.is_cancelled() {
                    self.stats.error(kind);
                }
                self.remove(slot);
            }
        }
    }

    /// Run `action` on the spectator in `slot`, dropping it if that fails.
    fn step(&mut self, slot: usize, action: impl FnOnce(&mut Watcher) -> Result<(), &'static str>) {
        let Some(watcher) = self.watchers.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if let Err(kind) = action(watcher) {
            self.stats.error(kind);
            self.remove(slot);
        }
    }

    /// Drop the spectator in `slot` (its `watching` gauge goes down with it).
    fn remove(&mut self, slot: usize) {
        if let Some(mut watcher) = self.watchers[slot].take() {
            let _ = self.poll.registry().deregister(&mut watcher.stream);
            self.stats.spectator_out();
            self.free.push(slot);
        }
    }
}
