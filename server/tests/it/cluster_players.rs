//! Cluster mode (issue 26), a player's own games across nodes, with real server processes:
//! `my_games` and `GET /api/me/games` list a game another node runs, with what it waits
//! for as it stands; `your_move` reaches a player whose game runs on another node; a
//! rematch is offered and accepted by players on different nodes, and of a game that ended
//! on another node than the lobby's.

use std::net::SocketAddr;

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{GameId, GameInfo, MyGame, OwedAction, Phase, ServerMsg};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::{ClientMsg, ErrorCode};

async fn ws_my_games(client: &mut TestClient) -> Vec<MyGame> {
    let id = client.id();
    match client.request(ClientMsg::MyGames { id }).await {
        ServerMsg::OpenGames { games, .. } => games,
        other => panic!("expected open_games, got {other:?}"),
    }
}

/// A player on a node of its own.
struct Player {
    client: TestClient,
    addr: SocketAddr,
}

/// Players queued on nodes `a` and `b`, paired: the game runs on one of the two nodes, so
/// one player's node is not the game's. Returns them in seat order.
async fn paired_across(a: &Node, b: &Node, names: (&str, &str)) -> (Player, Player, GameInfo) {
    let mut on_a = TestClient::connect_at(a.addr).await;
    on_a.register(names.0).await;
    let mut on_b = TestClient::connect_at(b.addr).await;
    on_b.register(names.1).await;
    on_a.join_pool(Variant::CLASSIC, "blitz").await;
    on_b.join_pool(Variant::CLASSIC, "blitz").await;
    let (game, seat_a) = on_a.game_start().await;
    on_b.game_start().await;
    let on_a = Player {
        client: on_a,
        addr: a.addr,
    };
    let on_b = Player {
        client: on_b,
        addr: b.addr,
    };
    match seat_a {
        Seat::One => (on_a, on_b, game),
        Seat::Two => (on_b, on_a, game),
    }
}

/// Both players, each asking its own node by request and by HTTP, see `info`'s game in
/// `round` and `phase` with `owed` outstanding, the same deadlines, each the other as
/// opponent.
async fn check_both(
    players: [&mut Player; 2],
    info: &GameInfo,
    (round, phase): (u32, Phase),
    owed: &[(Seat, OwedAction)],
) {
    let mut seen = Vec::new();
    for (player, seat) in players.into_iter().zip([Seat::One, Seat::Two]) {
        let token = player.client.token.clone().unwrap();
        let ws = ws_my_games(&mut player.client).await;
        let http = http_my_games(player.addr, &token).await;
        assert_eq!(ws, http, "the request and the endpoint agree");
        assert_eq!(ws.len(), 1, "seat {seat:?} on {}: {ws:?}", player.addr);
        let mine = ws[0].clone();
        assert_eq!((mine.game_id, mine.seat), (info.game_id, seat));
        assert_eq!(mine.opponent, *info.players.get(seat.other()));
        assert_eq!((mine.round, mine.phase), (round, phase));
        let owing: Vec<_> = mine.owed.iter().map(|o| (o.seat, o.action)).collect();
        assert_eq!(owing, owed, "round {round} {phase:?} as seat {seat:?}");
        seen.push(mine);
    }
    assert_eq!(seen[0].owed, seen[1].owed, "both see the same deadlines");
}

/// Waits until both players have heard what `pred` matches.
async fn both_hear(
    players: [&mut Player; 2],
    what: &str,
    pred: impl Fn(&ServerMsg) -> bool + Copy,
) {
    for player in players {
        player.client.expect(what, pred).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_games_lists_a_game_another_node_runs_as_it_stands() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, mut two, info) = paired_across(&a, &b, ("ann", "bob")).await;
    let g = info.game_id;
    let (c, r) = (OwedAction::Commit, OwedAction::Reveal);
    let (s1, s2) = (Seat::One, Seat::Two);

    check_both(
        [&mut one, &mut two],
        &info,
        (1, Phase::Commit),
        &[(s1, c), (s2, c)],
    )
    .await;
    let (n1, n2) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
    assert_ok(&one.client.commit(g, 1, s1, 5, n1).await);
    check_both([&mut one, &mut two], &info, (1, Phase::Commit), &[(s2, c)]).await;
    assert_ok(&two.client.commit(g, 1, s2, 2, n2).await);
    both_hear([&mut one, &mut two], "reveal_phase", |m| {
        matches!(m, ServerMsg::RevealPhase { .. })
    })
    .await;
    check_both(
        [&mut one, &mut two],
        &info,
        (1, Phase::Reveal),
        &[(s1, r), (s2, r)],
    )
    .await;

    // Over (and recorded, so forgotten by every registry): nobody lists it.
    two.client.resign(g).await;
    both_hear([&mut one, &mut two], "rating_update", |m| {
        matches!(m, ServerMsg::RatingUpdate { .. })
    })
    .await;
    for player in [&mut one, &mut two] {
        assert!(ws_my_games(&mut player.client).await.is_empty());
    }
}

