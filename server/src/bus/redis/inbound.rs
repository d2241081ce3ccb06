//! What this node hears from Redis: messages for its connections and games, the events
//! of other nodes' games its spectators watch, and the cluster's news.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use elementals_protocol::messages::GameId;
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::link::Unheard;
use super::wire::{self, ClusterMsg, NodeMsg, TopicMsg};
use super::{RedisBus, RESYNC_WINDOW};
use crate::bus::Bus;
use crate::msg::{ConnId, GameCmd, LobbyCmd, Notice, ReplyTo};
use crate::outbox::Framed;

impl RedisBus {
    /// A command for one of this node's games, from another node: queued in order
    /// (waiting for room in a task of its own only if the queue is full).
    fn take_cmd(self: &Arc<Self>, game: GameId, cmd: GameCmd) {
        // A game that went to sleep here as the command came is woken here.
        let Some(queue) = self.local_queue(game, &cmd) else {
            return self.refuse(game, &cmd);
        };
        match queue.try_send(cmd) {
            Ok(()) => {}
            Err(TrySendError::Closed(cmd)) => self.refuse(game, &cmd),
            Err(TrySendError::Full(cmd)) => {
                let bus = self.clone();
                tokio::spawn(async move {
                    if let Err(mpsc::error::SendError(cmd)) = queue.send(cmd).await {
                        bus.refuse(game, &cmd);
                    }
                });
            }
        }
    }

    /// Applies a message from another node.
    pub(super) fn apply(self: &Arc<Self>, msg: NodeMsg) {
        match msg {
            NodeMsg::Send {
                conn,
                frame,
                kill_if_full,
            } => {
                if self.is_late(conn, &frame) {
                    return;
                }
                if kill_if_full {
                    self.local.send_or_kill(conn, frame);
                } else {
                    let _ = self.local.send(conn, frame);
                }
            }
            NodeMsg::SendFramed {
                conn,
                mut frames,
                kill_if_full,
            } => {
                if self.late.contains_key(&conn) {
                    frames.retain(|frame| !self.is_late(conn, frame));
                    if frames.is_empty() {
                        return;
                    }
                }
                let framed = Arc::new(Framed::new(frames.into()));
                if kill_if_full {
                    self.local.send_framed_or_kill(conn, &framed, 0);
                } else {
                    let _ = self.local.send_framed(conn, &framed, 0);
                }
            }
            NodeMsg::Kill { conn } => self.local.kill(conn),
            NodeMsg::Close { conn, code, reason } => self.local.close(conn, code, intern(reason)),
            NodeMsg::Answered { conn, ok, request } => {
                // The end of a late answer: nothing more of it comes (see `late`).
                if request.is_some()
                    && self
                        .late
                        .remove_if(&conn, |_, late| Some(late.0) == request)
                        .is_some()
                {
                    return;
                }
                // Owed nothing: answered here already (see `owed`).
                if self
                    .owed
                    .remove_if(&conn, |_, owed| owed.0.reply.request_id == request)
                    .is_some()
                {
                    self.local
                        .notify_session(conn, Notice::Answered { ok, request });
                }
            }
            NodeMsg::ToGame { game, cmd } => self.take_cmd(game, cmd.into_cmd()),
            NodeMsg::Subscribe { topic, conn } => {
                self.local.subscribe(topic, conn);
            }
            NodeMsg::Unsubscribe { topic, conn } => {
                self.local.unsubscribe(topic, conn);
            }
            NodeMsg::AskOwed { game, from, ask } => self.tell_owed(game, from, ask),
            NodeMsg::ToldOwed { ask, owed } => self.told_owed(ask, owed),
            NodeMsg::Follow {
                game,
                account,
                conn,
                tell_owed,
            } => {
                if let Some(registry) = self.asks.registry() {
                    registry.follow_here(game, account, conn, tell_owed);
                }
            }
            NodeMsg::ToLobby(cmd) => {
                // A node's `Restore` is its word that it is alive, taken before the lobby
                // takes the entries it gives back: else the lobby's next tick, seeing the
                // node still silent (its next `Alive` not yet here), drops them again.
                if let LobbyCmd::Restore { node, .. } = &cmd {
                    self.directory.heard_from(*node);
                }
                self.take_lobby_cmd(cmd)
            }
            NodeMsg::Hold { conn, holding } => self.local.hold(conn, holding),
            NodeMsg::StartGame(game) => self.local.start_game(game),
        }
    }

