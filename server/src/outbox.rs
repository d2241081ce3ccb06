//! Outboxes: how actors push frames to one connection's socket.
//!
//! Every connection owns one bounded queue of encoded frames, drained by its writer task.
//! Actors never wait on a connection: a send writes to the socket at once when nothing is
//! queued before it and the socket takes all of it (the common case: no task is woken),
//! and otherwise queues the frames for the writer, in order behind what is queued. A queue
//! that is full means the client stopped reading. What happens then is the sender's
//! choice: a game kills a player's connection (the player resynchronises on reconnect), a
//! game resynchronises or drops a spectator.
//!
//! Order: the socket's writing half lives in the outbox's `Link`, under its lock, with the
//! count of items queued and not yet written. A sender writes directly only under that
//! lock and only while the count is zero; the writer task takes the socket out while it
//! writes queued items (the count is then above zero, so nobody else writes) and gives it
//! back with the count lowered. So every byte goes out in the order it was sent.
//!
//! A frame is encoded once and its `Bytes` shared by every recipient; a delivery to many
//! connections is also framed once (`Framed`), and each send writes its part of the same
//! bytes. A connection that asked for batches in `hello` (PROTOCOL.md, "Batches") gets
//! each item of several messages as one frame, a MessagePack array of them.

use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::ws;

/// Frames a connection may have queued before it counts as not reading. Large enough to
/// absorb a burst (a snapshot plus a round's events), small enough to bound memory.
pub const OUTBOX_CAPACITY: usize = 256;

/// What a connection's writer task is asked to do.
///
/// No larger than a `Bytes` (32 bytes): the channel allocates a block of 32 of these for
/// every connection up front, idle or not. Close reasons are fixed strings for that reason
/// (a `String` made it 40 bytes), and everything but a single frame is in an enum of its
/// own: a `Bytes` has room for telling one other variant apart without a tag, not two.
#[derive(Debug)]
pub enum Outbound {
    Frame(Bytes),
    Other(Other),
}

#[derive(Debug)]
pub enum Other {
    /// `framed`'s frames from `from` on, in order: a game's events for one connection,
    /// queued as one item. The frames, and their framing, are shared by every recipient
    /// of the delivery (one reference count each).
    Framed { framed: Arc<Framed>, from: u32 },
    /// Send a close frame with this code and reason, then stop.
    Close { code: u16, reason: &'static str },
    /// Answer a client's ping with this payload.
    Pong(Box<[u8]>),
    /// Send a heartbeat ping.
    Ping,
    /// Bytes framed already, the rest of a direct write the socket took only part of.
    Rest(Box<[u8]>),
}

impl Outbound {
    /// The messages to send, in order (none for a close, a ping, a pong or a rest).
    pub fn frames(&self) -> &[Bytes] {
        match self {
            Outbound::Frame(frame) => std::slice::from_ref(frame),
            Outbound::Other(Other::Framed { framed, from }) => {
                &framed.frames[(*from as usize).min(framed.frames.len())..]
            }
            Outbound::Other(
                Other::Close { .. } | Other::Pong(_) | Other::Ping | Other::Rest(_),
            ) => &[],
        }
    }

    /// Appends the item to `buf` framed for the socket (a pong as a pong, a close as
    /// nothing; with `batch`, several messages as one frame holding their array); returns
    /// how many messages that is.
    pub fn encode_into(&self, buf: &mut Vec<u8>, batch: bool) -> usize {
        match self {
            Outbound::Frame(frame) => {
                ws::frame_into(buf, ws::opcode::BINARY, frame);
                1
            }
            Outbound::Other(Other::Framed { .. }) => {
                let frames = self.frames();
                match self.framed_bytes(batch) {
                    // Framed already: the bytes are copied as they are.
                    Some(bytes) => buf.extend_from_slice(bytes),
                    None => batch_into(buf, frames),
                }
                frames.len()
            }
            Outbound::Other(Other::Pong(payload)) => {
                ws::frame_into(buf, ws::opcode::PONG, payload);
                0
            }
            Outbound::Other(Other::Ping) => {
                ws::frame_into(buf, ws::opcode::PING, &[]);
                0
            }
            Outbound::Other(Other::Rest(bytes)) => {
                buf.extend_from_slice(bytes);
                0
            }
            Outbound::Other(Other::Close { .. }) => 0,
        }
    }

