//! Lean spectators (`--lean-spectators`): every spectator socket read by one thread that
//! polls them all, instead of a task per spectator.
//!
//! A spectator still connects, says `hello` and signs in as a guest through [`Conn`] like
//! any other; then its socket is handed to this thread, which lists the live games,
//! watches one, follows its events and times each `round_result` exactly as
//! `spectator.rs` does, picking another game when one ends. What it leaves out is the
//! per-socket machinery: with a tokio task and a tungstenite stream per spectator, the
//! load generator spends ~15 µs of CPU per frame received, so 10,000 spectators take
//! ~150 ms of one core to read one event, on the cores it shares with the server, and
//! the fan-out benchmark would measure the generator. Here a frame costs a
//! `read` of whatever the socket holds, a header parse and a MessagePack decode.
//!
//! Reading and decoding are apart: while sockets keep becoming ready (a fan-out under
//! way) the thread only reads them, timing each read, and decodes afterwards, timing each
//! frame by the read that brought it. Ten thousand real spectators decode on ten thousand
//! machines; decoding in between reads here would make the last of them wait for everyone
//! else's decoding.
//!
//! It is a real WebSocket client all the same: it masks what it sends, answers pings,
//! refuses masked or fragmented server frames, checks every event's number and asks for
//! a fresh snapshot on a gap, as the protocol says a spectator that fell behind must.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use elementals_client::protocol::messages::{GameId, RequestId};
use elementals_client::protocol::wire::{self, MAX_SERVER_MESSAGE_BYTES};
use elementals_client::protocol::{ClientMsg, ErrorCode, ServerMsg};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::conn::{reply_id, Conn, ConnError};
use crate::ctx::{jittered, Ctx};
use crate::spectator::{GAME_OVER_LINGER, NO_GAME_BACKOFF};
use crate::stats::{Gauge, Stats};

/// The token that wakes the thread to adopt new sockets.
const WAKE: Token = Token(usize::MAX);

/// Readiness events taken per wait: enough for every spectator of a fan-out run at once.
const EVENTS: usize = 16 * 1024;

/// The longest the thread reads before decoding what it has read (it stops sooner when no
/// socket has become ready for `SPIN`).
const READ_PHASE: Duration = Duration::from_millis(250);

/// How long the thread keeps looking for readiness without sleeping after it last read
/// something. On loopback a send completes the receiving side too: the server's `send` to
/// a socket whose reader is asleep pays for waking it (in this virtual machine, an
/// interrupt to the other core). Ten thousand real spectators wake on their own machines,
/// so a reader that sleeps between the server's sends of one delivery charges the server
/// a cost it does not have (last spectator p50 ~15 % higher in two alternating pairs). It
/// spins for at most this long after a read, so only while a delivery is under way.
pub const SPIN: Duration = Duration::from_millis(2);

/// Spectators decoded between two looks for sockets that have become ready.
const DECODE_SLICE: usize = 32;

/// The longest the thread sleeps without looking at the stop signal and the back-offs.
const TICK: Duration = Duration::from_millis(50);

/// The handle the spectator tasks use to hand their sockets over.
pub struct LeanSpectators {
    adopt: mpsc::Sender<Adopted>,
    waker: Arc<Waker>,
}

/// A signed-in spectator's socket and the next request id it may use.
struct Adopted {
    index: u64,
    stream: std::net::TcpStream,
    next_id: RequestId,
}

impl LeanSpectators {
    /// Start the thread; it runs until `stop` is cancelled and every socket is closed.
    pub fn start(
        stats: Arc<Stats>,
        stop: CancellationToken,
    ) -> std::io::Result<(LeanSpectators, Reader)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (adopt, adopted) = mpsc::channel();
        let reader = Reader {
            poll,
            adopted,
            stats,
            stop,
            watchers: Vec::new(),
            free: Vec::new(),
            backoff: BinaryHeap::new(),
        };
        Ok((LeanSpectators { adopt, waker }, reader))
    }

    /// Hand a signed-in spectator's connection to the thread.
    pub fn adopt(&self, index: u64, conn: Conn) -> Result<(), ConnError> {
        let (stream, next_id) = conn.into_std()?;
        self.adopt
            .send(Adopted {
                index,
                stream,
                next_id,
            })
            .map_err(|_| ConnError::Closed)?;
        self.waker.wake().map_err(|_| ConnError::Closed)
    }
}

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

/// Where one spectator is in its cycle of list, watch, follow.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Just adopted.
    Idle,
    /// `list_games` sent with this id.
    Listing(RequestId),
    /// To be queued for another listing after about this long (no game was live, or
    /// the one watched ended).
    Backoff(Duration),
    /// Queued for another listing.
    Waiting,
    /// `watch` or `sync` sent with this id, for this game.
    Joining(RequestId, GameId),
    /// Following this game's events.
    Watching(GameId),
}

