//! One WebSocket connection: a reader loop and a writer task.
//!
//! The reader only decodes, rate-limits and hands each message to the `Session`; the
//! writer drains what the connection's outbox queued, sends heartbeats and closes with a
//! meaningful code. When one side ends, the other is stopped.

use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::wire::{self, DecodeError, Refused};
use elementals_protocol::ErrorCode;
use futures::{FutureExt, StreamExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

pub use crate::msg::close;
use crate::outbox::{Outbox, OUTBOX_CAPACITY};
use crate::session::{After, Session};
use crate::state::AppState;
use crate::ws;

mod writer;
use writer::write_loop;

/// A token bucket: `rate` messages per second, bursts of `2 * rate`.
struct RateLimit {
    rate: f64,
    tokens: f64,
    last: Instant,
    strikes: u32,
}

impl RateLimit {
    fn new(rate: u32) -> Self {
        let rate = rate.max(1) as f64;
        RateLimit {
            rate,
            tokens: 2.0 * rate,
            last: Instant::now(),
            strikes: 0,
        }
    }

    fn allow(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(2.0 * self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.strikes = 0;
            true
        } else {
            self.strikes += 1;
            false
        }
    }
}

/// Messages refused for rate in a row before the connection is closed with 1008.
pub(crate) const RATE_STRIKES_BEFORE_CLOSE: u32 = 20;

/// Serves one upgraded WebSocket until it closes; `held` (the connection's admission
/// permits) is released after the writer has stopped.
///
/// The connection is set up (outbox, writer task, session) before the future is returned,
/// and that future is an `async` block rather than an `async fn`: it is the state of every
/// open connection's task for as long as the connection lives, and an `async fn` keeps a
/// second copy of each argument in it (the WebSocket's reading side alone is 288 bytes).
/// Together with the boxed message handling in `read_loop` this keeps an idle connection's
/// task small (the density target: memory per idle signed-in player).
pub fn serve<H: Send + 'static>(
    socket: ws::Socket,
    state: Arc<AppState>,
    peer: SocketAddr,
    held: H,
) -> impl Future<Output = ()> + Send + 'static {
    let conn_id = state.next_conn_id.fetch_add(1, Relaxed);
    let ws::Socket { frames, write } = socket;
    // Killed at shutdown too: the writer then sends the restart notice (`write_loop`).
    let (outbox, rx) = Outbox::within(conn_id, OUTBOX_CAPACITY, &state.shutdown);
    outbox.attach(write, state.metrics.clone());
    // On the bus: the lobby and the games reach the connection by its id.
    state.registry.bus().connect(&outbox);
    state.metrics.connections.fetch_add(1, Relaxed);
    state.metrics.connections_total.fetch_add(1, Relaxed);
    tracing::debug!(conn_id, %peer, "connected");

    let mut writer = tokio::spawn(write_loop(rx, outbox.clone(), state.clone()));
    let mut session = Session::new(state.clone(), outbox.clone(), peer);
    async move {
        // A bug that panics while handling one message must cost only this connection:
        // the session is still released below (and by its `Drop` if even this is
        // unwound), and the client is told with 1011, so the player resumes as after any
        // dropped connection.
        let reader = AssertUnwindSafe(read_loop(frames, &mut session, &outbox, &state));
        if reader.catch_unwind().await.is_err() {
            tracing::error!(conn_id, %peer, "connection task panicked; closing it");
            outbox.close(close::INTERNAL, "internal server error");
        }
        session.end();
        // The reader is done: let the writer flush what is queued (a close frame, say),
        // then stop. A writer stuck on a client that stopped reading is aborted, so its
        // socket and buffers are released now, not when the client finally reads.
        drop(session);
        if !outbox.kill_token().is_cancelled() {
            // Not when already killed: a connection that fell behind is not flushed.
            outbox.kill_after_flush();
        }
        if tokio::time::timeout(WRITER_FLUSH, &mut writer)
            .await
            .is_err()
        {
            writer.abort();
        }
        state.registry.bus().disconnect(conn_id);
        state.metrics.connections.fetch_sub(1, Relaxed);
        tracing::debug!(conn_id, "disconnected");
        drop(held);
    }
}

/// How long a closing connection's writer may take to send what is queued.
pub(crate) const WRITER_FLUSH: Duration = Duration::from_secs(5);

/// Reads frames and hands each message to the session, until the connection ends. (An
/// `async` block, not an `async fn`: see `serve`.)
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
fn read_loop<'a>(
    mut stream: ws::Frames,
    session: &'a mut Session,
    outbox: &'a Outbox,
    state: &'a AppState,
) -> impl Future<Output = ()> + Send + 'a {
    async move {
        let mut limit = RateLimit::new(state.config.message_rate);
        let auth_deadline = Instant::now() + state.config.auth_timeout();
        let idle = state.config.idle_timeout();
        // Both armed once, not once per frame (see `write_loop`). The timer is moved when
        // it fires early, and otherwise only when the deadline moves earlier (rare, below),
        // so a timer left at an older deadline fires at or before the current one, which is
        // checked then. (Setting a
        // timer per frame took the timer wheel's lock twice, to insert and to remove.)
        let deadline_after = |now: Instant, signed_in: bool| {
            if signed_in {
                now + idle
            } else {
                auth_deadline.min(now + idle)
            }
        };
        let killed = outbox.kill_token().cancelled_owned();
        let timer = tokio::time::sleep_until(deadline_after(Instant::now(), false));
        tokio::pin!(killed, timer);
        loop {
            // A spectator needs no account (PROTOCOL.md section 3): watching lifts the
            // sign-in deadline as signing in does.
            let signed_in = session.is_authenticated() || session.is_watching();
            let deadline = deadline_after(Instant::now(), signed_in);
            // The one deadline that moves earlier: a connection without an account that
            // stops watching is back under its sign-in deadline.
            if deadline < timer.deadline() {
                timer.as_mut().reset(deadline);
            }
            let frame = loop {
                tokio::select! {
                    () = &mut killed => return,
                    () = &mut timer => {
                        if Instant::now() < deadline {
                            timer.as_mut().reset(deadline);
                            continue;
                        }
                        break Err(TimedOut);
                    }
                    f = stream.next() => break Ok(f),
                }
            };
            // A move is judged by its game at this instant, however long it then waits.
            let arrived = Instant::now();
            // Whatever this frame brings (a reply, an error, a close) follows the answer to
            // the last move, which its game sends (normally done by now: no wait).
            session.settle().await;
            let msg = match receive(frame, signed_in, auth_deadline, &mut limit, outbox, state) {
                Received::Message(msg) => msg,
                Received::Nothing => continue,
                Received::End => return,
            };
            // Boxed: handling a message may wait on the database, the hasher, the lobby or
            // a game, and that state (about 1.4 KiB) would otherwise be part of every
            // connection's task even while it is idle.
            if let After::Close(code, reason) = Box::pin(session.handle(msg, arrived)).await {
                outbox.close(code, reason);
                return;
            }
        }
    }
}