    /// The item's bytes as the socket takes them, if they are framed already: a `Framed`
    /// part, unless it is several messages for a connection that takes batches.
    pub fn framed_bytes(&self, batch: bool) -> Option<&[u8]> {
        match self {
            Outbound::Other(Other::Framed { framed, from }) => {
                let from = *from as usize;
                (!batch || framed.frames.len().saturating_sub(from) <= 1)
                    .then(|| framed.bytes_from(from))
            }
            _ => None,
        }
    }

    /// The close asked for, if that is what this is.
    pub fn close(&self) -> Option<(u16, &'static str)> {
        match self {
            Outbound::Other(Other::Close { code, reason }) => Some((*code, reason)),
            _ => None,
        }
    }
}

/// Appends `messages` as one frame holding their MessagePack array (PROTOCOL.md, "Batches").
fn batch_into(buf: &mut Vec<u8>, messages: &[Bytes]) {
    let mut head = [0u8; 5];
    let head = array_header(&mut head, messages.len());
    let len = head.len() + messages.iter().map(Bytes::len).sum::<usize>();
    buf.reserve(len + 10);
    buf.extend_from_slice(ws::Header::new(ws::opcode::BINARY, len).as_bytes());
    buf.extend_from_slice(head);
    for message in messages {
        buf.extend_from_slice(message);
    }
}

/// A MessagePack array header for `n` elements, written into `out`.
fn array_header(out: &mut [u8; 5], n: usize) -> &[u8] {
    if n < 16 {
        out[0] = 0x90 | n as u8;
        &out[..1]
    } else if let Ok(n) = u16::try_from(n) {
        out[0] = 0xdc;
        out[1..3].copy_from_slice(&n.to_be_bytes());
        &out[..3]
    } else {
        out[0] = 0xdd;
        out[1..5].copy_from_slice(&(n as u32).to_be_bytes());
        &out[..5]
    }
}

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    Full,
    Closed,
}

/// A cheap, cloneable sender to one connection.
#[derive(Debug, Clone)]
pub struct Outbox {
    conn_id: u64,
    tx: mpsc::Sender<Outbound>,
    kill: CancellationToken,
    shared: Arc<Shared>,
}

/// What every clone of a connection's outbox shares.
#[derive(Debug, Default)]
struct Shared {
    flush: AtomicBool,
    /// The client asked for batches in `hello`.
    batch: AtomicBool,
    link: Mutex<Link>,
}

/// The socket's writing half and what decides who may write to it now (see the module's
/// notes on order).
#[derive(Debug, Default)]
struct Link {
    /// The writing half, while no writer task has it out.
    socket: Option<OwnedWriteHalf>,
    /// Items queued and not yet written: while there are any, a send queues behind them.
    queued: usize,
    /// Sends may write directly: a socket is attached, and the connection is neither
    /// killed nor closing.
    open: bool,
    /// Where messages written directly are counted (`messages_out`).
    metrics: Option<Arc<Metrics>>,
}

impl Outbox {
    /// A new outbox and the receiver its writer task drains. Until a socket is attached
    /// (`attach`), everything sent is queued.
    pub fn new(conn_id: u64, capacity: usize) -> (Outbox, mpsc::Receiver<Outbound>) {
        let (tx, rx) = mpsc::channel(capacity);
        let outbox = Outbox {
            conn_id,
            tx,
            kill: CancellationToken::new(),
            shared: Arc::default(),
        };
        (outbox, rx)
    }

    /// `new`, for a connection that is also killed when `parent` is cancelled (the
    /// server's shutdown): its tasks then wait on one token of their own, whose lock
    /// nothing else takes, not also on the token every connection shares.
    pub fn within(
        conn_id: u64,
        capacity: usize,
        parent: &CancellationToken,
    ) -> (Outbox, mpsc::Receiver<Outbound>) {
        let (mut outbox, rx) = Outbox::new(conn_id, capacity);
        outbox.kill = parent.child_token();
        (outbox, rx)
    }

