//! Outboxes: how actors push frames to one connection's writer task.
//!
//! Every connection owns one bounded queue of encoded frames. Actors never wait on a
//! connection: they `try_send`, and a queue that is full means the client stopped
//! reading. What happens then is the sender's choice: a game kills a player's connection
//! (the player resynchronises on reconnect), a game resynchronises or drops a spectator.
//!
//! A game's events for a spectator need not wake the writer at all (`write_frames`). When
//! nothing is queued before them and the writer is not sending, the game writes them to the
//! socket itself, at once, if the socket takes them without waiting (`Link::write_now`);
//! only what the socket does not take at once goes through the queue. One round's result
//! then reaches ten thousand spectators as ten thousand writes from the game's own turns,
//! not ten thousand tasks woken to make them (BENCHMARKS.md, fan-out, server I). A game
//! writes its players' events the same way, with the reply to the move that caused them in
//! the same write: a round's moves wake no writer (BENCHMARKS.md, throughput, server T).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::net::TcpStream;
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
    /// `frames[from..]`, in order: a game's events for one spectator, queued as one item.
    /// The slice is shared by every spectator of the delivery (one reference count each),
    /// so a delivery of several events costs each spectator one push, not one per event.
    Frames { frames: Arc<[Bytes]>, from: u32 },
    /// Send a close frame with this code and reason, then stop.
    Close { code: u16, reason: &'static str },
    /// Answer a client's ping with this payload.
    Pong(Box<[u8]>),
    /// Finish sending what a sender wrote to the socket itself but the socket did not take
    /// at once (see `Link::write_now`).
    Flush,
}

impl Outbound {
    /// The frames to send, in order (none for a close).
    pub fn frames(&self) -> &[Bytes] {
        match self {
            Outbound::Frame(frame) => std::slice::from_ref(frame),
            Outbound::Other(Other::Frames { frames, from }) => &frames[*from as usize..],
            Outbound::Other(Other::Close { .. } | Other::Pong(_) | Other::Flush) => &[],
        }
    }

    /// Appends the item's frames to `buf`, framed for the socket (a pong as a pong, a close
    /// or a flush as nothing); returns how many messages that is (pongs not counted).
    pub fn encode_into(&self, buf: &mut Vec<u8>) -> usize {
        if let Outbound::Other(Other::Pong(payload)) = self {
            ws::frame_into(buf, ws::opcode::PONG, payload);
            return 0;
        }
        for frame in self.frames() {
            ws::frame_into(buf, ws::opcode::BINARY, frame);
        }
        self.frames().len()
    }

    /// The close asked for, if that is what this is.
    pub fn close(&self) -> Option<(u16, &'static str)> {
        match self {
            Outbound::Other(Other::Close { code, reason }) => Some((*code, reason)),
            _ => None,
        }
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
    flush: Arc<AtomicBool>,
    /// The socket itself, for writing without the queue (`None` in tests of actors alone).
    link: Option<Arc<Link>>,
}

impl Outbox {
    /// A new outbox, the receiver its writer task drains, and the token that fires when
    /// someone kills the connection.
    pub fn new(conn_id: u64, capacity: usize) -> (Outbox, mpsc::Receiver<Outbound>) {
        let (tx, rx) = mpsc::channel(capacity);
        let outbox = Outbox {
            conn_id,
            tx,
            kill: CancellationToken::new(),
            flush: Default::default(),
            link: None,
        };
        (outbox, rx)
    }

    /// An outbox whose senders may also write straight to `link`'s socket.
    pub fn with_link(
        conn_id: u64,
        capacity: usize,
        link: Arc<Link>,
    ) -> (Outbox, mpsc::Receiver<Outbound>) {
        let (mut outbox, rx) = Outbox::new(conn_id, capacity);
        outbox.link = Some(link);
        (outbox, rx)
    }

    pub fn conn_id(&self) -> u64 {
        self.conn_id
    }

    /// Fires when the connection must be dropped (it fell behind, or was superseded).
    pub fn kill_token(&self) -> CancellationToken {
        self.kill.clone()
    }