    /// Whether `frame`, for connection `conn`, answers a request `unheard` answered
    /// already: it is dropped, so that the client hears one answer a request.
    fn is_late(&self, conn: ConnId, frame: &[u8]) -> bool {
        let Some(late) = self.late.get(&conn).map(|late| late.0) else {
            return false;
        };
        let answers = elementals_protocol::wire::decode_server(frame)
            .is_ok_and(|msg| msg.reply_id() == Some(late));
        if answers {
            tracing::info!(
                conn,
                request = late,
                "a late answer to a request answered already is dropped"
            );
        }
        answers
    }

    /// Events of a remote game this node's spectators watch.
    pub(super) async fn on_topic(self: &Arc<Self>, game: GameId, msg: TopicMsg) {
        match msg {
            TopicMsg::Frames { frames } => {
                self.local.publish(game, &frames);
                self.fan_out(game);
            }
            TopicMsg::Closed => {
                self.local.close_topic(game);
                self.resyncs.retain(|(g, _), _| *g != game);
                self.unwatch_topic(game).await;
            }
        }
    }

    /// Delivers a remote game's backlog to this node's spectators. One that lags leaves
    /// the local topic and the game is asked to `watch` again for it (a fresh snapshot,
    /// then the events from there), at most `MAX_RESYNC_ATTEMPTS` times in
    /// `RESYNC_WINDOW`; past that it is dropped.
    fn fan_out(&self, game: GameId) {
        loop {
            let delivery = self.local.deliver(game, usize::MAX);
            if !delivery.lagging {
                return;
            }
            for conn in self.local.lagging(game) {
                self.local.unsubscribe(game, conn);
                let mut entry = self
                    .resyncs
                    .entry((game, conn))
                    .or_insert((0, Instant::now()));
                if entry.1.elapsed() > RESYNC_WINDOW {
                    *entry = (0, Instant::now());
                }
                entry.0 += 1;
                let attempts = entry.0;
                drop(entry);
                if attempts > super::topic::MAX_RESYNC_ATTEMPTS {
                    self.resyncs.remove(&(game, conn));
                    self.local.kill(conn);
                    continue;
                }
                let reply = ReplyTo {
                    conn,
                    request_id: None,
                    settle: false,
                };
                self.notify_game(game, GameCmd::Watch { reply });
            }
        }
    }

    /// A message on one of this node's channels.
    async fn on_message(self: &Arc<Self>, msg: ::redis::Msg) {
        let channel = msg.get_channel_name();
        let payload = msg.get_payload_bytes();
        if channel == self.link.keys.own_channel() {
            if let Some(msg) = wire::decode(payload) {
                self.apply(msg);
            }
        } else if channel == self.link.keys.cluster_channel() {
            let Some(msg) = wire::decode::<ClusterMsg>(payload) else {
                return;
            };
            // A game watched here that another node took over (its node died): its
            // spectators here watch it again there, which counts them and sends them its
            // events. Taken over by this node itself (its own `Opened`, heard back), the
            // game is no longer another node's: its channel is left, and the spectators
            // here watch it here.
            let moved = match &msg {
                ClusterMsg::Opened { game, entry }
                    if entry.node == self.node && self.watched.contains_key(game) =>
                {
                    self.unwatch_topic(*game).await;
                    Some(*game)
                }
                ClusterMsg::Opened { game, entry } => self
                    .directory
                    .node_of(*game)
                    .is_some_and(|was| was != entry.node && self.watched.contains_key(game))
                    .then_some(*game),
                ClusterMsg::Ended { game, .. } => {
                    // A game watched here that ended with nobody here watching it any
                    // more (so its node sent no `Closed`): its channel is left too.
                    if self.watched.contains_key(game) {
                        self.on_topic(*game, TopicMsg::Closed).await;
                    }
                    None
                }
                _ => None,
            };
            if let ClusterMsg::Opened { game, entry } = &msg {
                self.follow_there(*game, entry);
            }
            self.lobby_news(&msg);
            if let Some(conn) = self.directory.heard(msg) {
                crate::bus::supersede(&**self, conn);
            }
            if let Some(game) = moved {
                self.resync_topic(game);
            }
        } else if let Some(game) = self.link.keys.topic_of(channel) {
            if let Some(msg) = wire::decode(payload) {
                self.on_topic(game, msg).await;
            }
        }
    }
}