    /// Gives the outbox its connection's socket: from now on a send that finds nothing
    /// queued writes to it at once, counting the messages in `metrics`.
    pub fn attach(&self, socket: OwnedWriteHalf, metrics: Arc<Metrics>) {
        let mut link = self.link();
        link.socket = Some(socket);
        link.open = true;
        link.metrics = Some(metrics);
    }

    pub fn conn_id(&self) -> u64 {
        self.conn_id
    }

    /// Fires when the connection must be dropped (it fell behind, or was superseded).
    pub fn kill_token(&self) -> CancellationToken {
        self.kill.clone()
    }

    /// The client asked for batches (several messages as one frame) in `hello`.
    pub fn set_batch(&self, batch: bool) {
        self.shared.batch.store(batch, Relaxed);
    }

    pub fn batch(&self) -> bool {
        self.shared.batch.load(Relaxed)
    }

    pub fn send(&self, frame: Bytes) -> Result<(), SendError> {
        self.queue(Outbound::Frame(frame))
    }

    /// Queues `framed`'s frames from `from` on as one item (nothing when there are none).
    pub fn send_framed(&self, framed: &Arc<Framed>, from: usize) -> Result<(), SendError> {
        match &framed.frames[from.min(framed.frames.len())..] {
            [] => Ok(()),
            [one] if framed.frames.len() == 1 => self.queue(Outbound::Frame(one.clone())),
            _ => self.queue(Outbound::Other(Other::Framed {
                framed: Arc::clone(framed),
                from: u32::try_from(from).expect("a backlog of fewer than 2^32 frames"),
            })),
        }
    }

    /// Asks the writer to answer a client's ping.
    pub fn pong(&self, payload: &[u8]) -> Result<(), SendError> {
        self.queue(Outbound::Other(Other::Pong(payload.into())))
    }

    /// Sends a heartbeat ping, in order with everything else.
    pub fn ping(&self) -> Result<(), SendError> {
        self.queue(Outbound::Other(Other::Ping))
    }

    /// Writes `out` to the socket now if nothing is queued before it and the socket takes
    /// it, else puts it (or the part the socket did not take) on the queue for the writer.
    fn queue(&self, mut out: Outbound) -> Result<(), SendError> {
        let mut link = self.link();
        if link.open && link.queued == 0 && out.close().is_none() {
            if let Some(socket) = &link.socket {
                let batch = self.batch();
                match write_now(socket, &out, batch) {
                    Ok(Written::All(messages)) => {
                        count_out(&link, messages);
                        return Ok(());
                    }
                    Ok(Written::Part(messages, rest)) => {
                        count_out(&link, messages);
                        out = Outbound::Other(Other::Rest(rest));
                    }
                    Err(_) => {
                        // The socket failed: the writer finds out too, and ends.
                        link.open = false;
                        drop(link);
                        self.kill.cancel();
                        return Err(SendError::Closed);
                    }
                }
            }
        }
        self.tx.try_send(out).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => SendError::Full,
            mpsc::error::TrySendError::Closed(_) => SendError::Closed,
        })?;
        link.queued += 1;
        Ok(())
    }

    fn link(&self) -> MutexGuard<'_, Link> {
        self.shared
            .link
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer task: takes the socket out to write queued items (nobody else writes
    /// while any is queued). `None` once the writer gave it up, or without a socket.
    pub(crate) fn take_socket(&self) -> Option<OwnedWriteHalf> {
        self.link().socket.take()
    }

    /// The writer task: gives the socket back after writing `written` queued items.
    pub(crate) fn give_back(&self, socket: OwnedWriteHalf, written: usize) {
        let mut link = self.link();
        link.socket = Some(socket);
        link.queued = link.queued.saturating_sub(written);
    }

    /// The writer task: the connection is closing; nothing more is written directly, and
    /// the socket is the writer's for its last frames.
    pub(crate) fn detach(&self) -> Option<OwnedWriteHalf> {
        let mut link = self.link();
        link.open = false;
        link.socket.take()
    }

    /// Encodes and queues one message for this connection alone.
    pub fn send_msg(&self, msg: &ServerMsg) -> Result<(), SendError> {
        self.send(Bytes::from(wire::encode(msg)))
    }

    /// `send`, killing the connection if it does not fit: for a reply the client waits on.
    pub fn send_or_kill(&self, frame: Bytes) {
        if self.send(frame) == Err(SendError::Full) {
            self.kill();
        }
    }

    /// `send_msg`, killing the connection if it does not fit: for replies, which a client
    /// that stopped reading cannot be left without.
    pub fn send_msg_or_kill(&self, msg: &ServerMsg) {
        if self.send_msg(msg) == Err(SendError::Full) {
            self.kill();
        }
    }

    /// `send_framed`, and if the client is not keeping up (its queue is full), kills its
    /// connection. For players, whose every frame matters: they get a full snapshot when
    /// they come back.
    pub fn send_framed_or_kill(&self, framed: &Arc<Framed>, from: usize) {
        if self.send_framed(framed, from) == Err(SendError::Full) {
            self.kill();
        }
    }

    /// Ask the writer to close the connection with a close code.
    pub fn close(&self, code: u16, reason: &'static str) {
        // Queued, so that nothing sent after it goes out before it.
        let close = Outbound::Other(Other::Close { code, reason });
        if self.queue(close).is_err() {
            self.kill();
        }
    }

    pub fn kill(&self) {
        // Nothing more is written directly: what is queued is dropped, or flushed by the
        // writer alone.
        self.link().open = false;
        self.kill.cancel();
    }

    /// Stop the connection after the writer has sent what is already queued.
    pub fn kill_after_flush(&self) {
        self.shared.flush.store(true, Relaxed);
        self.kill();
    }

    /// Whether the kill asked for queued frames to be sent first.
    pub fn flush_requested(&self) -> bool {
        self.shared.flush.load(Relaxed)
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.kill.is_cancelled()
    }
}

