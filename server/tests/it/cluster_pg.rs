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

use std::time::Duration;

use crate::common::*;
use crate::pg_proxy::PgProxy;
use crate::recovery_support::*;
use elementals_protocol::messages::{GameId, GameInfo, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;
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

    /// Both players hear `game_moved` (each message within `within`), then close 1012.
    async fn told_it_moved(&mut self, within: Duration) {
        for player in [&mut self.one, &mut self.two] {
            player
                .expect_within(
                    "game_moved",
                    within,
                    |m| matches!(m, ServerMsg::Notice { code, .. } if code == "game_moved"),
                )
                .await;
            assert_eq!(player.closed_with().await, Some(1012));
        }
    }

    /// Seat one commits in round 2 while the node cannot log it: answered `unavailable`.
    async fn commit_refused(&mut self) {
        let g = self.id();
        let refused = self
            .one
            .commit(g, 2, Seat::One, TWO_WINS.0, rand::random())
            .await;
        assert_error(&refused, ErrorCode::Unavailable);
    }

    /// A stall that began at `stalled`: the commit made in it is refused, and both players
    /// are told `game_moved` within a lease and 3 s of its start, while it goes on.
    async fn told_it_moved_in_the_stall(&mut self, stalled: Instant) {
        self.commit_refused().await;
        self.told_it_moved(LEASE + WAIT).await;
        let told = stalled.elapsed();
        assert!(told < LEASE + Duration::from_secs(3), "{told:?}");
    }

    /// Once `node` runs the game again (claimed back), both players resume there: round 2,
    /// under way when the game stopped, is voided, and they finish the game, rated once.
    async fn resumed_and_finished_at(&self, node: &ServerProcess) {
        until("the game claimed back", WAIT, async || {
            node.metric("elementals_live_games").await == 1
        })
        .await;
        let (t1, t2) = self.tokens();
        let (mut one, snapshot) = resume_at(node.addr, &t1).await;
        assert_round_voided(&snapshot.expect("seated again"), 2);
        let (mut two, _) = resume_at(node.addr, &t2).await;
        one.expect("the round again", |m| {
            matches!(m, ServerMsg::RoundStart { round: 2, .. })
        })
        .await;
        two_wins_from(&mut one, &mut two, self.id(), 2).await;
        let players = &self.info.players;
        node.assert_rated_once(&players.two.name, &players.one.name)
            .await;
    }
}

/// Waits until the nodes run `count` live games between them (claims are made on a
/// timer: there is no event to wait on).
async fn until_running(nodes: [&ServerProcess; 2], count: u64, within: Duration) {
    until("the games running on the nodes", within, async || {
        let mut running = 0;
        for node in nodes {
            running += node.metric("elementals_live_games").await;
        }
        equal(running, count)
    })
    .await;
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
    // A node refused a step says so at once (each runs the game of its own players); one
    // with no game would at its next claim, within a second.
    for node in [&a, &b] {
        node.until_health(503).await;
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
    // (The lobby's lease, under the nil id, is no game's.)
    assert_eq!(db.sql("SELECT count(*) FROM game_leases WHERE game_id <> '00000000-0000-0000-0000-000000000000'"), 0);
    assert_eq!(db.sql("SELECT count(*) FROM games"), 2);
    for node in [&a, &b] {
        node.until_health(200).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_postgresql_stalls_answers_503_and_200_once_it_answers_again() {
    let proxy = PgProxy::start().await;
    let mut db = Database::on(Backend::Postgres);
    db.connect_through(proxy.url_for(db.url()));
    let a =
        ServerProcess::start_node_with(&db, "a", &[("ELEMENTALS_GAME_LOG_STALL_MS", "1000")]).await;
    // PostgreSQL stalls: connections held open, nothing answered, no error. The node's
    // next claim (each second) hangs, and past the limit the node says so.
    proxy.pause();
    a.until_health(503).await;
    let (_, body) = a.http_get("/healthz").await;
    assert!(body.contains("stalled"), "{body}");
    // Answered again: the claim finishes, and so does the 503.
    proxy.resume();
    a.until_health(200).await;
}

/// PostgreSQL stalls under a node with a game (connections held open, nothing answered):
/// a move sent then waits on its append. Once the node's leases have lapsed unrenewed (a
/// lease after its last renewal) the move is answered `unavailable` and both players are
/// told `game_moved` (close 1012) while the stall goes on, not when it ends. Answered
/// again, the node claims the game back, and the players resume and finish it, rated once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_postgresql_stalls_tells_its_players_game_moved_within_a_lease() {
    let proxy = PgProxy::start().await;
    let mut db = Database::on(Backend::Postgres);
    db.connect_through(proxy.url_for(db.url()));
    let a = ServerProcess::start_node(&db, "a").await;
    let mut game = Game::start(&a, ("pia01", "quo01")).await;

    proxy.pause();
    game.told_it_moved_in_the_stall(Instant::now()).await;

    proxy.resume();
    game.resumed_and_finished_at(&a).await;
}

/// A node's step log stuck in a write on its own connection while its lease renewals,
/// on theirs, go through (`ELEMENTALS_STALL_LOG_WHEN`): after half a lease of it the node
/// renews nothing, so the move waiting on its append is answered `unavailable` and both
/// players are told `game_moved` within a lease and a half, while the stall goes on. Once
/// the log moves again the node claims the game back and the players finish it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_step_log_is_stuck_lets_its_leases_lapse_though_renewals_work() {
    let db = Database::on(Backend::Postgres);
    let hooks = tempfile::tempdir().unwrap();
    let stall = hooks.path().join("stall-the-step-log");
    let a = ServerProcess::start_node_with(
        &db,
        "a",
        &[("ELEMENTALS_STALL_LOG_WHEN", stall.to_str().unwrap())],
    )
    .await;
    let mut game = Game::start(&a, ("tia01", "uli01")).await;

    std::fs::write(&stall, b"").unwrap();
    game.told_it_moved_in_the_stall(Instant::now()).await;

    std::fs::remove_file(&stall).unwrap();
    game.resumed_and_finished_at(&a).await;
}

/// A node's step log loses the answer to a commit (the commit applied; as when
/// PostgreSQL ends the session during it): in cluster mode the node does not stop. It gives
/// every lease up and starts a new epoch, so its games stop (the move answered
/// `unavailable`, `game_moved`, close 1012) and lapse at once; it claims them back from
/// their logs, and the players resume and finish, rated once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_is_lost_gives_the_games_up_and_the_node_lives_on() {
    let db = Database::on(Backend::Postgres);
    let hooks = tempfile::tempdir().unwrap();
    let trigger = hooks.path().join("lose-the-next-commit");
    let a = ServerProcess::start_node_with(
        &db,
        "a",
        &[("ELEMENTALS_FAIL_SYNC_WHEN", trigger.to_str().unwrap())],
    )
    .await;
    let mut game = Game::start(&a, ("ria01", "sam01")).await;

    std::fs::write(&trigger, b"").unwrap();
    game.commit_refused().await;
    assert!(!trigger.exists(), "the hook lost a commit's answer");
    game.told_it_moved(WAIT).await;

    // The node lives on, claims the game back from its log, and the players finish it
    // there.
    game.resumed_and_finished_at(&a).await;
    a.until_health(200).await;
}