struct Watcher {
    index: u64,
    stream: TcpStream,
    /// Bytes read but not yet a whole frame.
    pending: Vec<u8>,
    /// For each read whose bytes are still in `pending`: where they end, and when.
    reads: VecDeque<(usize, Instant)>,
    /// Why the socket ended, once it has (handled after the frames before it).
    ended: Option<&'static str>,
    /// Read and waiting to be handled.
    touched: bool,
    next_id: RequestId,
    state: State,
    /// The last event number applied in the watched game.
    seq: u64,
    /// Counts this spectator in `watching` while its state is `Watching`.
    watching: Option<Gauge>,
    stats: Arc<Stats>,
}

const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// One whole frame at the front of a buffer: its opcode, where its payload lies and how
/// many bytes it takes.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub opcode: u8,
    pub payload: std::ops::Range<usize>,
    pub len: usize,
}

/// The frame at the front of `buf`: `Ok(None)` until it has all arrived.
pub fn parse_frame(buf: &[u8]) -> Result<Option<Frame>, &'static str> {
    let [first, second, ..] = *buf else {
        return Ok(None);
    };
    if first & 0x80 == 0 || first & 0x0F == 0 {
        return Err("spectating: fragmented server frame");
    }
    if second & 0x80 != 0 {
        return Err("spectating: masked server frame");
    }
    let (header, size) = match second & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (4, u16::from_be_bytes([b[0], b[1]]) as u64),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => (10, u64::from_be_bytes(b.try_into().expect("8 bytes"))),
            None => return Ok(None),
        },
        n => (2, n as u64),
    };
    if size > MAX_SERVER_MESSAGE_BYTES as u64 {
        return Err("spectating: server frame too large");
    }
    let len = header + size as usize;
    if buf.len() < len {
        return Ok(None);
    }
    Ok(Some(Frame {
        opcode: first & 0x0F,
        payload: header..len,
        len,
    }))
}

/// A masked client frame.
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(payload.len() + 8);
    frame.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let mask: [u8; 4] = rand::random();
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