/// What a direct write took: all of the item (so many messages), or part of it, and the
/// framed bytes left over.
enum Written {
    All(usize),
    Part(usize, Box<[u8]>),
}

/// Writes `out` to `socket` without waiting. A frame goes as its header and its shared
/// payload, and a framed part as the shared bytes, without a copy.
fn write_now(socket: &OwnedWriteHalf, out: &Outbound, batch: bool) -> io::Result<Written> {
    let mut own = Vec::new();
    let mut header = None;
    let mut parts = [IoSlice::new(&[]), IoSlice::new(&[])];
    let messages = match (out, out.framed_bytes(batch)) {
        (Outbound::Frame(frame), _) => {
            let header = header.insert(ws::Header::new(ws::opcode::BINARY, frame.len()));
            parts = [IoSlice::new(header.as_bytes()), IoSlice::new(frame)];
            1
        }
        (_, Some(framed)) => {
            parts[0] = IoSlice::new(framed);
            out.frames().len()
        }
        (_, None) => {
            let messages = out.encode_into(&mut own, batch);
            parts[0] = IoSlice::new(&own);
            messages
        }
    };
    let len = parts[0].len() + parts[1].len();
    let wrote = match socket.try_write_vectored(&parts) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(e),
    };
    if wrote == len {
        return Ok(Written::All(messages));
    }
    let mut all = Vec::with_capacity(len);
    for part in &parts {
        all.extend_from_slice(part);
    }
    Ok(Written::Part(messages, all[wrote..].into()))
}

fn count_out(link: &Link, messages: usize) {
    if let Some(metrics) = &link.metrics {
        metrics.messages_out.fetch_add(messages as u64, Relaxed);
    }
}

/// Frames for many connections, framed once (`ws::frame_into`) into one run of bytes: each
/// connection's writer copies its part, from any frame on, into its write as it is.
#[derive(Debug)]
pub struct Framed {
    frames: Arc<[Bytes]>,
    bytes: Vec<u8>,
    /// Where each frame's header starts in `bytes`.
    starts: Vec<usize>,
}

impl Framed {
    pub fn new(frames: Arc<[Bytes]>) -> Framed {
        let mut bytes = Vec::with_capacity(frames.iter().map(|f| f.len() + 10).sum());
        let mut starts = Vec::with_capacity(frames.len());
        for frame in frames.iter() {
            starts.push(bytes.len());
            ws::frame_into(&mut bytes, ws::opcode::BINARY, frame);
        }
        Framed {
            frames,
            bytes,
            starts,
        }
    }

    /// The frames, as they were handed over.
    pub fn frames(&self) -> &[Bytes] {
        &self.frames
    }