/// Every message `client` is sent up to the first one `pred` picks, that one too.
async fn received_until(
    client: &mut TestClient,
    what: &str,
    pred: impl Fn(&ServerMsg) -> bool,
) -> Vec<ServerMsg> {
    let mut got = Vec::new();
    loop {
        let msg = client.expect(what, |_| true).await;
        let done = pred(&msg);
        got.push(msg);
        if done {
            return got;
        }
    }
}

/// The `your_move` pushes among `got`: game, seat, round, action.
fn pushes(got: &[ServerMsg]) -> Vec<(GameId, Seat, u32, OwedAction)> {
    got.iter()
        .filter_map(|m| match m {
            ServerMsg::YourMove {
                game_id,
                seat,
                round,
                action,
                ..
            } => Some((*game_id, *seat, *round, *action)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn your_move_reaches_a_follower_on_another_node_once_per_owed_action() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    // Each asks `my_games` (and so follows) before being paired: one of them is on a node
    // that does not run the game.
    let mut clients = Vec::new();
    for (node, name) in [(&a, "eve"), (&b, "fay")] {
        let mut client = TestClient::connect_at(node.addr).await;
        client.register(name).await;
        assert!(ws_my_games(&mut client).await.is_empty());
        client.join_pool(Variant::CLASSIC, "blitz").await;
        clients.push(client);
    }
    let mut logs = Vec::new();
    let mut seats = Vec::new();
    for client in &mut clients {
        let got = received_until(client, "game_start", |m| {
            matches!(m, ServerMsg::GameStart { .. })
        })
        .await;
        match got.last() {
            Some(ServerMsg::GameStart { game, seat }) => seats.push((game.game_id, *seat)),
            _ => unreachable!(),
        }
        logs.push(got);
    }
    let g = seats[0].0;
    assert_eq!(seats[1].0, g);
    if seats[0].1 == Seat::Two {
        clients.swap(0, 1);
        logs.swap(0, 1);
    }
    let picks: [Element; 2] = [5, 2];
    let nonces = [rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>()];
    for (i, seat) in [Seat::One, Seat::Two].into_iter().enumerate() {
        assert_ok(&clients[i].commit(g, 1, seat, picks[i], nonces[i]).await);
    }
    for (client, log) in clients.iter_mut().zip(&mut logs) {
        log.extend(
            received_until(client, "reveal_phase", |m| {
                matches!(m, ServerMsg::RevealPhase { .. })
            })
            .await,
        );
    }
    for i in 0..2 {
        assert_ok(&clients[i].reveal(g, 1, picks[i], nonces[i]).await);
    }
    for (client, log) in clients.iter_mut().zip(&mut logs) {
        log.extend(
            received_until(client, "round 2", |m| {
                matches!(m, ServerMsg::RoundStart { round: 2, .. })
            })
            .await,
        );
    }
    clients[0].resign(g).await;
    for (client, log) in clients.iter_mut().zip(&mut logs) {
        log.extend(
            received_until(client, "rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await,
        );
        log.extend(client.received_before_pong().await);
    }
    let (c, r) = (OwedAction::Commit, OwedAction::Reveal);
    for (log, seat) in logs.iter().zip([Seat::One, Seat::Two]) {
        assert_eq!(
            pushes(log),
            [(g, seat, 1, c), (g, seat, 1, r), (g, seat, 2, c)],
            "seat {seat:?}, once per newly owed action, wherever the game runs"
        );
    }
}

async fn offer_rematch(client: &mut TestClient, game_id: GameId) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::OfferRematch { id, game_id })
        .await
}

/// Offered by a player on one node, declined by the other on another: the offer is
/// withdrawn and the offerer told on their node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rematch_offer_is_declined_from_another_node_and_the_offerer_told() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, mut two, info) = paired_across(&a, &b, ("eda", "fin")).await;
    let g = info.game_id;
    one.client.resign(g).await;
    both_hear([&mut one, &mut two], "game_over", |m| {
        matches!(m, ServerMsg::GameOver { .. })
    })
    .await;
    // The offer is made on the node that ran the game, the refusal on the other.
    let ran_it = metric_at(one.addr, "elementals_games_finished_total").await == 1;
    let (mut here, (mut there, there_seat)) = if ran_it {
        (one, (two, Seat::Two))
    } else {
        (two, (one, Seat::One))
    };
    assert_ok(&offer_rematch(&mut here.client, g).await);
    there
        .client
        .expect(
            "rematch_offered",
            |m| matches!(m, ServerMsg::RematchOffered { game_id, .. } if *game_id == g),
        )
        .await;
    let id = there.client.id();
    let declined = there
        .client
        .request(ClientMsg::DeclineRematch { id, game_id: g })
        .await;
    assert_ok(&declined);
    here.client
        .expect("rematch_declined", |m| {
            matches!(m, ServerMsg::RematchDeclined { game_id, by } if *game_id == g && *by == there_seat)
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rematch_is_offered_and_accepted_by_players_on_different_nodes() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut one, mut two, info) = paired_across(&a, &b, ("cyd", "dia")).await;
    let g = info.game_id;
    play_round(&mut one.client, &mut two.client, g, 1, (5, 2)).await;
    one.client.resign(g).await;
    both_hear([&mut one, &mut two], "rating_update", |m| {
        matches!(m, ServerMsg::RatingUpdate { .. })
    })
    .await;
    // Which of them is on the node that ran the game (the other's offers go there).
    let ran_it = metric_at(one.addr, "elementals_games_finished_total").await == 1;
    let ((mut here, here_seat), (mut there, there_seat)) = if ran_it {
        ((one, Seat::One), (two, Seat::Two))
    } else {
        ((two, Seat::Two), (one, Seat::One))
    };
    assert_eq!(
        metric_at(there.addr, "elementals_games_finished_total").await,
        0
    );

    // Offered on the game's node: heard by the opponent on the other node.
    assert_ok(&offer_rematch(&mut here.client, g).await);
    there
        .client
        .expect("rematch_offered", |m| {
            matches!(m, ServerMsg::RematchOffered { game_id, by } if *game_id == g && *by == here_seat)
        })
        .await;
    // Accepted from the other node: the rematch starts, seats swapped, each player
    // carrying the rating the first game left them (seat two won it).
    assert_ok(&offer_rematch(&mut there.client, g).await);
    let (rematch, seat) = here.client.game_start().await;
    let (rematch_there, seat_there) = there.client.game_start().await;
    assert_eq!(rematch.game_id, rematch_there.game_id);
    assert_ne!(rematch.game_id, g);
    assert_eq!((seat, seat_there), (here_seat.other(), there_seat.other()));
    let winner = rematch.players.get(Seat::One);
    assert_eq!(winner.name, info.players.two.name);
    assert_eq!(winner.rating, 1.5, "{winner:?}");
    assert_eq!(rematch.players.get(Seat::Two).rating, 1.0);
    // Answered once: the first game has no rematch left to offer.
    assert_error(
        &offer_rematch(&mut there.client, g).await,
        ErrorCode::NoRematch,
    );
}

/// Both players on B, so their game runs on B, while the lobby runs on A: B tells the
/// lobby of the game's end and of its ratings, and the rematch is offered, accepted and
/// started as any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rematch_of_a_game_that_ended_on_another_node_than_the_lobbys_starts() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let lobby_on_a = "SELECT count(*) FROM game_leases \
                      WHERE game_id = '00000000-0000-0000-0000-000000000000' AND node_id = 'a'";
    assert_eq!(
        cluster.sql(lobby_on_a),
        1,
        "the lobby runs on A, the first node"
    );
    let (mut one, mut two, info) = paired_at(b.addr, "gus", "hal").await;
    let g = info.game_id;
    play_round(&mut one, &mut two, g, 1, (5, 2)).await;
    one.resign(g).await;
    for client in [&mut one, &mut two] {
        client
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
    assert_eq!(
        metric_at(b.addr, "elementals_games_finished_total").await,
        1
    );
    assert_eq!(
        metric_at(a.addr, "elementals_games_finished_total").await,
        0
    );

    assert_ok(&offer_rematch(&mut two, g).await);
    one.expect("rematch_offered", |m| {
        matches!(m, ServerMsg::RematchOffered { game_id, by } if *game_id == g && *by == Seat::Two)
    })
    .await;
    assert_ok(&offer_rematch(&mut one, g).await);
    let (rematch, seat) = one.game_start().await;
    let (rematch_two, seat_two) = two.game_start().await;
    assert_eq!(rematch.game_id, rematch_two.game_id);
    assert_eq!((seat, seat_two), (Seat::Two, Seat::One), "seats swapped");
    // Seat two won the first game: its rating as that game's record left it.
    let winner = rematch.players.get(Seat::One);
    assert_eq!(winner.name, info.players.two.name);
    assert_eq!(winner.rating, 1.5, "{winner:?}");
    assert_eq!(rematch.players.get(Seat::Two).rating, 1.0);
    assert_error(&offer_rematch(&mut two, g).await, ErrorCode::NoRematch);
}
