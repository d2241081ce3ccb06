use std::time::Duration;

use super::wire::{self, NodeMsg, WireCmd};
use super::*;
use crate::game::SeatAction;
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
