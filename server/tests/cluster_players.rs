//! Cluster mode (issue 26), a player's own games across nodes, with real server processes:
//! `my_games` and `GET /api/me/games` list a game another node runs, with what it waits
//! for as it stands; a rematch is offered and accepted by players on different nodes.

mod cluster_support;
mod common;

use std::net::SocketAddr;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{GameId, GameInfo, MyGame, OwedAction, Phase, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
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

async fn offer_rematch(client: &mut TestClient, game_id: GameId) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::OfferRematch { id, game_id })
        .await
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
