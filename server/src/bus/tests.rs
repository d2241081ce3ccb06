use super::*;
use crate::outbox::Outbound;

#[test]
fn a_connection_is_addressed_by_identity_while_it_is_connected() {
    let bus = LocalBus::default();
    let (outbox, mut rx) = Outbox::new(7, 1);
    assert_eq!(
        bus.send(7, Bytes::from_static(b"early")),
        Err(SendError::Closed)
    );
    assert!(bus.is_closed(7));
    bus.connect(&outbox);
    assert!(!bus.is_closed(7));
    bus.send(7, Bytes::from_static(b"one")).unwrap();
    assert!(matches!(rx.try_recv(), Ok(Outbound::Frame(f)) if f == "one"));
    // A full queue is the sender's to judge.
    bus.send(7, Bytes::from_static(b"two")).unwrap();
    assert_eq!(
        bus.send(7, Bytes::from_static(b"three")),
        Err(SendError::Full)
    );
    assert!(!outbox.kill_token().is_cancelled());
    bus.send_or_kill(7, Bytes::from_static(b"three"));
    assert!(outbox.kill_token().is_cancelled());
    bus.disconnect(7);
    assert_eq!(
        bus.send(7, Bytes::from_static(b"late")),
        Err(SendError::Closed)
    );
}

#[test]
fn a_connection_that_has_ended_is_not_kept_and_its_id_may_come_back() {
    let bus = LocalBus::default();
    // Put on the bus after its connection ended (the handle raced the end): not kept.
    let (ended, rx) = Outbox::new(3, 4);
    drop(rx);
    bus.connect(&ended);
    assert!(bus.connections.is_empty());
    // An open one is kept once, however often it is put on the bus ...
    let (open, _open_rx) = Outbox::new(4, 4);
    bus.connect(&open);
    bus.connect(&open);
    assert_eq!(bus.connections.len(), 1);
    // ... and an entry whose connection has closed gives way to a new one of its id.
    let (first, first_rx) = Outbox::new(5, 4);
    bus.connect(&first);
    drop(first_rx);
    let (second, mut second_rx) = Outbox::new(5, 4);
    bus.connect(&second);
    bus.send(5, Bytes::from_static(b"to the second")).unwrap();
    assert!(matches!(second_rx.try_recv(), Ok(Outbound::Frame(f)) if f == "to the second"));
    bus.disconnect(4);
    bus.disconnect(5);
    assert!(bus.connections.is_empty());
}

#[tokio::test]
async fn a_command_to_a_game_that_takes_none_is_answered_unknown_game_by_the_bus() {
    use crate::msg::{GameCmd, Notice, ReplyTo, SeatAction};
    use elementals_protocol::rules::Seat;
    use elementals_protocol::ErrorCode;
    let bus = LocalBus::default();
    let (outbox, mut rx) = Outbox::new(1, 4);
    bus.connect(&outbox);
    let mut notices = bus.open_session(1);
    let game = GameId::new_random_from([2; 16]);
    let act = |request_id| GameCmd::Act {
        seat: Seat::One,
        action: SeatAction::Resign,
        reply: ReplyTo {
            conn: 1,
            request_id: Some(request_id),
            settle: true,
        },
        arrived: tokio::time::Instant::now(),
    };
    let refused = |rx: &mut tokio::sync::mpsc::Receiver<Outbound>, request_id| {
        let Ok(Outbound::Frame(frame)) = rx.try_recv() else {
            panic!("one frame is queued");
        };
        match wire::decode_server(&frame).unwrap() {
            ServerMsg::Error { id, code, .. } => {
                assert_eq!((id, code), (Some(request_id), ErrorCode::UnknownGame));
            }
            other => panic!("expected unknown_game, got {other:?}"),
        }
    };
    let answered = |request_id| Notice::Answered {
        ok: false,
        request: Some(request_id),
    };
    // Never opened.
    bus.to_game(game, act(5)).await;
    refused(&mut rx, 5);
    assert_eq!(notices.try_recv(), Ok(answered(5)));
    // Opened, then its inbox gone: the queue is closed.
    let inbox = bus.open_game(game);
    assert!(bus.has_game(game));
    drop(inbox);
    bus.to_game(game, act(6)).await;
    refused(&mut rx, 6);
    assert_eq!(notices.try_recv(), Ok(answered(6)));
    // A notice to it is nobody's business: nothing is answered.
    bus.notify_game(
        game,
        GameCmd::Detach {
            seat: Seat::One,
            conn_id: 1,
        },
    );
    bus.close_game(game);
    assert!(!bus.has_game(game));
    assert!(rx.try_recv().is_err() && notices.try_recv().is_err());
    // The connection's end closes its session's notices.
    bus.disconnect(1);
    assert!(notices.recv().await.is_none());
}