    /// The framed bytes of `frames[from..]`.
    fn bytes_from(&self, from: usize) -> &[u8] {
        let start = self.starts.get(from).copied().unwrap_or(self.bytes.len());
        &self.bytes[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outbound_is_no_larger_than_its_frame() {
        assert_eq!(
            std::mem::size_of::<Outbound>(),
            std::mem::size_of::<Bytes>()
        );
    }

    #[test]
    fn a_delivery_is_framed_once_and_each_connection_gets_its_part_of_the_same_frames() {
        let frames: Arc<[Bytes]> = Arc::from([
            Bytes::from_static(b"one"),
            Bytes::from(vec![7u8; 300]),
            Bytes::from_static(b"three"),
        ]);
        let framed = Arc::new(Framed::new(Arc::clone(&frames)));
        let (whole, mut whole_rx) = Outbox::new(1, 4);
        let (part, mut part_rx) = Outbox::new(2, 4);
        whole.send_framed(&framed, 0).unwrap();
        part.send_framed(&framed, 1).unwrap();
        part.send_framed(&framed, 3).unwrap();
        let (whole_item, part_item) = (whole_rx.try_recv().unwrap(), part_rx.try_recv().unwrap());
        assert!(part_rx.try_recv().is_err(), "nothing queued for no frames");
        // What a writer sends is each frame framed on its own, from the frame asked for.
        let expect = |from: usize| {
            let mut buf = Vec::new();
            for frame in &frames[from..] {
                ws::frame_into(&mut buf, ws::opcode::BINARY, frame);
            }
            buf
        };
        let (mut got_whole, mut got_part) = (Vec::new(), Vec::new());
        assert_eq!(whole_item.encode_into(&mut got_whole, false), 3);
        assert_eq!(part_item.encode_into(&mut got_part, false), 2);
        assert_eq!(got_whole, expect(0));
        assert_eq!(got_part, expect(1));
        // A writer with nothing else queued writes those same bytes without a copy.
        assert_eq!(whole_item.framed_bytes(false), Some(&expect(0)[..]));
        assert_eq!(part_item.framed_bytes(false), Some(&expect(1)[..]));
        // The payloads are the delivery's own, not copies.
        assert_eq!(
            whole_item.frames()[1].as_ptr(),
            part_item.frames()[0].as_ptr()
        );
    }

    #[test]
    fn for_a_connection_that_takes_batches_several_messages_are_one_frame_of_their_array() {
        let frames: Arc<[Bytes]> = Arc::from([
            Bytes::from(wire::encode(&ServerMsg::Ok { id: 1 })),
            Bytes::from(vec![0xc0; 200]),
            Bytes::from(wire::encode(&ServerMsg::Pong { id: 2 })),
        ]);
        let framed = Arc::new(Framed::new(Arc::clone(&frames)));
        let (outbox, mut rx) = Outbox::new(1, 4);
        outbox.set_batch(true);
        outbox.send_framed(&framed, 0).unwrap();
        outbox.send_framed(&framed, 2).unwrap();
        let (all, last) = (rx.try_recv().unwrap(), rx.try_recv().unwrap());
        assert_eq!(all.framed_bytes(true), None, "several: framed anew");
        let mut got = Vec::new();
        assert_eq!(all.encode_into(&mut got, true), 3);
        let mut payload = vec![0x93];
        for frame in frames.iter() {
            payload.extend_from_slice(frame);
        }
        let mut expect = Vec::new();
        ws::frame_into(&mut expect, ws::opcode::BINARY, &payload);
        assert_eq!(got, expect);
        // One message alone is the message, as to any connection.
        let mut alone = Vec::new();
        ws::frame_into(&mut alone, ws::opcode::BINARY, &frames[2]);
        assert_eq!(last.framed_bytes(true), Some(&alone[..]));
        // The array's header for 16 and more.
        let mut head = [0u8; 5];
        assert_eq!(array_header(&mut head, 16), [0xdc, 0, 16]);
        assert_eq!(array_header(&mut head, 70_000), [0xdd, 0, 1, 0x11, 0x70]);
    }

    /// What a send writes directly reaches the socket with no writer task; while an item
    /// is queued (the writer has the socket out, or has not written it yet), later sends
    /// queue behind it rather than overtake it.
    #[tokio::test]
    async fn a_send_writes_directly_only_when_nothing_is_queued_before_it() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let connecting = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, server) = tokio::join!(connecting, listener.accept());
        let mut client = client.unwrap();
        let (_read, write) = server.unwrap().0.into_split();
        let (outbox, mut rx) = Outbox::new(1, 8);
        let metrics = Arc::new(Metrics::default());
        outbox.attach(write, Arc::clone(&metrics));
        let framed = |bytes: &[u8]| {
            let mut buf = Vec::new();
            ws::frame_into(&mut buf, ws::opcode::BINARY, bytes);
            buf
        };
        async fn read_n(client: &mut tokio::net::TcpStream, n: usize) -> Vec<u8> {
            let mut got = vec![0u8; n];
            client.read_exact(&mut got).await.unwrap();
            got
        }

        outbox.send(Bytes::from_static(b"now")).unwrap();
        assert!(rx.try_recv().is_err(), "written, not queued");
        assert_eq!(read_n(&mut client, 5).await, framed(b"now"));
        assert_eq!(metrics.messages_out.load(Relaxed), 1);

        // The writer has the socket out: a send queues, and so does the next, behind it.
        let socket = outbox.take_socket().unwrap();
        outbox.send(Bytes::from_static(b"one")).unwrap();
        outbox.give_back(socket, 0);
        outbox.send(Bytes::from_static(b"two")).unwrap();
        let queued: Vec<_> = [rx.try_recv().unwrap(), rx.try_recv().unwrap()]
            .iter()
            .map(|out| out.frames()[0].clone())
            .collect();
        assert_eq!(queued, ["one", "two"]);
        // Written by the writer: the next send goes directly again.
        let mut socket = outbox.take_socket().unwrap();
        {
            use tokio::io::AsyncWriteExt;
            socket
                .write_all(&[framed(b"one"), framed(b"two")].concat())
                .await
                .unwrap();
        }
        outbox.give_back(socket, 2);
        outbox.send(Bytes::from_static(b"three")).unwrap();
        assert!(rx.try_recv().is_err());
        assert_eq!(
            read_n(&mut client, 17).await,
            [framed(b"one"), framed(b"two"), framed(b"three")].concat()
        );

        // Killed: nothing more is written directly (a flush is the writer's alone).
        outbox.kill();
        outbox.send(Bytes::from_static(b"late")).unwrap();
        assert!(
            rx.try_recv().is_ok(),
            "queued for the writer to drop or flush"
        );
    }