/// The node's listening task: messages from Redis, and commands no node heard. A
/// subscription that closes, or that brings nothing for `silence` (the node hears its
/// own heartbeat every second on the cluster's channel, so silence is a stalled link, not
/// a quiet cluster), is given up and made again on a new connection (`rejoin`).
pub(super) async fn listen(
    bus: Arc<RedisBus>,
    mut stream: ::redis::aio::PubSubStream,
    mut unheard: mpsc::UnboundedReceiver<Unheard>,
    silence: Duration,
    stop: CancellationToken,
) {
    let mut heard = Instant::now();
    let mut check = tokio::time::interval(silence / 3);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let lost = tokio::select! {
            msg = stream.next() => match msg {
                Some(msg) => {
                    heard = Instant::now();
                    bus.on_message(msg).await;
                    None
                }
                None => Some("the subscription to Redis is lost"),
            },
            _ = check.tick() => match heard.elapsed() >= silence {
                false => None,
                // A message may be waiting behind a busy moment (the process starved of
                // CPU, say): the subscription is silent only if it has none now either.
                true => match stream.next().now_or_never() {
                    Some(Some(msg)) => {
                        heard = Instant::now();
                        bus.on_message(msg).await;
                        None
                    }
                    Some(None) => Some("the subscription to Redis is lost"),
                    None => Some("the subscription to Redis brings nothing"),
                },
            },
            Some(back) = unheard.recv() => {
                match back {
                    Unheard::Owed(o) => bus.unheard(o),
                    Unheard::Start(payload) => bus.start_unheard(&payload),
                }
                None
            }
            () = stop.cancelled() => {
                bus.leave();
                return;
            }
        };
        if let Some(why) = lost {
            tracing::error!("{why}: joining the cluster again");
            bus.directory.lost_redis(heard);
            match bus.rejoin(&stop).await {
                Some(again) => {
                    stream = again;
                    heard = Instant::now();
                }
                None => return bus.leave(),
            }
        }
    }
}

/// A subscription attempt that took longer than `REJOIN_MAX`, as an error.
fn timed_out() -> ::redis::RedisError {
    ::redis::RedisError::from((::redis::ErrorKind::Io, "no answer from Redis in time"))
}

/// Between two attempts to reach Redis again: from `REJOIN_FIRST`, doubling to
/// `REJOIN_MAX`.
const REJOIN_FIRST: Duration = Duration::from_millis(50);
const REJOIN_MAX: Duration = Duration::from_secs(2);

