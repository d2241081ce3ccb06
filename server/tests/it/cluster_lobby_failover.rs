//! The one lobby of a cluster moves with its lease: its node is killed with `kill -9`
//! while 100 players wait in pools on three other nodes; once another node has claimed
//! the lobby's lease, every one of them is still waiting (their nodes gave the new lobby
//! what they held), and each is paired exactly once. Likewise an open seek and challenge
//! are taken after the claim, by their ids. A game the lobby started runs on its players'
//! node, not the lobby's: the lobby's node dies, and the game goes on where it was.

use std::collections::HashMap;
use std::time::Duration;

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::ErrorCode;
use tokio::time::Instant;

/// How many players wait as the lobby's node dies.
const WAITING: usize = 100;

/// The nodes' leases (`--lease-ms`): a renewal every second, a claim every half second;
/// and no caps on the accounts and connections of this test's one address.
const SETTINGS: &[(&str, &str)] = &[
    ("ELEMENTALS_LEASE_MS", "3000"),
    ("ELEMENTALS_NEW_ACCOUNTS_PER_IP", "0"),
    ("ELEMENTALS_MAX_CONNECTIONS_PER_IP", "1000"),
];

/// The lobby is claimed within this of its node's death (a lease, 3 s, and a claim's
/// interval, 0.5 s, with room to spare).
const CLAIMED: Duration = Duration::from_secs(8);

/// Player `i`'s pool: one of its own (a variant of its own), so that nobody is paired
/// before the second wave comes.
fn variant(i: usize) -> Variant {
    let i = u16::try_from(i).unwrap();
    Variant {
        number: 3 + 2 * (i / 20),
        range: 1,
        distance: 1 + i % 20,
    }
}