    pub fn send(&self, frame: Bytes) -> Result<(), SendError> {
        self.queue(Outbound::Frame(frame))
    }

    /// Queues `frames[from..]` as one item (nothing when that is empty).
    pub fn send_frames(&self, frames: &Arc<[Bytes]>, from: usize) -> Result<(), SendError> {
        match frames_item(frames, from) {
            Some(out) => self.queue(out),
            None => Ok(()),
        }
    }

    /// Like `send_frames` for `framed`'s frames, but writes them to the socket from the
    /// caller's own task when it can (see `Link::write_now`), queueing only what it could
    /// not. For a game's spectators: ten thousand of them are then ten thousand writes from
    /// the game's turn, not ten thousand writer tasks woken. For its players, with the
    /// reply to the move that caused the frames: a move then wakes no writer at all.
    pub fn write_frames(&self, framed: &Framed, from: usize) -> Result<(), SendError> {
        let frames = framed.frames.len().saturating_sub(from);
        if frames == 0 {
            return Ok(());
        }
        let Some(link) = &self.link else {
            return self.send_frames(&framed.frames, from);
        };
        // The queued item (a reference count on the shared frames) is made only if needed.
        match link.write_now(framed.bytes_from(from), frames) {
            Written::All => Ok(()),
            Written::Broken => {
                self.kill.cancel();
                Err(SendError::Closed)
            }
            Written::None => self.send_frames(&framed.frames, from),
            // The socket took part: the rest waits in the link, and the writer sends it
            // before anything queued after this.
            Written::Part => self.queue(Outbound::Other(Other::Flush)),
        }
    }

    /// Asks the writer to answer a client's ping.
    pub fn pong(&self, payload: &[u8]) -> Result<(), SendError> {
        self.queue(Outbound::Other(Other::Pong(payload.into())))
    }

    /// Puts `out` on the queue for the writer task.
    fn queue(&self, out: Outbound) -> Result<(), SendError> {
        let link = self.link.as_deref();
        if let Some(link) = link {
            // Counted before it is queued: a sender that looks after this sees it.
            link.queued.fetch_add(1, SeqCst);
        }
        self.tx.try_send(out).map_err(|e| {
            if let Some(link) = link {
                link.queued.fetch_sub(1, SeqCst);
            }
            match e {
                mpsc::error::TrySendError::Full(_) => SendError::Full,
                mpsc::error::TrySendError::Closed(_) => SendError::Closed,
            }
        })
    }

    /// Encodes and queues one message for this connection alone.
    pub fn send_msg(&self, msg: &ServerMsg) -> Result<(), SendError> {
        self.send(Bytes::from(wire::encode(msg)))
    }

    /// `send_msg`, killing the connection if it does not fit: for replies, which a client
    /// that stopped reading cannot be left without.
    pub fn send_msg_or_kill(&self, msg: &ServerMsg) {
        if self.send_msg(msg) == Err(SendError::Full) {
            self.kill.cancel();
        }
    }

    /// `write_frames`, and if the client is not keeping up (the socket took nothing and the
    /// queue is full), kills its connection. For players, whose every frame matters: they
    /// get a full snapshot when they come back.
    pub fn write_or_kill(&self, framed: &Framed, from: usize) {
        if self.write_frames(framed, from) == Err(SendError::Full) {
            self.kill.cancel();
        }
    }

    /// Ask the writer to close the connection with a close code.
    pub fn close(&self, code: u16, reason: &'static str) {
        // Queued, so that nothing sent after it goes out before it.
        let close = Outbound::Other(Other::Close { code, reason });
        if self.queue(close).is_err() {
            self.kill.cancel();
        }
    }

    pub fn kill(&self) {
        self.kill.cancel();
    }

    /// Stop the connection after the writer has sent what is already queued.
    pub fn kill_after_flush(&self) {
        self.flush.store(true, Relaxed);
        self.kill.cancel();
    }