/// Every session of the nodes is ended by PostgreSQL (`pg_terminate_backend`, as an
/// operator or a failover of the database does) between two moves: no node stops, each
/// connects again, and the games play on and finish, rated once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_ended_by_postgresql_cost_no_node_and_no_game() {
    let db = Database::on(Backend::Postgres);
    let a = ServerProcess::start_node(&db, "a").await;
    let b = ServerProcess::start_node(&db, "b").await;
    let mut games = [
        Game::start(&a, ("tia01", "uma01")).await,
        Game::start(&b, ("vic01", "wes01")).await,
    ];
    let ended = db.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    assert!(ended >= 6, "each node's sessions ended: {ended}");
    for game in &mut games {
        let g = game.id();
        two_wins_from(&mut game.one, &mut game.two, g, 2).await;
    }
    for (game, node) in games.iter().zip([&a, &b]) {
        let players = &game.info.players;
        node.assert_rated_once(&players.two.name, &players.one.name)
            .await;
        assert_eq!(node.http_get("/healthz").await.0, 200);
    }
}

/// An operator's session holds one game's lease row locked (a transaction left open).
/// Only that game waits: its move is answered `unavailable` once the lock wait runs out
/// (the game held, its clocks stopped), while the node's other game plays on and
/// `/healthz` stays 200. Once the lock goes, the held move is logged and the game goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_on_one_games_lease_row_holds_up_that_game_alone() {
    let db = Database::on(Backend::Postgres);
    let a = ServerProcess::start_node(&db, "a").await;
    let mut locked = Game::start(&a, ("lea03", "max03")).await;
    let mut free = Game::start(&a, ("ned03", "ola03")).await;
    let g = locked.id();
    let lock = db.hold(&format!(
        "SELECT 1 FROM game_leases WHERE game_id = '{g}' FOR UPDATE"
    ));
    assert_eq!(lock.rows, 1);

    let n1 = rand::random();
    let refused = locked.one.commit(g, 2, Seat::One, TWO_WINS.0, n1).await;
    assert_error(&refused, ErrorCode::Unavailable);
    // The other game's steps are written meanwhile: the locked game's retries wait
    // alone, and briefly.
    let f = free.id();
    play_round(&mut free.one, &mut free.two, f, 2, TWO_WINS).await;
    assert_eq!(a.http_get("/healthz").await.0, 200);

    // The lock goes: seat one's held commit is logged and published, and the round goes on.
    drop(lock);
    locked
        .two
        .expect("seat one's held commit", |m| {
            matches!(
                m,
                ServerMsg::Committed {
                    seat: Seat::One,
                    round: 2,
                    ..
                }
            )
        })
        .await;
    let n2 = rand::random();
    assert_ok(&locked.two.commit(g, 2, Seat::Two, TWO_WINS.1, n2).await);
    for player in [&mut locked.one, &mut locked.two] {
        player
            .expect("reveal_phase", |m| {
                matches!(m, ServerMsg::RevealPhase { round: 2, .. })
            })
            .await;
    }
    assert_ok(&locked.one.reveal(g, 2, TWO_WINS.0, n1).await);
    assert_ok(&locked.two.reveal(g, 2, TWO_WINS.1, n2).await);
    locked
        .one
        .expect(
            "round 2's result",
            |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == 2),
        )
        .await;
}