async fn join(client: &mut TestClient, i: usize) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::JoinPool {
            id,
            variant: variant(i),
            time_control: "blitz".into(),
            rated: false,
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lobbys_node_killed_while_100_wait_on_three_nodes_each_is_paired_once_after_the_claim()
{
    let cluster = Cluster::new();
    // The first node claims the lobby's lease as it starts.
    let lobby = cluster.node_with("lobby", SETTINGS).await;
    let nodes = [
        cluster.node_with("a", SETTINGS).await,
        cluster.node_with("b", SETTINGS).await,
        cluster.node_with("c", SETTINGS).await,
    ];
    let mut waiting = Vec::with_capacity(WAITING);
    for i in 0..WAITING {
        let mut client = signed_in(&nodes[i % 3], &format!("w{i:03}")).await;
        let queued = join(&mut client, i).await;
        assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
        waiting.push(client);
    }
    let killed = Instant::now();
    lobby.kill().await;

    // A second wave, one player for each pool, once the lobby runs again (a request for
    // a lobby that is moving is answered `internal`: asked again).
    let mut second = Vec::with_capacity(WAITING);
    for i in 0..WAITING {
        let mut client = signed_in(&nodes[(i + 1) % 3], &format!("s{i:03}")).await;
        let every = Duration::from_millis(100);
        until_every(
            "the lobby moved",
            killed + CLAIMED,
            every,
            async || match join(&mut client, i).await {
                ServerMsg::Queued { .. } => true,
                ServerMsg::Error { message, .. } if message.contains("moving") => false,
                other => panic!("{other:?}"),
            },
        )
        .await;
        second.push(client);
    }

    // Each of the first wave is paired with its pool's second player, once.
    let mut games = HashMap::new();
    for (i, client) in waiting.iter_mut().enumerate() {
        let (game, _) = client.game_start().await;
        let names = [game.players.one.name.clone(), game.players.two.name.clone()];
        assert!(
            names.contains(&format!("w{i:03}")) && names.contains(&format!("s{i:03}")),
            "w{i:03} paired in {names:?}"
        );
        assert!(
            games.insert(game.game_id, i).is_none(),
            "one game for two pools"
        );
    }
    for (i, client) in second.iter_mut().enumerate() {
        let (game, _) = client.game_start().await;
        assert_eq!(games.get(&game.game_id), Some(&i));
    }
    // Nobody is left waiting.
    for client in waiting.iter_mut().chain(second.iter_mut()) {
        let id = client.id();
        let again = client.request(ClientMsg::LeavePool { id }).await;
        assert_error(&again, ErrorCode::NotQueued);
    }
}

/// `client`'s request, asked again while the lobby is moving; its answer.
async fn once_the_lobby_answers(
    client: &mut TestClient,
    request: impl Fn(&mut TestClient) -> ClientMsg,
    since: Instant,
) -> ServerMsg {
    let every = Duration::from_millis(100);
    until_every("the lobby moved", since + CLAIMED, every, async || {
        let msg = request(client);
        match client.request(msg).await {
            ServerMsg::Error { message, .. } if message.contains("moving") => None,
            answer => Some(answer),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seek_and_a_challenge_open_as_the_lobbys_node_dies_are_taken_after_the_claim_by_their_ids(
) {
    let cluster = Cluster::new();
    let lobby = cluster.node_with("lobby", SETTINGS).await;
    let a = cluster.node_with("a", SETTINGS).await;
    let b = cluster.node_with("b", SETTINGS).await;
    let mut seeker = signed_in(&a, "seeker").await;
    let seek_id = seek_id_at(&mut seeker).await;
    let mut challenger = signed_in(&a, "challenger").await;
    let mut challenged = signed_in(&b, "challenged").await;
    let id = challenger.id();
    let sent = challenger
        .request(ClientMsg::Challenge {
            id,
            opponent: "challenged".into(),
            variant: Variant::CLASSIC,
            time_control: elementals_protocol::TimeControl::preset("blitz").unwrap(),
            rated: false,
        })
        .await;
    let ServerMsg::ChallengeSent { challenge, .. } = sent else {
        panic!("{sent:?}");
    };
    challenged
        .expect("challenge_received", |m| {
            matches!(m, ServerMsg::ChallengeReceived { .. })
        })
        .await;
    let killed = Instant::now();
    lobby.kill().await;

    // The new lobby lists the seek under its id, and takes it and the challenge.
    let mut taker = signed_in(&b, "taker").await;
    let listed =
        once_the_lobby_answers(&mut taker, |c| ClientMsg::ListSeeks { id: c.id() }, killed).await;
    let ServerMsg::Seeks { seeks, .. } = listed else {
        panic!("{listed:?}");
    };
    assert_eq!(
        seeks.iter().map(|s| s.seek_id).collect::<Vec<_>>(),
        [seek_id]
    );
    let accept = |c: &mut TestClient| ClientMsg::AcceptSeek {
        id: c.id(),
        seek_id,
    };
    assert_ok(&once_the_lobby_answers(&mut taker, accept, killed).await);
    let game = started(&mut taker).await;
    assert_eq!(started(&mut seeker).await, game);
    let challenge_id = challenge.challenge_id;
    let accept = |c: &mut TestClient| ClientMsg::AcceptChallenge {
        id: c.id(),
        challenge_id,
    };
    assert_ok(&once_the_lobby_answers(&mut challenged, accept, killed).await);
    let game = started(&mut challenged).await;
    assert_eq!(started(&mut challenger).await, game);
}

/// The lobby's lease, a row of `game_leases` under the nil game id.
const LOBBY_LEASE: &str = "00000000-0000-0000-0000-000000000000";

/// How many leases of `game` node `node` holds (0 or 1).
fn lease_of(game: &str, node: &str) -> String {
    format!("SELECT count(*) FROM game_leases WHERE game_id = '{game}' AND node_id = '{node}'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_of_two_players_on_b_paired_by_the_lobby_on_a_runs_on_b_and_outlives_a() {
    let cluster = Cluster::new();
    let a = cluster.node_with("a", SETTINGS).await;
    let b = cluster.node_with("b", SETTINGS).await;
    assert_eq!(
        cluster.sql(&lease_of(LOBBY_LEASE, "a")),
        1,
        "the lobby runs on A"
    );
    // Both players on B, paired by the lobby on A.
    let (mut one, mut two, game) = paired_at(b.addr, "ann", "bob").await;
    let g = game.game_id.to_string();
    cluster
        .until_sql(&lease_of(&g, "b"), 1, WAIT, "B takes the game's lease")
        .await;
    let token = format!("SELECT token FROM game_leases WHERE game_id = '{g}'");
    let first = cluster.sql(&token);
    play_round(&mut one, &mut two, game.game_id, 1, (5, 2)).await;
    for client in [&mut one, &mut two] {
        client
            .expect("round 2 starts", |m| {
                matches!(m, ServerMsg::RoundStart { round: 2, .. })
            })
            .await;
    }

    let killed = Instant::now();
    a.kill().await;
    // B claims the lobby: its claims have run since A's leases lapsed.
    cluster
        .until_sql(
            &lease_of(LOBBY_LEASE, "b"),
            1,
            CLAIMED,
            "B claims the lobby",
        )
        .await;
    assert!(killed.elapsed() < CLAIMED);
    // Nothing came to the players meanwhile (no snapshot of a game moved, no notice), and
    // the game is where it was: B's lease, at its first token.
    assert_eq!(one.received_before_pong().await, vec![]);
    assert_eq!(two.received_before_pong().await, vec![]);
    assert_eq!(cluster.sql(&lease_of(&g, "b")), 1);
    assert_eq!(cluster.sql(&token), first, "the game's lease never moved");
    for round in 2..=3 {
        play_round(&mut one, &mut two, game.game_id, round, (5, 2)).await;
    }
    for client in [&mut one, &mut two] {
        match client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, .. } => assert_eq!(result.winner, Some(Seat::Two)),
            _ => unreachable!(),
        }
    }
}
