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
//!
//! - `reader`: the thread: one mio poll over every adopted socket, reading apart from
//!   decoding.
//! - `watcher`: one spectator's cycle of list, watch and follow.
//! - `frame`: the WebSocket frames it parses and writes.

mod frame;
mod reader;
mod watcher;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use elementals_client::protocol::messages::RequestId;
use mio::{Poll, Token, Waker};
use tokio_util::sync::CancellationToken;

use crate::conn::{Conn, ConnError};
use crate::stats::Stats;

pub use frame::parse_frame;
use reader::Reader;

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
        let reader = Reader::new(poll, adopted, stats, stop);
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
