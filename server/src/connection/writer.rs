//! A connection's writer task: it drains what the connection's outbox queued (a burst of
//! queued items framed into one buffer and one write), sends the heartbeat, and closes
//! with a meaningful code. Sends that find nothing queued write to the socket themselves
//! (`outbox`), so the writer is woken only for what the socket could not take at once.

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
use crate::state::AppState;
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
    /// Send a close frame (with this code and reason, or none), then stop; on the socket
    /// the writer has out already, if it has.
    Close(Option<(u16, &'static str)>, Option<OwnedWriteHalf>),
    /// Stop: the socket failed, or the client stopped reading and was given up on.
    Stop,
}

/// Drains the outbox to the socket, sends heartbeats, and closes with a meaningful code.
/// Nothing else writes to the connection while an item is queued (see `outbox`): the
/// writer takes the socket out of the outbox to write what is queued, and gives it back.
///
/// While idle the task holds only the wait below; what it does once woken (`act`) is
/// boxed, so that state exists only while it sends, not in every idle connection's task.
/// (An `async` block, not an `async fn`: see `serve`.)
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
pub(super) fn write_loop(
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
        let mut last = None;
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
            match Box::pin(act(wake, &mut rx, &outbox, &state)).await {
                Next::Continue => {}
                Next::Close(close, socket) => {
                    // Nothing is written directly from here on.
                    let detached = outbox.detach();
                    last = socket.or(detached);
                    if let Some(link) = &mut last {
                        let payload = close.map_or_else(Vec::new, |(code, reason)| {
                            ws::close_payload(code, reason)
                        });
                        let _ = write_frame(link, opcode::CLOSE, &payload).await;
                    }
                    break;
                }
                Next::Stop => {
                    // The socket failed or was given up on: nothing more goes to it.
                    drop(outbox.detach());
                    break;
                }
            }
        }
        // A FIN after the last frame (a socket that failed may refuse it: nothing to do).
        if let Some(mut link) = last {
            let _ = link.shutdown().await;
        }
        // Make sure the reader stops too.
        outbox.kill();
    }
}

/// The writer's answer to one wake-up.
async fn act(
    wake: Wake,
    rx: &mut mpsc::Receiver<Outbound>,
    outbox: &Outbox,
    state: &AppState,
) -> Next {
    match wake {
        Wake::Out(Some(Outbound::Other(Other::Close { code, reason }))) => {
            Next::Close(Some((code, reason)), None)
        }
        Wake::Out(Some(first)) => {
            let Some(mut link) = outbox.take_socket() else {
                return Next::Stop;
            };
            // A client that stops reading leaves this send pending; whoever then finds its
            // outbox full kills the connection, which ends the wait. Most sends complete
            // at once (the socket has room), so that wait is armed only for one that does
            // not: arming it is a clone of the kill token and two locks of its waiter list.
            let mut burst = Burst::default();
            let sent = {
                let sending = send_burst(&mut link, rx, first, &mut burst, outbox, state);
                tokio::pin!(sending);
                match futures::poll!(sending.as_mut()) {
                    Poll::Ready(sent) => sent,
                    Poll::Pending => tokio::select! {
                        sent = &mut sending => sent,
                        _ = abandoned(outbox) => false,
                    },
                }
            };
            match (sent, burst.close) {
                (false, _) => Next::Stop,
                (true, Some(close)) => Next::Close(Some(close), Some(link)),
                (true, None) => {
                    outbox.give_back(link, burst.items);
                    Next::Continue
                }
            }
        }
        // Every sender is gone.
        Wake::Out(None) => Next::Close(None, None),
        Wake::Killed => {
            // Killed: either it fell behind or the reader ended. Send what is already
            // queued only if the reader asked for a flush.
            if !outbox.flush_requested() {
                return Next::Close(Some((close::POLICY, "not reading fast enough")), None);
            }
            let Some(mut link) = outbox.detach() else {
                return Next::Stop;
            };
            let mut buf = Vec::new();
            let mut queued = Burst::default();
            gather(rx, &mut buf, &mut queued, usize::MAX, outbox.batch());
            state
                .metrics
                .messages_out
                .fetch_add(queued.messages as u64, Relaxed);
            if link.write_all(&buf).await.is_err() {
                return Next::Stop;
            }
            // After a flush the reader has ended (the client closed, or went): a close
            // frame answers it.
            Next::Close(queued.close, Some(link))
        }
        Wake::Shutdown => {
            let Some(mut link) = outbox.detach() else {
                return Next::Stop;
            };
            let notice = ServerMsg::Notice {
                code: "shutting_down".into(),
                message: "the server is restarting; resume with your token".into(),
            };
            if write_frame(&mut link, opcode::BINARY, &wire::encode(&notice))
                .await
                .is_err()
            {
                return Next::Stop;
            }
            Next::Close(Some((close::RESTART, "server restart")), Some(link))
        }
        Wake::Heartbeat => {
            // In order with everything else: written now if nothing is queued, else after
            // it. (A queue too full for it belongs to a connection being killed.)
            let _ = outbox.ping();
            Next::Continue
        }
    }
}

