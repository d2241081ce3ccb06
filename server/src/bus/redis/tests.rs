use std::time::Duration;

use super::topic::MAX_RESYNC_ATTEMPTS;
use super::wire::{self, NodeMsg, TopicMsg, WireCmd};
use super::*;
use crate::msg::SeatAction;
use bytes::Bytes;
use elementals_protocol::rules::Seat;

fn reply(conn: ConnId) -> ReplyTo {
    ReplyTo {
        conn,
        request_id: Some(7),
        settle: true,
    }
}

/// Through MessagePack and back, as across Redis.
fn across(cmd: GameCmd) -> GameCmd {
    let game = GameId(uuid::Uuid::new_v4());
    let msg = NodeMsg::ToGame {
        game,
        cmd: WireCmd::of(cmd).unwrap(),
    };
    match wire::decode::<NodeMsg>(&wire::encode(&msg)).unwrap() {
        NodeMsg::ToGame { game: g, cmd } => {
            assert_eq!(g, game);
            cmd.into_cmd()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn game_commands_cross_nodes_as_they_were() {
    let attach = across(GameCmd::Attach {
        seat: Seat::Two,
        reply: reply(9),
        prelude: Some(Bytes::from_static(b"hi")),
    });
    assert!(matches!(
        attach,
        GameCmd::Attach { seat: Seat::Two, reply: r, prelude: Some(p) } if r == reply(9) && &p[..] == b"hi"
    ));
    let arrived = Instant::now() - Duration::from_millis(40);
    let act = across(GameCmd::Act {
        seat: Seat::One,
        action: SeatAction::Reveal {
            round: 3,
            pick: 5,
            nonce: vec![1; 32],
        },
        reply: reply(4),
        arrived,
    });
    match act {
        GameCmd::Act {
            seat: Seat::One,
            action:
                SeatAction::Reveal {
                    round: 3,
                    pick: 5,
                    nonce,
                },
            reply: r,
            arrived: there,
        } => {
            assert_eq!((nonce, r), (vec![1; 32], reply(4)));
            // Judged at (about) the instant it arrived on the other node, not later.
            assert!(
                there <= arrived + Duration::from_millis(5),
                "{there:?} {arrived:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let detach = across(GameCmd::Detach {
        seat: Seat::One,
        conn_id: 5,
    });
    assert!(matches!(
        detach,
        GameCmd::Detach {
            seat: Seat::One,
            conn_id: 5
        }
    ));
    assert!(
        matches!(across(GameCmd::Watch { reply: reply(2) }), GameCmd::Watch { reply: r } if r == reply(2))
    );
    assert!(matches!(
        across(GameCmd::Unwatch { conn_id: 8 }),
        GameCmd::Unwatch { conn_id: 8 }
    ));
}

#[test]
fn a_connection_id_names_its_node_and_a_bot_seat_names_none() {
    let first = (u64::from(3u16) << NODE_SHIFT) | 1;
    assert_eq!(node_of(first), 3);
    assert_eq!(node_of(first + 1_000_000), 3);
    assert_eq!(node_of((u64::from(16_383u16) << NODE_SHIFT) | 1), 16_383);
    // A bot's seat (bit 62) and a connection of a server outside cluster mode.
    assert_eq!(node_of(1 << 62), 0);
    assert_eq!(node_of(42), 0);
}

#[test]
fn garbage_on_a_channel_is_dropped_not_applied() {
    assert!(wire::decode::<NodeMsg>(b"\xc1 not msgpack").is_none());
    assert!(wire::decode::<NodeMsg>(&[]).is_none());
}

/// The Redis `.ci/services` starts.
const REDIS: &str = "redis://127.0.0.1:6379";

/// A cluster name of the test's own: tests running at once share no keys or channels.
fn cluster_name() -> String {
    format!("unit-{}-{:08x}", std::process::id(), rand::random::<u32>())
}

/// A node on Redis under cluster `name`.
async fn node_on_redis(name: &str) -> (Arc<RedisBus>, CancellationToken) {
    let config = ClusterConfig {
        redis_url: REDIS.into(),
        name: name.into(),
        node_id: "unit".into(),
        lease: crate::db::LEASE,
        silence: std::time::Duration::from_secs(3),
        node_timeout: directory::NODE_TIMEOUT,
    };
    let stop = CancellationToken::new();
    let bus = RedisBus::start(&config, 1, stop.clone())
        .await
        .expect("this test needs Redis at 127.0.0.1:6379: start it with `bash .ci/services`");
    (bus, stop)
}

fn forget(name: &str) {
    let mut con = ::redis::Client::open(REDIS)
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{name}:*"))
        .query(&mut con)
        .unwrap();
    if !keys.is_empty() {
        ::redis::cmd("DEL").arg(keys).query::<()>(&mut con).unwrap();
    }
}

/// Node `node`'s channel in cluster `name`, heard in that node's place.
async fn hear_node(name: &str, node: u16) -> ::redis::aio::PubSubStream {
    let client = ::redis::Client::open(REDIS).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub
        .subscribe(format!("{name}:node:{node}"))
        .await
        .unwrap();
    pubsub.into_on_message()
}

/// The game and command `msg`, heard on a node's channel, carries, if it is a game's.
fn to_game(msg: &::redis::Msg) -> Option<(GameId, GameCmd)> {
    match wire::decode::<NodeMsg>(msg.get_payload_bytes())? {
        NodeMsg::ToGame { game, cmd } => Some((game, cmd.into_cmd())),
        _ => None,
    }
}

/// Asserts that `cmd` watches the game again for `conn` on the bus's own account: no
/// request of the client's is behind it.
fn assert_watch_again(cmd: GameCmd, conn: ConnId) {
    assert!(
        matches!(&cmd, GameCmd::Watch { reply } if reply.conn == conn && reply.request_id.is_none()),
        "{cmd:?}"
    );
}

/// A node's mirror of the cluster, with no Redis behind it.
fn mirror() -> Directory {
    Directory::new(
        1,
        Link::nowhere(Keys::new("t", 1, "n")),
        crate::db::LEASE,
        directory::NODE_TIMEOUT,
    )
}

/// Game `game`'s directory entry, run by `node`.
fn dir_entry(game: GameId, node: u16) -> wire::DirEntry {
    use elementals_protocol::messages::{LiveGame, PlayerInfo, SeatPair};
    use elementals_protocol::rules::Variant;
    use elementals_protocol::TimeControl;
    let player = PlayerInfo {
        name: "p".into(),
        rating: 1.0,
        guest: false,
        bot: false,
    };
    wire::DirEntry {
        node,
        seats: SeatPair::new(1, 2),
        summary: LiveGame {
            game_id: game,
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
            players: SeatPair::new(player.clone(), player),
            round: 1,
            positions: vec![0; 5],
            spectators: 0,
            correspondence: false,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_lagging_on_another_node_is_watched_again_three_times_then_dropped() {
    use futures::StreamExt;

    let name = cluster_name();
    let (bus, stop) = node_on_redis(&name).await;
    // The game runs on node `far`, whose channel this test hears in its place.
    let far: u16 = 16_000;
    let mut heard = hear_node(&name, far).await;
    let game = GameId(uuid::Uuid::new_v4());
    bus.directory.load(vec![(game, dir_entry(game, far))]);
    // A spectator here whose queue holds one item, and which never reads it.
    let conn = bus.first_conn_id();
    let (outbox, _rx) = crate::outbox::Outbox::new(conn, 1);
    bus.connect(&outbox);
    let frames = || TopicMsg::Frames {
        frames: vec![Bytes::from_static(b"event")],
    };
    for attempt in 1..=MAX_RESYNC_ATTEMPTS + 1 {
        // The game subscribes it (after a watch: a snapshot would come next).
        bus.apply(NodeMsg::Subscribe { topic: game, conn });
        for _ in 0..3 {
            bus.on_topic(game, frames()).await;
        }
        if attempt > MAX_RESYNC_ATTEMPTS {
            break;
        }
        // It lags: the game is asked to watch again for it.
        let msg = tokio::time::timeout(Duration::from_secs(10), heard.next())
            .await
            .expect("the game's node hears of it")
            .unwrap();
        let (g, cmd) = to_game(&msg).expect("a command for the game");
        assert_eq!(g, game);
        assert_watch_again(cmd, conn);
        assert!(!outbox.is_closed(), "attempt {attempt}");
    }
    // The fourth time in a row it is dropped.
    assert!(outbox.is_closed());
    stop.cancel();
    forget(&name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_snapshot_no_node_heard_is_asked_again_at_the_next_tick() {
    use futures::StreamExt;

    let name = cluster_name();
    let (bus, stop) = node_on_redis(&name).await;
    // The game runs on node `far`, which does not hear its channel yet (it is rejoining).
    let far: u16 = 16_001;
    let game = GameId(uuid::Uuid::new_v4());
    bus.directory.load(vec![(game, dir_entry(game, far))]);
    let conn = bus.first_conn_id();
    let (outbox, _rx) = crate::outbox::Outbox::new(conn, 8);
    bus.connect(&outbox);
    bus.apply(NodeMsg::Subscribe { topic: game, conn });
    bus.resync_topic(game);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !bus.resync_later.contains_key(&(game, conn)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watch is kept to ask again"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The node hears its channel now: the next tick asks it again.
    let mut heard = hear_node(&name, far).await;
    bus.tick(0);
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), heard.next())
            .await
            .expect("the game's node is asked again")
            .unwrap();
        if let Some((g, cmd)) = to_game(&msg) {
            assert_eq!(g, game);
            assert_watch_again(cmd, conn);
            break;
        }
    }
    assert!(!bus.resync_later.contains_key(&(game, conn)));
    stop.cancel();
    forget(&name);
}

mod mirror;

/// A game's start for node `node` (its first seat's connection there).
fn new_game(node: u16) -> crate::msg::NewGame {
    use crate::msg::Member;
    use crate::record::RecordPlayer;
    use elementals_protocol::messages::{PlayerInfo, SeatPair};
    use elementals_protocol::rules::Variant;
    use elementals_protocol::TimeControl;
    let member = |account: u64, conn: ConnId| Member {
        account: account as _,
        info: PlayerInfo {
            name: format!("p{account}"),
            rating: 1.0,
            guest: false,
            bot: false,
        },
        conn_id: conn,
    };
    let players = SeatPair::new(
        member(1, (u64::from(node) << NODE_SHIFT) | 1),
        member(2, (u64::from(node) << NODE_SHIFT) | 2),
    );
    crate::msg::NewGame {
        setup: crate::record::GameSetup {
            game_id: GameId(uuid::Uuid::new_v4()),
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
            players: players.clone().map(|m| RecordPlayer {
                account_id: m.account,
                name: m.info.name,
                guest: m.info.guest,
                rating: m.info.rating,
            }),
        },
        players,
        bot: None,
    }
}

/// The games started on this node, as its starter hears them.
fn starts_here(bus: &RedisBus) -> mpsc::UnboundedReceiver<GameId> {
    let (tx, rx) = mpsc::unbounded_channel();
    bus.set_starter(Some(Arc::new(move |game: crate::msg::NewGame| {
        let _ = tx.send(game.setup.game_id);
    })));
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_start_no_node_hears_starts_here_and_one_heard_does_not() {
    use futures::StreamExt;

    let name = cluster_name();
    let (bus, stop) = node_on_redis(&name).await;
    let mut started = starts_here(&bus);
    // Node `far` hears its channel (this test, in its place); node `gone`, alive a moment
    // ago by the directory, hears nothing: its link to Redis was lost.
    let (far, gone): (u16, u16) = (16_002, 16_003);
    let mut heard = hear_node(&name, far).await;
    bus.directory.heard_from(far);
    bus.directory.heard_from(gone);

    let there = new_game(far);
    let there_id = there.setup.game_id;
    bus.start_game(there);
    let msg = tokio::time::timeout(Duration::from_secs(10), heard.next())
        .await
        .expect("the game's node hears its start")
        .unwrap();
    assert!(matches!(
        wire::decode::<NodeMsg>(msg.get_payload_bytes()),
        Some(NodeMsg::StartGame(game)) if game.setup.game_id == there_id
    ));

    // The start nobody hears comes back and starts here; the one heard before it (the
    // link writes in order) did not.
    let lost = new_game(gone);
    let lost_id = lost.setup.game_id;
    bus.start_game(lost);
    let here = tokio::time::timeout(Duration::from_secs(10), started.recv())
        .await
        .expect("the unheard start comes back");
    assert_eq!(here, Some(lost_id));
    assert!(started.try_recv().is_err());
    stop.cancel();
    forget(&name);
}

#[test]
fn every_redis_connection_probes_a_silent_peer_and_bounds_unacknowledged_data() {
    let client = client(REDIS).unwrap();
    let tcp = client.get_connection_info().tcp_settings();
    assert!(tcp.nodelay());
    assert!(tcp.keepalive().is_some());
    assert_eq!(tcp.user_timeout(), Some(TCP_USER_TIMEOUT));
}
