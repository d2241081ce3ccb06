//! The order replies and events reach a player in: `queued` before `game_start`, replies
//! in request order, a move's `ok` before its events; and where a player may wait.

use super::*;

/// The second player into the pool is paired at once: its `queued` answer must still come
/// before `game_start` (a client that took them the other way round would think itself
/// queued all through its game, and never queue again after it). The seating runs in a
/// task of its own, so the order was once a race: many pairings give it room to show.
#[tokio::test]
async fn queued_comes_before_game_start_when_an_opponent_is_waiting() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        for pair in 0..30 {
            let mut first = TestClient::connect(&server).await;
            first.register(&format!("waits{pair:02}")).await;
            let mut second = TestClient::connect(&server).await;
            second.register(&format!("joins{pair:02}")).await;
            first.join_pool(Variant::CLASSIC, "blitz").await;
            let id = second.id();
            second
                .send(&ClientMsg::JoinPool {
                    id,
                    variant: Variant::CLASSIC,
                    time_control: "blitz".into(),
                    rated: true,
                })
                .await;
            let order: Vec<&str> = {
                let mut seen = Vec::new();
                while seen.len() < 2 {
                    match second.recv().await {
                        ServerMsg::Queued { id: got, .. } if got == id => seen.push("queued"),
                        ServerMsg::GameStart { .. } => seen.push("game_start"),
                        _ => {}
                    }
                }
                seen
            };
            assert_eq!(order, ["queued", "game_start"], "pairing {pair}");
        }
    }
}

/// A game answers a player's moves itself (with the events they cause); replies to requests
/// sent back to back, without waiting, still come in the order they were sent, whoever
/// sends each: the game (commit, reveal, a refused commit), the session (ping).
#[tokio::test]
async fn replies_to_moves_and_other_requests_sent_back_to_back_come_in_order() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "quick", "steady").await;
        let game_id = game.game_id;
        let nonce = [7; 32];
        assert_ok(&two.commit(game_id, 1, Seat::Two, 2, [9; 32]).await);
        let commitment =
            elementals_protocol::commitment::make(&game_id.0, 1, Seat::One, 3, &nonce).to_vec();
        let ids: Vec<u32> = (0..5).map(|_| one.id()).collect();
        let burst = [
            ClientMsg::Commit {
                id: ids[0],
                game_id,
                round: 1,
                commitment: commitment.clone(),
                pick: None,
                nonce: None,
            },
            ClientMsg::Ping { id: ids[1] },
            ClientMsg::Commit {
                id: ids[2],
                game_id,
                round: 1,
                commitment,
                pick: None,
                nonce: None,
            },
            ClientMsg::Reveal {
                id: ids[3],
                game_id,
                round: 1,
                pick: 3,
                nonce: nonce.to_vec(),
            },
            ClientMsg::Ping { id: ids[4] },
        ];
        for msg in &burst {
            one.send(msg).await;
        }
        let mut replies = Vec::new();
        while replies.len() < burst.len() {
            let msg = one.recv().await;
            if let Some(id) = msg.reply_id() {
                replies.push((id, msg));
            }
        }
        let order: Vec<u32> = replies.iter().map(|(id, _)| *id).collect();
        assert_eq!(order, ids);
        assert_ok(&replies[0].1);
        assert!(matches!(replies[1].1, ServerMsg::Pong { .. }));
        assert_error(&replies[2].1, ErrorCode::AlreadyCommitted);
        assert_ok(&replies[3].1);
        assert!(matches!(replies[4].1, ServerMsg::Pong { .. }));
    }
}