/// No frame came before the connection's deadline.
struct TimedOut;

/// What one wait for a frame came to.
enum Received {
    /// A message for the session.
    Message(ClientMsg),
    /// Nothing to handle (a ping, a refused or undecodable message): read on.
    Nothing,
    /// The connection ends (any close is already queued).
    End,
}

/// Checks one frame (or the lack of one) against the deadlines, the frame rules and the
/// rate limit, and decodes it, telling the client what is wrong where something is.
fn receive(
    frame: Result<Option<Result<Message, tungstenite::Error>>, TimedOut>,
    signed_in: bool,
    auth_deadline: Instant,
    limit: &mut RateLimit,
    outbox: &Outbox,
    state: &AppState,
) -> Received {
    let msg = match frame {
        Err(_) if !signed_in && Instant::now() >= auth_deadline => {
            outbox.close(close::AUTH_TIMEOUT, "sign in within the time limit");
            return Received::End;
        }
        Err(_) => {
            outbox.close(close::HEARTBEAT_TIMEOUT, "no frames received: idle timeout");
            return Received::End;
        }
        Ok(None) => return Received::End,
        Ok(Some(Err(e))) => {
            if is_too_big(&e) {
                let _ = outbox.send_msg(&ServerMsg::error(
                    None,
                    ErrorCode::MessageTooLarge,
                    "message too large",
                ));
                outbox.close(close::TOO_BIG, "message too large");
            }
            return Received::End;
        }
        Ok(Some(Ok(msg))) => msg,
    };
    let bytes = match msg {
        Message::Binary(bytes) => bytes,
        Message::Text(_) => {
            let _ = outbox.send_msg(&ServerMsg::error(
                None,
                ErrorCode::BadMessage,
                "text frames are not accepted: send binary MessagePack",
            ));
            outbox.close(close::UNSUPPORTED_DATA, "binary frames only");
            return Received::End;
        }
        Message::Close(_) => return Received::End,
        Message::Ping(payload) => {
            // Answered by the writer, in order with everything else it sends.
            let _ = outbox.pong(&payload);
            return Received::Nothing;
        }
        Message::Pong(_) | Message::Frame(_) => return Received::Nothing,
    };
    state.metrics.messages_in.fetch_add(1, Relaxed);
    if !limit.allow() {
        if limit.strikes >= RATE_STRIKES_BEFORE_CLOSE {
            outbox.close(close::POLICY, "rate limit exceeded");
            return Received::End;
        }
        let _ = outbox.send_msg(&ServerMsg::error(
            None,
            ErrorCode::RateLimited,
            "too many messages; slow down",
        ));
        return Received::Nothing;
    }
    match wire::decode_request(&bytes) {
        Ok(msg) => Received::Message(msg),
        Err(Refused { id, error: e }) => {
            // With the request's id where it can be read: the client is waiting on it.
            let _ = outbox.send_msg(&ServerMsg::error(id, e.code(), e.to_string()));
            if let DecodeError::TooLarge { .. } = e {
                outbox.close(close::TOO_BIG, "message too large");
                return Received::End;
            }
            Received::Nothing
        }
    }
}

fn is_too_big(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Capacity(_))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_close_code_the_server_sends_is_documented() {
        const PROTOCOL_MD: &str = include_str!("../../PROTOCOL.md");
        let table = PROTOCOL_MD
            .split_once("### WebSocket close codes")
            .expect("PROTOCOL.md has a close-code table")
            .1;
        for code in [
            close::NORMAL,
            close::GOING_AWAY,
            close::PROTOCOL,
            close::UNSUPPORTED_DATA,
            close::POLICY,
            close::TOO_BIG,
            close::INTERNAL,
            close::RESTART,
            close::SUPERSEDED,
            close::AUTH_TIMEOUT,
            close::HEARTBEAT_TIMEOUT,
        ] {
            assert!(table.contains(&format!("\n| {code} |")), "{code}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_limit_allows_bursts_of_twice_the_rate_then_the_rate() {
        let mut limit = RateLimit::new(20);
        assert!((0..40).all(|_| limit.allow()), "a burst of 40");
        assert!(!limit.allow());
        assert!(!limit.allow());
        assert_eq!(limit.strikes, 2);
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!((0..10).all(|_| limit.allow()), "20 a second");
        assert_eq!(limit.strikes, 0, "an allowed message clears the strikes");
        assert!(!limit.allow());
    }
}
