//! A panic inside one connection's task (forced with the `test-hooks` ping) costs only that
//! connection: it is closed with 1011, its player is marked away as after any dropped
//! connection (so the grace period applies), and every other connection and game goes on.

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_server::session::PANIC_PING_ID;

#[tokio::test]
async fn a_panicking_connection_task_takes_down_nothing_else() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "crash1", "crash2").await;
    let (mut three, mut four, other) = paired_players(&server, "calm1", "calm2").await;
    let token = one.token.clone().unwrap();

    one.send(&ClientMsg::Ping { id: PANIC_PING_ID }).await;
    assert_eq!(one.closed_with().await, Some(1011));

    // The session was still released: the opponent sees the player leave, with grace.
    match two
        .expect("presence", |m| matches!(m, ServerMsg::Presence { .. }))
        .await
    {
        ServerMsg::Presence {
            seat,
            connected,
            grace_ms,
            ..
        } => {
            assert_eq!((seat, connected), (Seat::One, false));
            assert!(grace_ms > 0);
        }
        _ => unreachable!(),
    }
    // The other game never noticed.
    play_round(&mut three, &mut four, other.game_id, 1, (1, 2)).await;
    until_metric(&server, "elementals_connections", 3).await;

    // The player comes back with the token and finishes the round.
    let mut again = TestClient::connect(&server).await;
    assert!(matches!(
        again.resume(&token).await,
        ServerMsg::Authenticated { .. }
    ));
    again
        .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await;
    two.expect("presence", |m| {
        matches!(
            m,
            ServerMsg::Presence {
                connected: true,
                ..
            }
        )
    })
    .await;
    play_round(&mut again, &mut two, game.game_id, 1, (3, 4)).await;
    until_metric(&server, "elementals_connections", 4).await;
}
