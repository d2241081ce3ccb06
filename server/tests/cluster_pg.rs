//! Cluster mode (issue 26): PostgreSQL restarted under a running cluster, with real server
//! processes. The shared PostgreSQL server is not restarted (other tests use it at the
//! same time): every node reaches it through a loopback TCP proxy of the test's own,
//! which the test cuts (each connection closed, new ones refused, as a restart does) and
//! restores.
//!
//! What clients see: during the outage moves are answered `unavailable` and `/healthz`
//! answers 503 on every node; once the leases lapse unrenewed, each game stops on its
//! node and its players hear `game_moved` and are closed 1012. After the restore each
//! game is claimed by exactly one node, every acknowledged round is there, and the
//! players resume through any node and finish, rated once.

mod common;
mod pg_proxy;
mod recovery_support;

use std::time::Duration;

use common::*;
use elementals_protocol::messages::{GameId, GameInfo, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
use pg_proxy::PgProxy;
use recovery_support::*;
use tokio::time::Instant;

/// How long a lease lasts unrenewed (`db::LEASE`).
const LEASE: Duration = Duration::from_secs(6);

/// A game of two players on one node, round 1 played (acknowledged), round 2 to come.
struct Game {
    one: TestClient,
    two: TestClient,
    info: GameInfo,
}

impl Game {
    async fn start(node: &ServerProcess, names: (&str, &str)) -> Game {
        let (mut one, mut two, info) = paired_at(node.addr, names.0, names.1).await;
        play_round(&mut one, &mut two, info.game_id, 1, TWO_WINS).await;
        Game { one, two, info }
    }

    fn id(&self) -> GameId {
        self.info.game_id
    }

    fn tokens(&self) -> (String, String) {
        (
            self.one.token.clone().unwrap(),
            self.two.token.clone().unwrap(),
        )
    }
}

/// Waits until the nodes run `count` live games between them (claims are made on a
/// timer: there is no event to wait on).
async fn until_running(nodes: [&ServerProcess; 2], count: u64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let mut running = 0;
        for node in nodes {
            running += node.metric("elementals_live_games").await;
        }
        if running == count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{running} games running, not {count}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_restarted_under_a_cluster_loses_no_round_and_each_game_runs_on_one_node() {
    let proxy = PgProxy::start().await;
    let mut db = Database::on(Backend::Postgres);
    db.connect_through(proxy.url_for(db.url()));
    let a = ServerProcess::start_node(&db, "a").await;
    let b = ServerProcess::start_node(&db, "b").await;
    let mut games = [
        Game::start(&a, ("lea01", "max01")).await,
        Game::start(&b, ("ned01", "ola01")).await,
    ];
    let tokens: Vec<_> = games.iter().map(Game::tokens).collect();
    let ids: Vec<_> = games.iter().map(Game::id).collect();
    for game in &mut games {
        game.one.received_before_pong().await;
        game.two.received_before_pong().await;
    }

    // PostgreSQL goes away: moves are refused on both nodes, and both say so.
    proxy.cut().await;
    let cut = Instant::now();
    for game in &mut games {
        let g = game.id();
        let refused = game
            .one
            .commit(g, 2, Seat::One, TWO_WINS.0, rand::random())
            .await;
        assert_error(&refused, ErrorCode::Unavailable);
    }
    for node in [&a, &b] {
        let (status, body) = node.http_get("/healthz").await;
        assert_eq!(status, 503, "{body}");
    }
    // The leases lapse unrenewed: every game stops on its node at once, and its players
    // are told to reconnect.
    for game in &mut games {
        for player in [&mut game.one, &mut game.two] {
            player
                .expect_within(
                    "game_moved",
                    LEASE + WAIT,
                    |m| matches!(m, ServerMsg::Notice { code, .. } if code == "game_moved"),
                )
                .await;
            assert_eq!(player.closed_with().await, Some(1012));
        }
    }
    let stopped = cut.elapsed();
    assert!(stopped < LEASE + Duration::from_secs(3), "{stopped:?}");
    for node in [&a, &b] {
        assert_eq!(node.metric("elementals_live_games").await, 0);
    }

    // PostgreSQL is back: each game is claimed by one node, once.
    proxy.restore();
    until_running([&a, &b], 2, WAIT).await;
    for g in &ids {
        assert_eq!(
            db.sql(&format!(
                "SELECT count(*) FROM game_leases WHERE game_id = '{g}'"
            )),
            1
        );
    }

    // The players resume through the node they were not on: round 1 is there, the round
    // under way (refused, never acknowledged) is voided, and the games finish rated once.
    let nodes = [&b, &a];
    for (((game, g), (t1, t2)), node) in games.iter().zip(&ids).zip(&tokens).zip(nodes) {
        let (mut one, snapshot) = resume_at(node.addr, t1).await;
        let snapshot = snapshot.expect("seat one is seated again");
        assert_round_voided(&snapshot, 2);
        let (mut two, _) = resume_at(node.addr, t2).await;
        one.expect("the round again", |m| {
            matches!(m, ServerMsg::RoundStart { round: 2, .. })
        })
        .await;
        two_wins_from(&mut one, &mut two, *g, 2).await;
        let players = &game.info.players;
        node.assert_rated_once(&players.two.name, &players.one.name)
            .await;
    }
    assert_eq!(db.sql("SELECT count(*) FROM game_leases"), 0);
    assert_eq!(db.sql("SELECT count(*) FROM games"), 2);
    for node in [&a, &b] {
        until_healthy(node).await;
    }
}

/// Waits until `/healthz` answers 200 again (the step log says so after its next write).
async fn until_healthy(node: &ServerProcess) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = node.http_get("/healthz").await;
        if status == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "/healthz still {status}: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
