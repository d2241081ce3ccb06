//! What this node hears from Redis: messages for its connections and games, the events
//! of other nodes' games its spectators watch, and the cluster's news.

use super::*;

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
                if kill_if_full {
                    self.local.send_or_kill(conn, frame);
                } else {
                    let _ = self.local.send(conn, frame);
                }
            }
            NodeMsg::SendFramed {
                conn,
                frames,
                kill_if_full,
            } => {
                let framed = Arc::new(Framed::new(frames.into()));
                if kill_if_full {
                    self.local.send_framed_or_kill(conn, &framed, 0);
                } else {
                    let _ = self.local.send_framed(conn, &framed, 0);
                }
            }
            NodeMsg::Kill { conn } => self.local.kill(conn),
            NodeMsg::Close { conn, code, reason } => self.local.close(conn, code, intern(reason)),
            NodeMsg::Answered { conn, ok } => {
                // Owed nothing: answered here already (see `owed`).
                if self.owed.remove(&conn).is_some() {
                    self.local.notify_session(conn, Notice::Answered { ok });
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
            NodeMsg::Rematch(offer) => self.take_rematch(offer),
        }
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
                ClusterMsg::Ended { game, node } => {
                    if *node != self.node {
                        self.ended.note(*game, *node);
                    }
                    // A game watched here that ended with nobody here watching it any
                    // more (so its node sent no `Closed`): its channel is left too.
                    if self.watched.contains_key(game) {
                        self.on_topic(*game, TopicMsg::Closed).await;
                    }
                    None
                }
                _ => None,
            };
            if let Some(conn) = self.directory.heard(msg) {
                crate::connection::supersede(&**self, conn);
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

/// The node's listening task: messages from Redis, and commands no node heard.
pub(super) async fn listen(
    bus: Arc<RedisBus>,
    mut stream: ::redis::aio::PubSubStream,
    mut unheard: mpsc::UnboundedReceiver<Owed>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            msg = stream.next() => match msg {
                Some(msg) => bus.on_message(msg).await,
                None => {
                    tracing::error!("the subscription to Redis is lost: joining the cluster again");
                    bus.directory.set_reaches_redis(false);
                    match bus.rejoin(&stop).await {
                        Some(again) => stream = again,
                        None => return bus.leave(),
                    }
                }
            },
            Some(o) = unheard.recv() => bus.unheard(o),
            () = stop.cancelled() => {
                bus.leave();
                return;
            }
        }
    }
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
            match self.subscribe_again().await {
                Ok(stream) => {
                    tracing::info!(node = self.node, "joined the cluster again");
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
    fn resync_topic(&self, game: GameId) {
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