/// Writes one frame.
async fn write_frame(link: &mut OwnedWriteHalf, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(payload.len() + 10);
    ws::frame_into(&mut buf, opcode, payload);
    link.write_all(&buf).await
}

/// At most this many items go out in one write.
const MAX_BURST: usize = 64;

/// A burst's buffer starts with room for a player's usual burst (a few frames of a
/// round, 60–200 bytes each), so that framing it does not grow the buffer several times.
const BURST_CAPACITY: usize = 1024;

/// What a burst took from the queue.
#[derive(Default)]
struct Burst {
    /// Items taken, the close included.
    items: usize,
    /// Messages in the buffer.
    messages: usize,
    /// The close found, which ended the gathering (nothing after it was taken).
    close: Option<(u16, &'static str)>,
}

/// Sends `first` and whatever else is already queued behind it (up to `MAX_BURST` items)
/// in one write, so a burst of events (a reveal and the round's result, say) costs one
/// write to the socket rather than one each. A close found in the queue is left in
/// `burst` for the caller, after the frames before it. Returns whether the frames went.
async fn send_burst(
    link: &mut OwnedWriteHalf,
    rx: &mut mpsc::Receiver<Outbound>,
    first: Outbound,
    burst: &mut Burst,
    outbox: &Outbox,
    state: &AppState,
) -> bool {
    let batch = outbox.batch();
    burst.items = 1;
    // Alone and framed already (a delivery's part, a player's batch): written from the
    // shared bytes as they are, with no buffer of its own.
    if let Some(framed) = first.framed_bytes(batch).filter(|_| rx.is_empty()) {
        let messages = first.frames().len() as u64;
        state.metrics.messages_out.fetch_add(messages, Relaxed);
        return link.write_all(framed).await.is_ok();
    }
    let mut buf = Vec::with_capacity(BURST_CAPACITY);
    burst.messages = first.encode_into(&mut buf, batch);
    gather(rx, &mut buf, burst, MAX_BURST, batch);
    state
        .metrics
        .messages_out
        .fetch_add(burst.messages as u64, Relaxed);
    link.write_all(&buf).await.is_ok()
}

/// Frames what is already queued into `buf`, counting it in `burst`, until `burst` has
/// `max_items`, the queue is empty, or a close comes up.
fn gather(
    rx: &mut mpsc::Receiver<Outbound>,
    buf: &mut Vec<u8>,
    burst: &mut Burst,
    max_items: usize,
    batch: bool,
) {
    while burst.items < max_items {
        let Ok(out) = rx.try_recv() else { break };
        burst.items += 1;
        if let Some(found) = out.close() {
            burst.close = Some(found);
            break;
        }
        burst.messages += out.encode_into(buf, batch);
    }
}

/// Resolves when the connection is killed without a flush (it fell behind or was
/// superseded, or the server is stopping): what is queued, or being sent, need not go out.
async fn abandoned(outbox: &Outbox) {
    outbox.kill_token().cancelled().await;
    if outbox.flush_requested() {
        std::future::pending::<()>().await;
    }
}