    /// Whether the kill asked for queued frames to be sent first.
    pub fn flush_requested(&self) -> bool {
        self.flush.load(Relaxed)
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.kill.is_cancelled()
    }
}

/// Frames for many connections, framed once (`ws::frame_into`) into one run of bytes: a
/// connection written to directly gets its part, from any frame on, as one contiguous
/// write (one `send`, nothing copied for it), and a queued one gets the frames themselves.
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

    /// The framed bytes of `frames[from..]`.
    fn bytes_from(&self, from: usize) -> &[u8] {
        let start = self.starts.get(from).copied().unwrap_or(self.bytes.len());
        &self.bytes[start..]
    }
}

/// `frames[from..]` as one item (`None` when that is empty).
fn frames_item(frames: &Arc<[Bytes]>, from: usize) -> Option<Outbound> {
    Some(match &frames[from.min(frames.len())..] {
        [] => return None,
        [one] => Outbound::Frame(one.clone()),
        _ => Outbound::Other(Other::Frames {
            frames: Arc::clone(frames),
            from: u32::try_from(from).expect("a backlog of fewer than 2^32 frames"),
        }),
    })
}

/// The socket a connection's frames are written to, shared by its writer task and by the
/// games that write to it directly (see `Outbox::write_frames`).
///
/// Every write to the socket is made under `unsent`'s lock, and sends first whatever an
/// earlier write left unsent (the socket took only part of it): so writes never interleave
/// and a frame is never cut by another. Writes never wait while holding the lock; only
/// the writer task waits, for the socket to take more, without it.
pub struct Link {
    tcp: Arc<TcpStream>,
    /// Bytes an earlier write could not hand to the socket, to be sent before any other.
    unsent: Mutex<Vec<u8>>,
    /// Items on the queue or being sent by the writer, and the writer's own sends (pings)
    /// under way: while this is not zero a sender must queue, so that its frames follow
    /// those.
    queued: AtomicUsize,
    metrics: Arc<Metrics>,
}

/// What `Link::write_now` managed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Every frame went to the socket.
    All,
    /// Nothing was written: something is queued or being sent before these frames, or the
    /// socket takes nothing now. Queue them.
    None,
    /// The socket took part of the frames; the rest is in `unsent` for the writer.
    Part,
    /// The socket failed: the connection is over.
    Broken,
}

impl Link {
    pub fn new(tcp: Arc<TcpStream>, metrics: Arc<Metrics>) -> Arc<Link> {
        Arc::new(Link {
            tcp,
            unsent: Mutex::new(Vec::new()),
            queued: AtomicUsize::new(0),
            metrics,
        })
    }

    fn lock_unsent(&self) -> MutexGuard<'_, Vec<u8>> {
        self.unsent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `bytes` (`frames` whole frames) to the socket from the caller's own task, if
    /// nothing is queued before them, the writer is not sending, and the socket takes them
    /// now.
    ///
    /// It never waits, and it copies nothing when the socket takes every byte (one
    /// `send`). What the socket does not take is copied to `unsent`, for the writer.
    fn write_now(&self, bytes: &[u8], frames: usize) -> Written {
        // A lock already held is another write under way: queue behind it.
        let Ok(mut unsent) = self.unsent.try_lock() else {
            return Written::None;
        };
        if !unsent.is_empty() || self.queued.load(SeqCst) != 0 {
            return Written::None;
        }
        let wrote = match self.send_now(bytes) {
            Ok(Some(n)) => n,
            Ok(None) => return Written::None,
            Err(_) => return Written::Broken,
        };
        self.metrics.messages_out.fetch_add(frames as u64, Relaxed);
        if wrote == bytes.len() {
            return Written::All;
        }
        unsent.extend_from_slice(&bytes[wrote..]);
        Written::Part
    }

