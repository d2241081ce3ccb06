//! Many players dropping at once is the server's fault: their games are held.

use std::time::Duration;

use elementals_protocol::messages::{SeatPair, ServerMsg};
use tokio::time::advance;

use super::{Game, Harness, TC};

/// Drops a player's connection, as its session does when the socket closes.
fn drop_connection(player: &super::Player) {
    player.handle.detach(player.inbox.outbox.conn_id());
}

async fn in_round_two(h: &Harness, first: usize) -> Game {
    let game = h.start(first, TC).await;
    game.play(1, 1, 1).await;
    game
}

#[tokio::test(start_paused = true)]
async fn many_players_dropping_at_once_holds_their_games_until_they_are_back() {
    let h = Harness::new().await;
    let (mut a, b) = (in_round_two(&h, 0).await, in_round_two(&h, 2).await);
    let banks = a.snapshot().await.clocks;
    // Every seated player (four, the fewest that make an incident) drops within a second.
    for player in [&a.one, &a.two, &b.one, &b.two] {
        drop_connection(player);
        advance(Duration::from_millis(250)).await;
    }
    // Both games wait, clocks stopped, for longer than the banks last.
    b.snapshot().await;
    advance(Duration::from_millis(29_000)).await;
    for game in [&a, &b] {
        let snapshot = game.snapshot().await;
        assert_eq!(snapshot.result, None);
        assert_eq!(snapshot.clocks.running, SeatPair::new(false, false));
    }
    let held = a.snapshot().await.clocks;
    // Charged only until the incident was declared, a second after the first drop.
    assert!(
        banks.one_ms - held.one_ms <= 1_000,
        "{banks:?} then {held:?}"
    );
    // Both back: the round starts again with running clocks.
    a.one.drain();
    for player in [&a.one, &a.two] {
        player.attach(&player.inbox.outbox).await;
    }
    let again = a.one.drain();
    match again.last() {
        Some(ServerMsg::RoundStart {
            round: 2, clocks, ..
        }) => {
            assert_eq!((clocks.one_ms, clocks.two_ms), (held.one_ms, held.two_ms));
            assert_eq!(clocks.running, SeatPair::new(true, true));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn one_player_dropping_is_no_incident() {
    let h = Harness::new().await;
    let (a, _b) = (in_round_two(&h, 0).await, in_round_two(&h, 2).await);
    drop_connection(&a.two);
    advance(Duration::from_secs(5)).await;
    let snapshot = a.snapshot().await;
    assert_eq!(snapshot.clocks.running, SeatPair::new(true, true));
    assert_eq!(snapshot.connected, SeatPair::new(true, false));
}
