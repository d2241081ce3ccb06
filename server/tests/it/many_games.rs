//! One player in several games at once, over real frames, on SQLite, on PostgreSQL, and in
//! cluster mode (three nodes, the games run by their players' two): three correspondence games (by
//! challenge, pool and seek) beside one live game, moves interleaved across them; a second
//! live game and one correspondence game past the limit refused; a resume that gives back
//! every game; a finished game freeing its seat.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cluster_support::Cluster;
use crate::common::*;
use elementals_protocol::messages::{ClientMsg, GameId, GameSnapshot, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

/// The correspondence limit the test's server runs with (the default, 50, would take 50
/// games to reach).
const LIMIT: usize = 3;

/// Between two asks of `my_games` while the test waits for it (under the server's rate of
/// 20 messages a second a connection).
const ASK_EVERY: Duration = Duration::from_millis(100);

/// One of the hub player's games: its id, the hub's seat, and the opponent.
struct Game {
    id: GameId,
    seat: Seat,
    opponent: TestClient,
    live: bool,
}

/// Both players' `game_start`s for the game just started; the game, hub's side.
async fn started(hub: &mut TestClient, mut opponent: TestClient) -> Game {
    let (game, seat) = hub.game_start().await;
    let (other, _) = opponent.game_start().await;
    assert_eq!(game.game_id, other.game_id);
    Game {
        id: game.game_id,
        seat,
        opponent,
        live: !game.time_control.is_correspondence(),
    }
}

async fn player(addr: SocketAddr, name: &str) -> TestClient {
    let mut client = TestClient::connect_at(addr).await;
    client.register(name).await;
    client
}

async fn create_seek(client: &mut TestClient, time_control: TimeControl) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control,
            rated: true,
        })
        .await
}

async fn join(client: &mut TestClient, preset: &str) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: preset.into(),
            rated: true,
        })
        .await
}

async fn my_game_ids(client: &mut TestClient) -> Vec<GameId> {
    let id = client.id();
    match client.request(ClientMsg::MyGames { id }).await {
        ServerMsg::OpenGames { games, .. } => games.iter().map(|g| g.game_id).collect(),
        other => panic!("expected open_games, got {other:?}"),
    }
}

fn sorted(mut ids: Vec<GameId>) -> Vec<GameId> {
    ids.sort();
    ids
}

/// Asks `my_games` until it lists exactly `ids` (in a cluster, the node asked hears of
/// games started and ended on another a moment later); fails after `WAIT`.
async fn until_my_games(client: &mut TestClient, ids: &[GameId]) {
    let expected = sorted(ids.to_vec());
    until_every("my_games lists its games", WAIT, ASK_EVERY, async || {
        equal(sorted(my_game_ids(client).await), expected.clone())
    })
    .await;
}

/// Plays round `round` of every game at once: the hub commits in each, then the
/// opponents, then the hub reveals in each, then the opponents; each side sees each
/// game's round result.
async fn interleaved_round(hub: &mut TestClient, games: &mut [Game], round: u32) {
    let nonces: Vec<([u8; 32], [u8; 32])> = games.iter().map(|_| rand::random()).collect();
    let (hub_pick, their_pick) = (1, 2);
    for (g, (n, _)) in games.iter().zip(&nonces) {
        assert_ok(&hub.commit(g.id, round, g.seat, hub_pick, *n).await);
    }
    for (g, (_, n)) in games.iter_mut().zip(&nonces) {
        let seat = g.seat.other();
        assert_ok(&g.opponent.commit(g.id, round, seat, their_pick, *n).await);
    }
    for (g, (n, _)) in games.iter().zip(&nonces) {
        let id = g.id;
        hub.expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { game_id, round: r, .. } if *game_id == id && *r == round)
        })
        .await;
        assert_ok(&hub.reveal(g.id, round, hub_pick, *n).await);
    }
    for (g, (_, n)) in games.iter_mut().zip(&nonces) {
        assert_ok(&g.opponent.reveal(g.id, round, their_pick, *n).await);
        let id = g.id;
        g.opponent
            .expect("round_result", |m| {
                matches!(m, ServerMsg::RoundResult { game_id, record, .. } if *game_id == id && record.round == round)
            })
            .await;
    }
    for g in games.iter() {
        let id = g.id;
        hub.expect("round_result", |m| {
            matches!(m, ServerMsg::RoundResult { game_id, record, .. } if *game_id == id && record.round == round)
        })
        .await;
    }
}

