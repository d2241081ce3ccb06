//! Outboxes: how actors push frames to one connection's writer task.
//!
//! Every connection owns one bounded queue of encoded frames. Actors never wait on a
//! connection: they `try_send`, and a queue that is full means the client stopped
//! reading. What happens then is the sender's choice: a game kills a player's connection
//! (the player resynchronises on reconnect), a game resynchronises or drops a spectator.

use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
}

impl Outbound {
    /// The frames to send, in order (none for a close).
    pub fn frames(&self) -> &[Bytes] {
        match self {
            Outbound::Frame(frame) => std::slice::from_ref(frame),
            Outbound::Other(Other::Frames { frames, from }) => &frames[*from as usize..],
            Outbound::Other(Other::Close { .. }) => &[],
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
    flush: std::sync::Arc<std::sync::atomic::AtomicBool>,
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
        self.push(Outbound::Frame(frame))
    }

    /// Queues `frames[from..]` as one item (nothing when that is empty).
    pub fn send_frames(&self, frames: &Arc<[Bytes]>, from: usize) -> Result<(), SendError> {
        let out = match &frames[from.min(frames.len())..] {
            [] => return Ok(()),
            [one] => Outbound::Frame(one.clone()),
            _ => Outbound::Other(Other::Frames {
                frames: Arc::clone(frames),
                from: u32::try_from(from).expect("a backlog of fewer than 2^32 frames"),
            }),
        };
        self.push(out)
    }

    fn push(&self, out: Outbound) -> Result<(), SendError> {
        self.tx.try_send(out).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => SendError::Full,
            mpsc::error::TrySendError::Closed(_) => SendError::Closed,
        })
    }

    /// Encode and queue one message for this connection alone.
    pub fn send_msg(&self, msg: &ServerMsg) -> Result<(), SendError> {
        self.send(Bytes::from(wire::encode(msg)))
    }

    /// Queue a frame; if the client is not keeping up, kill its connection. For players,
    /// whose every event matters: they get a full snapshot when they come back.
    pub fn send_or_kill(&self, frame: Bytes) {
        if self.send(frame) == Err(SendError::Full) {
            self.kill.cancel();
        }
    }

    /// Ask the writer to close the connection with a close code.
    pub fn close(&self, code: u16, reason: &'static str) {
        let close = Outbound::Other(Other::Close { code, reason });
        if self.tx.try_send(close).is_err() {
            self.kill.cancel();
        }
    }

    pub fn kill(&self) {
        self.kill.cancel();
    }

    /// Stop the connection after the writer has sent what is already queued.
    pub fn kill_after_flush(&self) {
        self.flush.store(true, std::sync::atomic::Ordering::Relaxed);
        self.kill.cancel();
    }

    /// Whether the kill asked for queued frames to be sent first.
    pub fn flush_requested(&self) -> bool {
        self.flush.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.kill.is_cancelled()
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