impl RedisBus {
    /// Subscribes again (this node's channel, the cluster's, the topics it watches), then
    /// says again what a Redis restarted empty has lost (`Directory::announce_all`) and
    /// gives this node's spectators of other nodes' games a fresh snapshot (events were
    /// lost meanwhile). Tries until it succeeds or the node stops (`None`).
    async fn rejoin(&self, stop: &CancellationToken) -> Option<::redis::aio::PubSubStream> {
        let mut wait = REJOIN_FIRST;
        loop {
            // A stalled Redis may take the connection and answer nothing.
            let again = tokio::time::timeout(REJOIN_MAX, self.subscribe_again()).await;
            match again.unwrap_or_else(|_| Err(timed_out())) {
                Ok(stream) => {
                    tracing::info!(node = self.node, "joined the cluster again");
                    // Its word to the lobby may have been lost meanwhile, and the lobby
                    // may have taken its connections for gone: it is told first, so that
                    // its clients' requests, refused while the node is cut off
                    // (`route_to_lobby`), come after.
                    if let Some(lobby) = self.lobby_last_heard() {
                        self.resubmit(lobby);
                    }
                    self.directory.set_reaches_redis(true);
                    self.reload_directory().await;
                    self.directory.announce_all();
                    self.resync_all();
                    return Some(stream);
                }
                Err(error) => tracing::warn!(%error, "Redis is still out of reach"),
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = stop.cancelled() => return None,
            }
            wait = (wait * 2).min(REJOIN_MAX);
        }
    }

    /// Reads the directory hash again (subscribed already: nothing said after the read is
    /// missed) into the mirror (`Directory::reload`). Should the read fail, the mirror
    /// stays as it was, and the cluster's messages from now on keep it.
    async fn reload_directory(&self) {
        let read = async {
            let mut con = self.client.get_multiplexed_async_connection().await?;
            ::redis::cmd("HGETALL")
                .arg(self.link.keys.games_hash())
                .query_async::<Vec<(String, Vec<u8>)>>(&mut con)
                .await
        };
        match tokio::time::timeout(REJOIN_MAX, read).await {
            Ok(Ok(entries)) => self.directory.reload(
                entries
                    .into_iter()
                    .filter_map(|(game, entry)| Some((game.parse().ok()?, wire::decode(&entry)?)))
                    .collect(),
            ),
            Ok(Err(error)) => tracing::warn!(%error, "cannot read the cluster's directory again"),
            Err(_) => tracing::warn!("the cluster's directory could not be read again in time"),
        }
    }

    async fn subscribe_again(&self) -> ::redis::RedisResult<::redis::aio::PubSubStream> {
        let (mut sink, stream) = self.client.get_async_pubsub().await?.split();
        let mut channels = vec![
            self.link.keys.own_channel(),
            self.link.keys.cluster_channel(),
        ];
        let topics: Vec<GameId> = self.watched.iter().map(|t| *t.key()).collect();
        channels.extend(topics.iter().map(|t| self.link.keys.topic_channel(*t)));
        sink.subscribe(&channels).await?;
        *self.sink.lock().await = sink;
        Ok(stream)
    }

    /// Every spectator of another node's game here is watched again: a fresh snapshot.
    fn resync_all(&self) {
        let topics: Vec<GameId> = self.watched.iter().map(|t| *t.key()).collect();
        for game in topics {
            self.resync_topic(game);
        }
    }

    /// This node's spectators of `game` (another node's) watch it again, from the node
    /// that runs it now: a fresh snapshot, then its events.
    pub(super) fn resync_topic(&self, game: GameId) {
        for conn in self.local.subscribed(game) {
            self.local.unsubscribe(game, conn);
            let reply = ReplyTo {
                conn,
                request_id: None,
                settle: false,
            };
            self.notify_game(game, GameCmd::Watch { reply });
        }
    }
}

/// A close reason from another node as the `&'static str` the outbox takes: each
/// distinct reason is kept once (the server's reasons are a few fixed strings).
fn intern(reason: String) -> &'static str {
    static KNOWN: std::sync::OnceLock<Mutex<HashSet<&'static str>>> = std::sync::OnceLock::new();
    let mut known = KNOWN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = known.get(reason.as_str()) {
        return r;
    }
    if known.len() >= 64 {
        return "closed";
    }
    let r: &'static str = Box::leak(reason.into_boxed_str());
    known.insert(r);
    r
}
