//! Outboxes: how actors push frames to one connection's writer task.
//!
//! Every connection owns one bounded queue of encoded frames, and its writer task is the
//! only thing that writes to its socket. Actors never wait on a connection: they
//! `try_send`, and a queue that is full means the client stopped reading. What happens
//! then is the sender's choice: a game kills a player's connection (the player
//! resynchronises on reconnect), a game resynchronises or drops a spectator.
//!
//! A frame is encoded once and its `Bytes` shared by every recipient; a delivery to many
//! connections is also framed once (`Framed`), and each writer copies its part of the
//! same bytes into its write.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
}

impl Outbound {
    /// The frames to send, in order (none for a close or a pong).
    pub fn frames(&self) -> &[Bytes] {
        match self {
            Outbound::Frame(frame) => std::slice::from_ref(frame),
            Outbound::Other(Other::Framed { framed, from }) => {
                &framed.frames[(*from as usize).min(framed.frames.len())..]
            }
            Outbound::Other(Other::Close { .. } | Other::Pong(_)) => &[],
        }
    }

    /// Appends the item's frames to `buf`, framed for the socket (a pong as a pong, a close
    /// as nothing); returns how many messages that is (pongs not counted).
    pub fn encode_into(&self, buf: &mut Vec<u8>) -> usize {
        match self {
            Outbound::Frame(frame) => {
                ws::frame_into(buf, ws::opcode::BINARY, frame);
                1
            }
            Outbound::Other(Other::Framed { framed, from }) => {
                // Framed already: the bytes are copied as they are.
                buf.extend_from_slice(framed.bytes_from(*from as usize));
                self.frames().len()
            }
            Outbound::Other(Other::Pong(payload)) => {
                ws::frame_into(buf, ws::opcode::PONG, payload);
                0
            }
            Outbound::Other(Other::Close { .. }) => 0,
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
        };
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

    /// Puts `out` on the queue for the writer task.
    fn queue(&self, out: Outbound) -> Result<(), SendError> {
        self.tx.try_send(out).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => SendError::Full,
            mpsc::error::TrySendError::Closed(_) => SendError::Closed,
        })
    }

    /// Encodes and queues one message for this connection alone.
    pub fn send_msg(&self, msg: &ServerMsg) -> Result<(), SendError> {
        self.send(Bytes::from(wire::encode(msg)))
    }

    /// `send`, killing the connection if it does not fit: for a reply the client waits on.
    pub fn send_or_kill(&self, frame: Bytes) {
        if self.send(frame) == Err(SendError::Full) {
            self.kill.cancel();
        }
    }

    /// `send_msg`, killing the connection if it does not fit: for replies, which a client
    /// that stopped reading cannot be left without.
    pub fn send_msg_or_kill(&self, msg: &ServerMsg) {
        if self.send_msg(msg) == Err(SendError::Full) {
            self.kill.cancel();
        }
    }

    /// `send_framed`, and if the client is not keeping up (its queue is full), kills its
    /// connection. For players, whose every frame matters: they get a full snapshot when
    /// they come back.
    pub fn send_framed_or_kill(&self, framed: &Arc<Framed>, from: usize) {
        if self.send_framed(framed, from) == Err(SendError::Full) {
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
        assert_eq!(whole_item.encode_into(&mut got_whole), 3);
        assert_eq!(part_item.encode_into(&mut got_part), 2);
        assert_eq!(got_whole, expect(0));
        assert_eq!(got_part, expect(1));
        // The payloads are the delivery's own, not copies.
        assert_eq!(
            whole_item.frames()[1].as_ptr(),
            part_item.frames()[0].as_ptr()
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