    #[test]
    fn a_full_queue_is_reported_and_killing_for_it_is_the_senders_choice() {
        let (outbox, _rx) = Outbox::new(3, 1);
        let framed = Arc::new(Framed::new(Arc::from([Bytes::from_static(b"x")])));
        outbox.send_framed(&framed, 0).unwrap();
        assert_eq!(outbox.send_framed(&framed, 0), Err(SendError::Full));
        assert!(!outbox.is_closed(), "a spectator's sender resyncs instead");
        outbox.send_framed_or_kill(&framed, 0);
        assert!(
            outbox.kill_token().is_cancelled(),
            "a player's connection is killed"
        );
    }

    #[test]
    fn an_outbox_within_the_shutdown_token_is_killed_by_it_alone() {
        let shutdown = CancellationToken::new();
        let (one, _one_rx) = Outbox::within(1, 4, &shutdown);
        let (two, _two_rx) = Outbox::within(2, 4, &shutdown);
        // A kill is the connection's own ...
        one.kill();
        assert!(one.is_closed());
        assert!(!two.is_closed() && !shutdown.is_cancelled());
        // ... and shutdown reaches every connection through its own token.
        shutdown.cancel();
        assert!(two.kill_token().is_cancelled());
        assert!(!two.flush_requested());
    }

    #[tokio::test]
    async fn a_close_is_queued_behind_the_frames() {
        let (outbox, mut rx) = Outbox::new(7, 4);
        outbox.send(Bytes::from_static(b"one")).unwrap();
        outbox.close(4000, "superseded");
        assert!(matches!(rx.recv().await, Some(Outbound::Frame(f)) if f == "one"));
        assert_eq!(rx.recv().await.unwrap().close(), Some((4000, "superseded")));
        assert!(!outbox.kill_token().is_cancelled());
    }
}