    /// Writes `bytes` to the socket after whatever an earlier write left unsent, waiting
    /// (without the lock) for the socket to take more as often as needed. For the writer
    /// task alone: it is the only one that waits on the socket.
    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut done = 0;
        loop {
            {
                let mut unsent = self.lock_unsent();
                while !unsent.is_empty() {
                    match self.try_write(&unsent)? {
                        Some(n) => drop(unsent.drain(..n)),
                        None => break,
                    }
                }
                if unsent.is_empty() {
                    while done < bytes.len() {
                        match self.try_write(&bytes[done..])? {
                            Some(n) => done += n,
                            None => break,
                        }
                    }
                    if done == bytes.len() {
                        return Ok(());
                    }
                }
            }
            self.tcp.writable().await?;
        }
    }

    /// One non-blocking write through tokio: how much the socket took (`None`: nothing, it
    /// is full, and tokio now knows it is, for `writable`).
    fn try_write(&self, bytes: &[u8]) -> io::Result<Option<usize>> {
        taken(self.tcp.try_write(bytes))
    }

    /// The same straight to the socket, past tokio's readiness bookkeeping, for senders
    /// that never wait: reading the readiness of ten thousand sockets in a delivery was a
    /// cache miss each, about a twentieth of the game's time in one. Should the socket be
    /// full, the writer's next `try_write` clears the stale readiness before it waits.
    fn send_now(&self, bytes: &[u8]) -> io::Result<Option<usize>> {
        let socket = socket2::SockRef::from(&*self.tcp);
        taken(socket.send_with_flags(bytes, libc::MSG_NOSIGNAL))
    }

    /// Ends the sending direction (a FIN after the last frame). The socket itself closes
    /// when the last holder of the link lets go.
    pub fn shutdown(&self) {
        let _ = socket2::SockRef::from(&*self.tcp).shutdown(std::net::Shutdown::Write);
    }

    /// The writer has sent `items` items it took from the queue.
    pub fn sent(&self, items: usize) {
        self.queued.fetch_sub(items, SeqCst);
    }

    /// The writer is about to send something of its own (a ping): senders queue until it
    /// calls `sent(1)`.
    pub fn sending(&self) {
        self.queued.fetch_add(1, SeqCst);
    }
}