/// A player waits either in one pool or in their open seeks, never in both (PROTOCOL.md
/// section 6): the second is refused `already_queued` and changes nothing.
#[tokio::test]
async fn a_player_waits_in_a_pool_or_in_seeks_never_both() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut seeker = TestClient::connect(&server).await;
        seeker.register("seeker").await;
        let mut pooled = TestClient::connect(&server).await;
        pooled.register("pooled").await;
        let create_seek = |id| ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
        };
        let join_pool = |id| ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: true,
        };

        let id = seeker.id();
        let seek_id = match seeker.request(create_seek(id)).await {
            ServerMsg::SeekCreated { seek, .. } => seek.seek_id,
            other => panic!("{other:?}"),
        };
        let id = seeker.id();
        assert_error(
            &seeker.request(join_pool(id)).await,
            ErrorCode::AlreadyQueued,
        );

        pooled.join_pool(Variant::CLASSIC, "blitz").await;
        let id = pooled.id();
        assert_error(
            &pooled.request(create_seek(id)).await,
            ErrorCode::AlreadyQueued,
        );

        // Nothing changed: one seek (the seeker's), one player waiting (not the seeker, who
        // would have been paired with the other at once).
        let id = pooled.id();
        match pooled.request(ClientMsg::ListSeeks { id }).await {
            ServerMsg::Seeks { seeks, .. } => {
                let ids: Vec<u64> = seeks.iter().map(|s| s.seek_id).collect();
                assert_eq!(ids, [seek_id]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(metric(&server, "elementals_players_queued").await, 1);

        // Once the seek is cancelled, the seeker may join the pool, and is paired.
        let id = seeker.id();
        assert_ok(&seeker.request(ClientMsg::CancelSeek { id, seek_id }).await);
        seeker.join_pool(Variant::CLASSIC, "blitz").await;
        let (game, _) = seeker.game_start().await;
        let (same, _) = pooled.game_start().await;
        assert_eq!(game.game_id, same.game_id);
    }
}

/// A move's `ok` reaches its player before the events the move caused, as PROTOCOL.md's
/// annotated session (section 9) shows it.
#[tokio::test]
async fn a_move_is_answered_before_the_events_it_caused() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "order1", "order2").await;
        let g = game.game_id;
        let nonce = [7u8; 32];
        let id = one.id();
        let commitment =
            elementals_protocol::commitment::make(&g.0, 1, Seat::One, 3, &nonce).to_vec();
        one.send(&ClientMsg::Commit {
            id,
            game_id: g,
            round: 1,
            commitment,
            pick: None,
            nonce: None,
        })
        .await;
        let first = one
            .expect("the ok or the committed event", |m| {
                matches!(m, ServerMsg::Ok { id: got } if *got == id)
                    || matches!(
                        m,
                        ServerMsg::Committed {
                            seat: Seat::One,
                            ..
                        }
                    )
            })
            .await;
        assert!(matches!(first, ServerMsg::Ok { .. }), "{first:?}");
        one.expect("committed", |m| {
            matches!(
                m,
                ServerMsg::Committed {
                    seat: Seat::One,
                    ..
                }
            )
        })
        .await;
        // And the same for the reveal.
        assert_ok(&two.commit(g, 1, Seat::Two, 2, [8u8; 32]).await);
        one.expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { .. })
        })
        .await;
        let id = one.id();
        one.send(&ClientMsg::Reveal {
            id,
            game_id: g,
            round: 1,
            pick: 3,
            nonce: nonce.to_vec(),
        })
        .await;
        let first = one
            .expect("the ok or the revealed event", |m| {
                matches!(m, ServerMsg::Ok { id: got } if *got == id)
                    || matches!(
                        m,
                        ServerMsg::Revealed {
                            seat: Seat::One,
                            ..
                        }
                    )
            })
            .await;
        assert!(matches!(first, ServerMsg::Ok { .. }), "{first:?}");
    }
}

/// A player that asked for batches gets a move's reply and the events it caused as one
/// frame, the MessagePack array of them, in the order they come one a frame to a player
/// that did not ask (whose every frame is one message: `TestClient` decodes it so).
#[tokio::test]
async fn a_batched_player_gets_a_moves_reply_and_its_events_as_one_frame() {
    let server = start_server().await;
    let mut batched = TestClient::connect_batched(&server).await;
    batched.register("batched").await;
    let mut plain = TestClient::connect(&server).await;
    plain.register("plain").await;
    batched.join_pool(Variant::CLASSIC, "blitz").await;
    plain.join_pool(Variant::CLASSIC, "blitz").await;
    let (game, seat) = batched.game_start().await;
    let (_, plain_seat) = plain.game_start().await;
    let game_id = game.game_id;
    let (nonce, plain_nonce) = ([3; 32], [4; 32]);

    // The plain player moves first each time, the batched one second.
    assert_ok(&plain.commit(game_id, 1, plain_seat, 2, plain_nonce).await);
    assert_eq!(plain.frame_sizes.last(), Some(&1));
    // What came before (the snapshot, the plain player's commitment) is read first.
    batched.received_before_pong().await;
    assert_ok(&batched.commit(game_id, 1, seat, 5, nonce).await);
    assert_eq!(
        batched.frame_sizes.last(),
        Some(&3),
        "ok, committed, reveal_phase"
    );
    let after_commit = [batched.recv().await, batched.recv().await];
    assert!(
        matches!(&after_commit, [ServerMsg::Committed { seat: s, .. }, ServerMsg::RevealPhase { .. }] if *s == seat),
        "{after_commit:?}"
    );
    plain
        .expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { .. })
        })
        .await;

    assert_ok(&plain.reveal(game_id, 1, 2, plain_nonce).await);
    batched.received_before_pong().await;
    assert_ok(&batched.reveal(game_id, 1, 5, nonce).await);
    assert_eq!(
        batched.frame_sizes.last(),
        Some(&4),
        "ok, revealed, round_result, round_start"
    );
    let mut seqs = Vec::new();
    for _ in 0..3 {
        match batched.recv().await {
            ServerMsg::Revealed { seq, .. }
            | ServerMsg::RoundResult { seq, .. }
            | ServerMsg::RoundStart { seq, .. } => seqs.push(seq),
            other => panic!("{other:?}"),
        }
    }
    // The plain player gets the same events, one frame each.
    let mut plain_seqs = Vec::new();
    while plain_seqs.len() < 3 {
        match plain.recv().await {
            ServerMsg::Revealed { seq, seat: s, .. } if s == seat => plain_seqs.push(seq),
            ServerMsg::RoundResult { seq, .. } | ServerMsg::RoundStart { seq, .. } => {
                plain_seqs.push(seq)
            }
            _ => {}
        }
    }
    assert_eq!(seqs, plain_seqs);
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
}