/// The snapshot `sync` answers for `game_id`.
async fn sync(client: &mut TestClient, game_id: GameId) -> (GameSnapshot, Option<Seat>) {
    let id = client.id();
    match client.request(ClientMsg::Sync { id, game_id }).await {
        ServerMsg::Snapshot { snapshot, seat, .. } => (snapshot, seat),
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

#[tokio::test]
async fn a_player_sits_in_three_correspondence_games_and_one_live_game_at_once() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| c.max_correspondence_games = LIMIT).await;
        let mut hub = player(server.addr, "hub").await;
        let games = two_correspondence_games(&mut hub, server.addr).await;
        two_more_and_the_rest(hub, games, server.addr, server.addr).await;
        drop(server);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_cluster_a_player_sits_in_four_games_run_by_three_nodes() {
    let cluster = Cluster::new();
    let limit = LIMIT.to_string();
    let env = [
        ("ELEMENTALS_MAX_CORRESPONDENCE_GAMES", limit.as_str()),
        // A game both of whose players are away sleeps after 1 s (its deadline is a day
        // away), and wakes on the node of the first command for it: how games 1 and 2
        // come to run on the nodes the test picks.
        ("ELEMENTALS_HIBERNATE_AFTER_SECS", "1"),
        ("ELEMENTALS_HIBERNATE_MIN_DEADLINE_SECS", "600"),
        ("ELEMENTALS_HTTP_REQUESTS_PER_IP", "0"),
    ];
    // The first node started claims the lobby's lease; a game starts on one of its
    // players' nodes (B, C), and games 1 and 2, slept, wake where commands find them.
    let lobby = cluster.node_with("a", &env).await;
    let b = cluster.node_with("b", &env).await;
    let c = cluster.node_with("c", &env).await;
    let mut hub = player(c.addr, "hub").await;
    let games = two_correspondence_games(&mut hub, b.addr).await;
    let (hub, games) = spread(&cluster, hub, games, (b.addr, c.addr)).await;
    // Game 1 runs on C, game 2 on B; the seek's game and the live game start on B or C.
    let woken = |node: SocketAddr| metric_at(node, "elementals_games_woken_total");
    assert_eq!((woken(b.addr).await, woken(c.addr).await), (1, 1));
    two_more_and_the_rest(hub, games, b.addr, c.addr).await;
    // At the end game 1 still runs on C, game 2 on B, and the game started last on B or
    // C (its first seat's node): none on the lobby's node.
    let running = |node: SocketAddr| metric_at(node, "elementals_live_games");
    let (on_a, on_b, on_c) = (
        running(lobby.addr).await,
        running(b.addr).await,
        running(c.addr).await,
    );
    assert!(
        on_a == 0 && on_b >= 1 && on_c >= 1 && on_b + on_c == 3,
        "{on_a}, {on_b}, {on_c}"
    );
}

/// Games 1 and 2, by a correspondence challenge and then a correspondence pool, the
/// hub's opponents signed in at `others_at`.
async fn two_correspondence_games(hub: &mut TestClient, others_at: SocketAddr) -> Vec<Game> {
    let mut games = Vec::new();

    // 1. A correspondence challenge, accepted.
    let mut a = player(others_at, "by_challenge").await;
    let id = hub.id();
    let challenge = ClientMsg::Challenge {
        id,
        opponent: "by_challenge".into(),
        variant: Variant::CLASSIC,
        time_control: TimeControl::CORR_1D,
        rated: true,
    };
    let ServerMsg::ChallengeSent { challenge, .. } = hub.request(challenge).await else {
        panic!("challenge refused");
    };
    let id = a.id();
    let accept = ClientMsg::AcceptChallenge {
        id,
        challenge_id: challenge.challenge_id,
    };
    assert_ok(&a.request(accept).await);
    games.push(started(hub, a).await);

    // 2. A correspondence pool, while seated in a correspondence game.
    let mut b = player(others_at, "by_pool").await;
    assert!(matches!(
        join(hub, "corr-1d").await,
        ServerMsg::Queued { .. }
    ));
    assert!(matches!(
        join(&mut b, "corr-1d").await,
        ServerMsg::Queued { .. }
    ));
    games.push(started(hub, b).await);
    games
}

/// Moves game 1 to C and game 2 to B: everyone leaves, both games sleep; game 2's
/// opponent comes back at `b`, waking it there; the hub comes back at `c`, waking game 1
/// there (`authenticated` attaches the game seated longest) and `sync`s game 2; game 1's
/// opponent comes back at `b`.
async fn spread(
    cluster: &Cluster,
    hub: TestClient,
    games: Vec<Game>,
    (b, c): (SocketAddr, SocketAddr),
) -> (TestClient, Vec<Game>) {
    let token = |client: &TestClient| client.token.clone().expect("signed in");
    let hub_token = token(&hub);
    hub.close().await;
    let mut away = Vec::new();
    for g in games {
        away.push((g.id, g.seat, token(&g.opponent)));
        g.opponent.close().await;
    }
    until("the games sleep", WAIT, async || {
        cluster.sql("SELECT count(*) FROM game_wakeups") >= 2
    })
    .await;

    let by_pool = back(b, &away[1].2, &[away[1].0]).await;
    // The hub's sign-in attaches one of its games, its `sync` the other: either way game 1
    // is woken by a command at C.
    let mut hub = TestClient::connect_at(c).await;
    let first = back_to(&mut hub, &hub_token, &[away[0].0, away[1].0]).await;
    let (other, seat) = if first == away[0].0 {
        (away[1].0, away[1].1)
    } else {
        (away[0].0, away[0].1)
    };
    let (snapshot, seated) = sync(&mut hub, other).await;
    assert_eq!((snapshot.game.game_id, seated), (other, Some(seat)));
    let by_challenge = back(b, &away[0].2, &[away[0].0]).await;
    let games = [by_challenge, by_pool]
        .into_iter()
        .zip(away)
        .map(|(opponent, (id, seat, _))| Game {
            id,
            seat,
            opponent,
            live: false,
        })
        .collect();
    (hub, games)
}

/// Signs in with `token` at `addr`; the client, once `back_to` holds.
async fn back(addr: SocketAddr, token: &str, games: &[GameId]) -> TestClient {
    let mut client = TestClient::connect_at(addr).await;
    back_to(&mut client, token, games).await;
    client
}

/// Resumes with `token` on `client`: `authenticated` names one of `games`, whose snapshot
/// (of round 1) follows; its id.
async fn back_to(client: &mut TestClient, token: &str, games: &[GameId]) -> GameId {
    let first = match client.resume(token).await {
        ServerMsg::Authenticated { game_id, .. } => game_id.expect("a game's snapshot follows"),
        other => panic!("resume failed: {other:?}"),
    };
    assert!(games.contains(&first), "{first} is none of {games:?}");
    client.token = Some(token.into());
    let snapshot = client
        .expect("the snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await;
    let ServerMsg::Snapshot { snapshot, .. } = snapshot else {
        unreachable!()
    };
    assert_eq!((snapshot.game.game_id, snapshot.round), (first, 1));
    first
}

/// The rest of the scenario, after games 1 and 2: game 3 by a correspondence seek and a
/// live game, the refusals, moves interleaved, a resume, seats freed. The opponents sign
/// in at `others_at`, the hub comes back at `hub_at`.
async fn two_more_and_the_rest(
    mut hub: TestClient,
    mut games: Vec<Game>,
    others_at: SocketAddr,
    hub_at: SocketAddr,
) {
    // 3. A correspondence seek, accepted by the hub.
    let mut c = player(others_at, "by_seek").await;
    let ServerMsg::SeekCreated { seek, .. } = create_seek(&mut c, TimeControl::CORR_3D).await
    else {
        panic!("seek refused");
    };
    let id = hub.id();
    let accept = ClientMsg::AcceptSeek {
        id,
        seek_id: seek.seek_id,
    };
    assert_ok(&hub.request(accept).await);
    games.push(started(&mut hub, c).await);

    // 4. A live game beside them.
    let mut d = player(others_at, "live_one").await;
    assert!(matches!(
        join(&mut hub, "blitz").await,
        ServerMsg::Queued { .. }
    ));
    assert!(matches!(
        join(&mut d, "blitz").await,
        ServerMsg::Queued { .. }
    ));
    games.push(started(&mut hub, d).await);
    assert_eq!(games.iter().filter(|g| g.live).count(), 1);

    let ids: Vec<GameId> = games.iter().map(|g| g.id).collect();
    until_my_games(&mut hub, &ids).await;

    // The refusals: a second live game (pool, seek, accepting one), and one more
    // correspondence game than the limit (pool, seek, accepting a challenge).
    assert_error(&join(&mut hub, "rapid").await, ErrorCode::AlreadyInGame);
    let live_seek = create_seek(&mut hub, TimeControl::BLITZ).await;
    assert_error(&live_seek, ErrorCode::AlreadyInGame);
    assert_error(&join(&mut hub, "corr-1d").await, ErrorCode::TooManyGames);
    let corr_seek = create_seek(&mut hub, TimeControl::CORR_1D).await;
    assert_error(&corr_seek, ErrorCode::TooManyGames);
    let mut e = player(others_at, "one_more").await;
    let ServerMsg::SeekCreated { seek, .. } = create_seek(&mut e, TimeControl::CORR_1D).await
    else {
        panic!("seek refused");
    };
    let id = hub.id();
    let accept = ClientMsg::AcceptSeek {
        id,
        seek_id: seek.seek_id,
    };
    assert_error(&hub.request(accept).await, ErrorCode::TooManyGames);
    assert_eq!(sorted(my_game_ids(&mut hub).await), sorted(ids.clone()));

    // Moves interleaved across the four games.
    interleaved_round(&mut hub, &mut games, 1).await;

    // A resume on a new connection gives back every game: the live one first, its
    // snapshot at once; each correspondence game's by `sync`.
    let token = hub.token.clone().expect("signed in");
    hub.close().await;
    let mut hub = TestClient::connect_at(hub_at).await;
    let live_id = games.iter().find(|g| g.live).map(|g| g.id).unwrap();
    match hub.resume(&token).await {
        ServerMsg::Authenticated {
            game_id,
            games: seated,
            ..
        } => {
            assert_eq!(game_id, Some(live_id));
            assert_eq!(seated.first(), Some(&live_id));
            assert_eq!(sorted(seated), sorted(ids.clone()));
        }
        other => panic!("resume failed: {other:?}"),
    }
    let snapshot = hub
        .expect("the live game's snapshot", |m| {
            matches!(m, ServerMsg::Snapshot { .. })
        })
        .await;
    let ServerMsg::Snapshot { snapshot, .. } = snapshot else {
        unreachable!()
    };
    assert_eq!(snapshot.game.game_id, live_id);
    for g in games.iter().filter(|g| !g.live) {
        let (snapshot, seat) = sync(&mut hub, g.id).await;
        assert_eq!((snapshot.game.game_id, seat), (g.id, Some(g.seat)));
        assert_eq!(snapshot.round, 2);
    }
    interleaved_round(&mut hub, &mut games, 2).await;

    // A finished game frees its seat: the live game resigned, a live game may start;
    // a correspondence game resigned (the seek's: in a cluster, the lobby's node hears
    // that the games ended before the hub's requests that follow `my_games` seeing it),
    // one more may.
    let live = games.iter().position(|g| g.live).unwrap();
    let live = games.remove(live);
    hub.resign(live.id).await;
    let corr = games.remove(2);
    hub.resign(corr.id).await;
    // The seats are freed as each game's actor ends, just after its `game_over`.
    let left: Vec<GameId> = games.iter().map(|g| g.id).collect();
    until_my_games(&mut hub, &left).await;
    let id = hub.id();
    let accept = ClientMsg::AcceptSeek {
        id,
        seek_id: seek.seek_id,
    };
    assert_ok(&hub.request(accept).await);
    let fifth = started(&mut hub, e).await;
    assert!(matches!(
        join(&mut hub, "blitz").await,
        ServerMsg::Queued { .. }
    ));
    let mut remaining = left;
    remaining.push(fifth.id);
    until_my_games(&mut hub, &remaining).await;
    assert!(!remaining.contains(&live.id) && !remaining.contains(&corr.id));
}