impl Watcher {
    fn handle_frames(&mut self, ctx: &Ctx) -> Result<(), &'static str> {
        let mut at = 0;
        while let Some(frame) = parse_frame(&self.pending[at..])? {
            let payload = at + frame.payload.start..at + frame.payload.end;
            at += frame.len;
            // The read that brought the frame's last byte.
            let read_at = self
                .reads
                .iter()
                .find(|(end, _)| *end >= at)
                .map_or_else(Instant::now, |(_, when)| *when);
            match frame.opcode {
                OP_BINARY => {
                    self.stats.frames_in.fetch_add(1, Relaxed);
                    let msg = match wire::decode_server(&self.pending[payload]) {
                        Ok(msg) => msg,
                        Err(_) => {
                            self.stats.error("decode: undecodable server frame");
                            continue;
                        }
                    };
                    self.on_message(msg, ctx, read_at)?;
                }
                OP_PING => {
                    let pong = client_frame(OP_PONG, &self.pending[payload]);
                    self.write(&pong)?;
                }
                OP_CLOSE => return Err("spectating: connection closed"),
                OP_PONG => {}
                _ => return Err("spectating: unexpected frame"),
            }
        }
        self.pending.drain(..at);
        self.reads.retain_mut(|(end, _)| {
            *end = end.saturating_sub(at);
            *end > 0
        });
        Ok(())
    }

    fn on_message(
        &mut self,
        msg: ServerMsg,
        ctx: &Ctx,
        read_at: Instant,
    ) -> Result<(), &'static str> {
        match (self.state, reply_id(&msg)) {
            (State::Listing(id), Some(got)) if got == id => {
                let ServerMsg::LiveGames { games, .. } = msg else {
                    return Err("spectating: unexpected reply");
                };
                if games.is_empty() {
                    self.enter(State::Backoff(NO_GAME_BACKOFF));
                    return Ok(());
                }
                let game_id = games[(self.index as usize) % games.len()].game_id;
                self.join(game_id, false)
            }
            (State::Joining(id, game_id), Some(got)) if got == id => match msg {
                ServerMsg::Snapshot { snapshot, .. } if snapshot.game.game_id == game_id => {
                    self.seq = snapshot.seq;
                    self.enter(State::Watching(game_id));
                    Ok(())
                }
                // It ended between the list and the watch: choose again.
                ServerMsg::Error {
                    code: ErrorCode::UnknownGame,
                    ..
                } => self.list(),
                ServerMsg::Error { .. } => Err("spectating: server error"),
                _ => Err("spectating: unexpected reply"),
            },
            (_, Some(_)) => Err("spectating: unexpected reply"),
            (State::Watching(game_id), None) => self.on_event(game_id, msg, ctx, read_at),
            // Pushes for a game no longer followed, or before one is.
            (_, None) => Ok(()),
        }
    }

    fn on_event(
        &mut self,
        game_id: GameId,
        msg: ServerMsg,
        ctx: &Ctx,
        read_at: Instant,
    ) -> Result<(), &'static str> {
        let Some(seq) = msg.seq() else {
            return Ok(());
        };
        if seq <= self.seq {
            return Ok(());
        }
        if seq > self.seq + 1 {
            // Allowed by the protocol for a spectator that fell behind.
            self.stats.spectator_resyncs.fetch_add(1, Relaxed);
            return self.join(game_id, true);
        }
        self.seq = seq;
        match msg {
            ServerMsg::RoundResult {
                game_id, record, ..
            } => {
                if let Some(sent) = ctx.reveals.last(game_id, record.round) {
                    let delay = read_at.saturating_duration_since(sent);
                    self.stats.spectator_result.record(delay);
                    ctx.fanout
                        .arrived(game_id, record.round, sent, delay, &ctx.reveals);
                }
                Ok(())
            }
            ServerMsg::GameOver { .. } => {
                self.enter(State::Backoff(GAME_OVER_LINGER));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Move to `state`, keeping the `watching` gauge in step with it.
    fn enter(&mut self, state: State) {
        self.state = state;
        match state {
            State::Watching(_) => {
                if self.watching.is_none() {
                    self.watching = Some(Gauge::up(self.stats.clone(), |s| &s.watching));
                }
            }
            _ => self.watching = None,
        }
    }

    fn list(&mut self) -> Result<(), &'static str> {
        let id = self.request(|id| ClientMsg::ListGames { id })?;
        self.enter(State::Listing(id));
        Ok(())
    }

    /// `watch` the game, or `sync` it after a gap.
    fn join(&mut self, game_id: GameId, sync: bool) -> Result<(), &'static str> {
        let id = self.request(|id| match sync {
            true => ClientMsg::Sync { id, game_id },
            false => ClientMsg::Watch { id, game_id },
        })?;
        self.enter(State::Joining(id, game_id));
        Ok(())
    }

    fn request(
        &mut self,
        build: impl FnOnce(RequestId) -> ClientMsg,
    ) -> Result<RequestId, &'static str> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let frame = client_frame(OP_BINARY, &wire::encode_client(&build(id)));
        self.write(&frame)?;
        self.stats.frames_out.fetch_add(1, Relaxed);
        Ok(id)
    }

    fn send_frame(&mut self, opcode: u8, payload: &[u8]) -> Result<(), &'static str> {
        let frame = client_frame(opcode, payload);
        self.write(&frame)
    }

    /// Frames sent are a few dozen bytes into a socket this client rarely writes to: one
    /// that does not fit at once is a broken connection, not back-pressure to wait out.
    fn write(&mut self, frame: &[u8]) -> Result<(), &'static str> {
        match self.stream.write(frame) {
            Ok(n) if n == frame.len() => Ok(()),
            Ok(_) | Err(_) => Err("spectating: send failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_parsed_whole_or_not_at_all() {
        let mut buf = vec![0x82, 3, 1, 2, 3, 0x89, 0];
        assert_eq!(
            parse_frame(&buf),
            Ok(Some(Frame {
                opcode: OP_BINARY,
                payload: 2..5,
                len: 5
            }))
        );
        assert_eq!(
            parse_frame(&buf[5..]),
            Ok(Some(Frame {
                opcode: OP_PING,
                payload: 2..2,
                len: 2
            }))
        );
        assert_eq!(parse_frame(&buf[..4]), Ok(None));
        assert_eq!(parse_frame(&buf[..1]), Ok(None));
        // A 300-byte payload: a 16-bit length.
        buf = vec![0x82, 126, 1, 44];
        assert_eq!(parse_frame(&buf), Ok(None));
        buf.resize(4 + 300, 7);
        assert_eq!(parse_frame(&buf).unwrap().unwrap().payload, 4..304);
    }

    #[test]
    fn frames_a_server_must_not_send_are_refused() {
        assert!(parse_frame(&[0x02, 1, 0]).is_err(), "not final");
        assert!(parse_frame(&[0x80, 1, 0]).is_err(), "a continuation");
        assert!(parse_frame(&[0x82, 0x81, 0, 0, 0, 0, 0]).is_err(), "masked");
        let huge = (MAX_SERVER_MESSAGE_BYTES as u64 + 1).to_be_bytes();
        let mut frame = vec![0x82, 127];
        frame.extend_from_slice(&huge);
        assert!(parse_frame(&frame).is_err(), "too large");
    }

    #[test]
    fn client_frames_are_masked_and_unmask_to_the_payload() {
        let payload: Vec<u8> = (0..200u8).collect();
        let frame = client_frame(OP_BINARY, &payload);
        assert_eq!(frame[0], 0x82);
        assert_eq!(frame[1], 0x80 | 126);
        assert_eq!(u16::from_be_bytes([frame[2], frame[3]]), 200);
        let mask = &frame[4..8];
        let unmasked: Vec<u8> = frame[8..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(unmasked, payload);
        let short = client_frame(OP_PONG, b"hi");
        assert_eq!(&short[..2], &[0x8A, 0x82]);
        assert_eq!(short.len(), 2 + 4 + 2);
    }
}