/// A non-blocking write's outcome as `Link` uses it: bytes taken, `None` when the socket
/// takes nothing now, an error when it is broken (a write of nothing included).
fn taken(wrote: io::Result<usize>) -> io::Result<Option<usize>> {
    match wrote {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => Ok(Some(n)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("queued", &self.queued.load(SeqCst))
            .finish_non_exhaustive()
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

    type Client = tokio_tungstenite::WebSocketStream<TcpStream>;

    /// An outbox linked to the server side of a real socket on loopback (no writer task
    /// runs), and a WebSocket client reading the other side.
    async fn linked(capacity: usize) -> (Arc<Link>, Outbox, mpsc::Receiver<Outbound>, Client) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (client, server) = tokio::join!(
            TcpStream::connect(listener.local_addr().unwrap()),
            listener.accept()
        );
        let client = tokio_tungstenite::WebSocketStream::from_raw_socket(
            client.unwrap(),
            tokio_tungstenite::tungstenite::protocol::Role::Client,
            None,
        )
        .await;
        let link = Link::new(Arc::new(server.unwrap().0), Arc::new(Metrics::default()));
        let (outbox, rx) = Outbox::with_link(1, capacity, link.clone());
        (link, outbox, rx, client)
    }

    /// Does the writer task's part: sends every queued item's frames in one write (after
    /// whatever a sender left unsent), then lets senders write again. Returns how many
    /// items it took.
    async fn drain_as_writer(link: &Arc<Link>, rx: &mut mpsc::Receiver<Outbound>) -> usize {
        let mut buf = Vec::new();
        let mut items = 0;
        while let Ok(out) = rx.try_recv() {
            out.encode_into(&mut buf);
            items += 1;
        }
        link.write_all(&buf).await.unwrap();
        link.sent(items);
        items
    }

    async fn next_binary(client: &mut Client) -> Vec<u8> {
        use futures::StreamExt;
        match client.next().await {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Binary(b))) => b.to_vec(),
            other => panic!("expected a binary frame, got {other:?}"),
        }
    }

    fn write(outbox: &Outbox, frame: &'static [u8]) {
        let frames = Framed::new(Arc::new([Bytes::from_static(frame)]));
        outbox.write_frames(&frames, 0).unwrap();
    }

    #[tokio::test]
    async fn a_sender_writes_to_the_socket_itself_unless_something_is_queued_before_it() {
        let (link, outbox, mut rx, mut client) = linked(8).await;

        // No writer task runs: what arrives was written by the sender.
        write(&outbox, b"one");
        assert_eq!(next_binary(&mut client).await, b"one");
        assert!(rx.try_recv().is_err(), "nothing was queued");

        // While the writer sends something of its own, frames are queued, and a frame
        // written after a queued one is queued behind it even once the writer is done.
        link.sending();
        write(&outbox, b"two");
        link.sent(1);
        write(&outbox, b"three");
        assert_eq!(drain_as_writer(&link, &mut rx).await, 2);
        assert_eq!(next_binary(&mut client).await, b"two");
        assert_eq!(next_binary(&mut client).await, b"three");

        // The queue drained, senders write again; `send` always queues.
        write(&outbox, b"four");
        assert!(rx.try_recv().is_err());
        assert_eq!(next_binary(&mut client).await, b"four");
        outbox.send(Bytes::from_static(b"queued")).unwrap();
        assert!(matches!(rx.try_recv(), Ok(Outbound::Frame(f)) if f == "queued"));
        link.sent(1);
        assert_eq!(
            link.metrics.messages_out.load(Relaxed),
            2,
            "senders count the frames they write themselves (one, four)"
        );

        // A close is queued, and nothing sent after it overtakes it.
        outbox.close(1000, "bye");
        write(&outbox, b"five");
        assert_eq!(rx.try_recv().unwrap().close(), Some((1000, "bye")));
        assert!(matches!(rx.try_recv(), Ok(Outbound::Frame(f)) if f == "five"));
    }

    #[tokio::test]
    async fn a_socket_that_cannot_take_more_leaves_the_rest_to_the_writer_in_order() {
        let (link, outbox, mut rx, mut client) = linked(64).await;
        let frame = |n: u32| -> Framed {
            let mut bytes = vec![0u8; 64 * 1024];
            bytes[..4].copy_from_slice(&n.to_be_bytes());
            Framed::new(Arc::new([Bytes::from(bytes)]))
        };
        let number = |got: Vec<u8>| u32::from_be_bytes(got[..4].try_into().unwrap());
        // The client reads nothing: sooner or later the socket stops taking frames, and
        // the sender leaves the flush to the writer.
        let mut sent = 0;
        while rx.is_empty() {
            assert!(sent < 2_000, "128 MiB written and the socket never filled");
            outbox.write_frames(&frame(sent), 0).unwrap();
            sent += 1;
        }
        // The socket took part of the last frame (the rest waits in the link, and the
        // writer is asked to flush it), or, rarely, none of it (the frame is queued).
        let first = rx.try_recv().unwrap();
        match &first {
            Outbound::Other(Other::Flush) => assert!(!link.lock_unsent().is_empty()),
            Outbound::Frame(f) => assert_eq!(number(f.to_vec()), sent - 1),
            other => panic!("expected a flush or the frame, got {other:?}"),
        }
        // Everything after that is queued behind it.
        for _ in 0..3 {
            outbox.write_frames(&frame(sent), 0).unwrap();
            sent += 1;
        }
        assert_eq!(rx.len(), 3);
        // The writer sends what the link holds and then the queued frames (it is done with
        // the item taken above too), while the client reads.
        let writer = tokio::spawn({
            let link = link.clone();
            async move {
                let mut buf = Vec::new();
                first.encode_into(&mut buf);
                link.write_all(&buf).await.unwrap();
                let items = drain_as_writer(&link, &mut rx).await;
                link.sent(1);
                items
            }
        });
        for n in 0..sent {
            assert_eq!(number(next_binary(&mut client).await), n);
        }
        assert_eq!(writer.await.unwrap(), 3);
        // Nothing queued any more: the sender writes itself again.
        outbox.write_frames(&frame(sent), 0).unwrap();
        assert_eq!(link.queued.load(SeqCst), 0);
        assert_eq!(number(next_binary(&mut client).await), sent);
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
