//! A connection's writer task, the only writer of its socket: it drains the connection's
//! outbox (a burst of queued items framed into one buffer and one write), answers the
//! client's pings, sends the heartbeat, and closes with a meaningful code.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Poll;

use elementals_protocol::messages::ServerMsg;
use elementals_protocol::wire;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::close;
use crate::outbox::{Other, Outbound, Outbox};
use crate::server::AppState;
use crate::ws::{self, opcode};

/// What woke an idle writer.
enum Wake {
    Out(Option<Outbound>),
    Killed,
    Shutdown,
    Heartbeat,
}

/// What the writer does after one wake-up.
enum Next {
    /// Wait for the next.
    Continue,
    /// Send a close frame (with this code and reason, or none), then stop.
    Close(Option<(u16, &'static str)>),
    /// Stop: the socket failed, or the client stopped reading and was given up on.
    Stop,
}

/// Drains the outbox to the socket, sends heartbeats, and closes with a meaningful code.
/// It holds the socket's writing half: nothing else writes to the connection.
///
/// While idle the task holds only the wait below; what it does once woken (`act`) is
/// boxed, so that state exists only while it sends, not in every idle connection's task.
/// (An `async` block, not an `async fn`: see `serve`.)
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
pub(super) fn write_loop(
    mut link: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Outbound>,
    outbox: Outbox,
    state: Arc<AppState>,
) -> impl Future<Output = ()> + Send + 'static {
    async move {
        let mut heartbeat = tokio::time::interval(state.config.heartbeat());
        heartbeat.reset();
        // Armed once for the connection's life, not once per frame (re-arming took its
        // lock twice more for every frame sent). It is polled each time the writer goes
        // idle, which takes its lock: the token is the connection's own, a child of the
        // server's shutdown token (`Outbox::within`), so no other connection's writer
        // contends for it (10,000 spectators' writers did for the shared one at each event).
        // Firing ends the loop, so it is not polled after it completes.
        let killed = outbox.kill_token().cancelled_owned();
        tokio::pin!(killed);
        loop {
            let wake = tokio::select! {
                biased;
                out = rx.recv() => Wake::Out(out),
                () = &mut killed => match state.shutdown.is_cancelled() {
                    true => Wake::Shutdown,
                    false => Wake::Killed,
                },
                _ = heartbeat.tick() => Wake::Heartbeat,
            };
            match Box::pin(act(wake, &mut link, &mut rx, &outbox, &state)).await {
                Next::Continue => {}
                Next::Close(close) => {
                    let payload = close
                        .map_or_else(Vec::new, |(code, reason)| ws::close_payload(code, reason));
                    let _ = write_frame(&mut link, opcode::CLOSE, &payload).await;
                    break;
                }
                Next::Stop => break,
            }
        }
        // A FIN after the last frame (a socket that failed may refuse it: nothing to do).
        let _ = link.shutdown().await;
        // Make sure the reader stops too.
        outbox.kill();
    }
}

/// The writer's answer to one wake-up.
async fn act(
    wake: Wake,
    link: &mut OwnedWriteHalf,
    rx: &mut mpsc::Receiver<Outbound>,
    outbox: &Outbox,
    state: &AppState,
) -> Next {
    match wake {
        Wake::Out(Some(Outbound::Other(Other::Close { code, reason }))) => {
            Next::Close(Some((code, reason)))
        }
        Wake::Out(Some(first)) => {
            // A client that stops reading leaves this send pending; whoever then finds its
            // outbox full kills the connection, which ends the wait. Most sends complete
            // at once (the socket has room), so that wait is armed only for one that does
            // not: arming it is a clone of the kill token and two locks of its waiter list.
            let mut close = None;
            let sent = {
                let burst = send_burst(link, rx, first, &mut close, state);
                tokio::pin!(burst);
                match futures::poll!(burst.as_mut()) {
                    Poll::Ready(sent) => sent,
                    Poll::Pending => tokio::select! {
                        sent = &mut burst => sent,
                        _ = abandoned(outbox) => false,
                    },
                }
            };
            match (sent, close) {
                (false, _) => Next::Stop,
                (true, Some(close)) => Next::Close(Some(close)),
                (true, None) => Next::Continue,
            }
        }
        // Every sender is gone.
        Wake::Out(None) => Next::Close(None),
        Wake::Killed => {
            // Killed: either it fell behind or the reader ended. Send what is already
            // queued only if the reader asked for a flush.
            if !outbox.flush_requested() {
                return Next::Close(Some((close::POLICY, "not reading fast enough")));
            }
            let mut buf = Vec::new();
            let queued = gather(rx, &mut buf, 0, usize::MAX);
            state
                .metrics
                .messages_out
                .fetch_add(queued.frames as u64, Relaxed);
            if link.write_all(&buf).await.is_err() {
                return Next::Stop;
            }
            // After a flush the reader has ended (the client closed, or went): a close
            // frame answers it.
            Next::Close(queued.close)
        }
        Wake::Shutdown => {
            let notice = ServerMsg::Notice {
                code: "shutting_down".into(),
                message: "the server is restarting; resume with your token".into(),
            };
            if write_frame(link, opcode::BINARY, &wire::encode(&notice))
                .await
                .is_err()
            {
                return Next::Stop;
            }
            Next::Close(Some((close::RESTART, "server restart")))
        }
        Wake::Heartbeat => {
            let sent = tokio::select! {
                sent = write_frame(link, opcode::PING, &[]) => sent.is_ok(),
                _ = abandoned(outbox) => false,
            };
            if sent {
                Next::Continue
            } else {
                Next::Stop
            }
        }
    }
}

/// Writes one frame.
async fn write_frame(link: &mut OwnedWriteHalf, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(payload.len() + 10);
    ws::frame_into(&mut buf, opcode, payload);
    link.write_all(&buf).await
}

/// At most this many frames go out in one write.
const MAX_BURST: usize = 64;

/// A burst's buffer starts with room for a player's usual burst (a few frames of a
/// round, 60–200 bytes each), so that framing it does not grow the buffer several times.
const BURST_CAPACITY: usize = 1024;

/// Sends `first` and whatever else is already queued behind it (up to about `MAX_BURST`
/// frames) in one write, so a burst of events (a reveal and the round's result, say)
/// costs one write to the socket rather than one each. A close found in the queue is left
/// in `close` for the caller, after the frames before it. Returns whether the frames went.
async fn send_burst(
    link: &mut OwnedWriteHalf,
    rx: &mut mpsc::Receiver<Outbound>,
    first: Outbound,
    close: &mut Option<(u16, &'static str)>,
    state: &AppState,
) -> bool {
    // Alone and framed already (a delivery's part, a player's batch): written from the
    // shared bytes as they are, with no buffer of its own.
    if let Some(framed) = first.framed_bytes().filter(|_| rx.is_empty()) {
        let frames = first.frames().len() as u64;
        state.metrics.messages_out.fetch_add(frames, Relaxed);
        return link.write_all(framed).await.is_ok();
    }
    let mut buf = Vec::with_capacity(BURST_CAPACITY);
    let first_frames = first.encode_into(&mut buf);
    let burst = gather(rx, &mut buf, first_frames, MAX_BURST);
    *close = burst.close;
    state
        .metrics
        .messages_out
        .fetch_add(burst.frames as u64, Relaxed);
    link.write_all(&buf).await.is_ok()
}

/// What `gather` took from the queue.
struct Gathered {
    /// Frames in the buffer, counting the ones already there.
    frames: usize,
    /// The close found, which ended the gathering (nothing after it was taken).
    close: Option<(u16, &'static str)>,
}

/// Frames what is already queued into `buf` (which holds `frames` frames), until there
/// are `max_frames`, the queue is empty, or a close comes up.
fn gather(
    rx: &mut mpsc::Receiver<Outbound>,
    buf: &mut Vec<u8>,
    mut frames: usize,
    max_frames: usize,
) -> Gathered {
    let mut close = None;
    while frames < max_frames {
        let Ok(out) = rx.try_recv() else { break };
        if let Some(found) = out.close() {
            close = Some(found);
            break;
        }
        frames += out.encode_into(buf);
    }
    Gathered { frames, close }
}

/// Resolves when the connection is killed without a flush (it fell behind or was
/// superseded, or the server is stopping): what is queued, or being sent, need not go out.
async fn abandoned(outbox: &Outbox) {
    outbox.kill_token().cancelled().await;
    if outbox.flush_requested() {
        std::future::pending::<()>().await;
    }
}
