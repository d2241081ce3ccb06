//! End-to-end games over real WebSocket frames: rated wins and refused moves here; games
//! lost by rule (`by_rule`), the order of replies and events (`ordering`), and the finished
//! record's documented shape (`documented`).

mod by_rule;
mod documented;
mod ordering;

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, EndReason, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

/// The seed's example game: player two wins after five rounds.
const SEED_PICKS: [(u16, u16); 5] = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];

#[tokio::test]
async fn full_rated_game_updates_both_ratings_exactly_and_persists() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "alice", "bobby").await;
        assert!(game.rated);
        for (i, picks) in SEED_PICKS.iter().enumerate() {
            let result = play_round(&mut one, &mut two, game.game_id, i as u32 + 1, *picks).await;
            let ServerMsg::RoundResult { record, .. } = result else {
                unreachable!()
            };
            assert_eq!(record.picks.one, picks.0);
            assert_eq!(record.picks.two, picks.1);
        }
        for client in [&mut one, &mut two] {
            match client
                .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                .await
            {
                ServerMsg::GameOver { result, rated, .. } => {
                    assert_eq!(result.winner, Some(Seat::Two));
                    assert_eq!(result.reason, EndReason::Edge);
                    assert!(rated);
                }
                _ => unreachable!(),
            }
            match client
                .expect("rating_update", |m| {
                    matches!(m, ServerMsg::RatingUpdate { .. })
                })
                .await
            {
                ServerMsg::RatingUpdate { ratings, .. } => {
                    // Both at 1.0: D = 0, A = 0.5; the loser is floored at 1.0.
                    assert_eq!(ratings.two.before, 1.0);
                    assert_eq!(ratings.two.after, 1.5);
                    assert_eq!(ratings.one.before, 1.0);
                    assert_eq!(ratings.one.after, 1.0);
                }
                _ => unreachable!(),
            }
        }
        let (status, body) = server.http_get("/api/leaderboard").await;
        assert_eq!(status, 200);
        let board: serde_json::Value = serde_json::from_str(&body).unwrap();
        let winner = &board[0];
        assert_eq!(winner["rating"], 1.5);
        assert_eq!(winner["wins"], 1);
        let loser = board
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["losses"] == 1)
            .unwrap();
        assert_eq!(loser["rating"], 1.0);

        let (status, body) = server
            .http_get(&format!("/api/games/{}", game.game_id))
            .await;
        assert_eq!(status, 200);
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(record["rounds"].as_array().unwrap().len(), 5);
    }
}

#[tokio::test]
async fn a_second_game_rates_from_the_stored_ratings() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "carol", "dave1").await;
        for (i, picks) in SEED_PICKS.iter().enumerate() {
            play_round(&mut one, &mut two, game.game_id, i as u32 + 1, *picks).await;
        }
        // Seat two (1.5 now) beats seat one again? Play the rematch with seats swapped.
        for c in [&mut one, &mut two] {
            c.expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
        }
        let (id1, id2) = (one.id(), two.id());
        assert_ok(
            &one.request(ClientMsg::OfferRematch {
                id: id1,
                game_id: game.game_id,
            })
            .await,
        );
        assert_ok(
            &two.request(ClientMsg::OfferRematch {
                id: id2,
                game_id: game.game_id,
            })
            .await,
        );
        let (g2, seat_of_old_one) = one.game_start().await;
        assert_eq!(seat_of_old_one, Seat::Two, "seats swap in a rematch");
        let _ = two.game_start().await;
        assert_eq!(g2.players.one.rating, 1.5);
        // Old seat two (rated 1.5) is now seat one; let seat two (1.0) win: D = 1.0 - 1.5.
        for (i, picks) in SEED_PICKS.iter().enumerate() {
            play_round(&mut two, &mut one, g2.game_id, i as u32 + 1, *picks).await;
        }
        match one
            .expect(
                "rating_update",
                |m| matches!(m, ServerMsg::RatingUpdate { game_id, .. } if *game_id == g2.game_id),
            )
            .await
        {
            ServerMsg::RatingUpdate { ratings, .. } => {
                let a = 1.0 / ((-0.5f64).exp() + 1.0);
                assert!((ratings.two.after - (1.0 + a)).abs() < 1e-12);
                assert!((ratings.one.after - (1.5 - a).max(1.0)).abs() < 1e-12);
            }
            _ => unreachable!(),
        }
    }
}

#[tokio::test]
async fn a_rematch_carries_both_players_ratings_after_the_game() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "rema1", "rema2").await;
        for (i, picks) in SEED_PICKS.iter().enumerate() {
            play_round(&mut one, &mut two, game.game_id, i as u32 + 1, *picks).await;
        }
        for c in [&mut one, &mut two] {
            c.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                .await;
        }
        // The winner (1.0 at sign-in, 1.5 now) offers first, at once: before the game's
        // record and rating change may be written.
        let (id1, id2) = (two.id(), one.id());
        let offer = |id| ClientMsg::OfferRematch {
            id,
            game_id: game.game_id,
        };
        assert_ok(&two.request(offer(id1)).await);
        assert_ok(&one.request(offer(id2)).await);
        let (g2, seat) = two.game_start().await;
        assert_eq!(seat, Seat::One, "seats swap in a rematch");
        let expected = (1.5, 1.0);
        let ratings = |p: &elementals_protocol::messages::SeatPair<
            elementals_protocol::messages::PlayerInfo,
        >| (p.one.rating, p.two.rating);
        assert_eq!(ratings(&g2.players), expected);
        let snapshot = two
            .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
            .await;
        let ServerMsg::Snapshot { snapshot, .. } = snapshot else {
            unreachable!()
        };
        assert_eq!(ratings(&snapshot.game.players), expected);
        let (status, body) = server.http_get("/api/games/live").await;
        assert_eq!(status, 200);
        let live: serde_json::Value = serde_json::from_str(&body).unwrap();
        let entry = live
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["game_id"] == g2.game_id.to_string())
            .expect("the rematch is live");
        let players = &entry["players"];
        assert_eq!(
            (
                players["one"]["rating"].as_f64(),
                players["two"]["rating"].as_f64()
            ),
            (Some(1.5), Some(1.0))
        );
    }
}

/// `decline_rematch`: the opponent's offer is withdrawn and the offerer told; declining
/// what was never offered, or twice, is `no_rematch`, and a rematch can still be agreed.
#[tokio::test]
async fn a_declined_rematch_offer_is_withdrawn_and_the_offerer_told() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "decl1", "decl2").await;
        let g = game.game_id;
        one.resign(g).await;
        for c in [&mut one, &mut two] {
            c.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                .await;
        }
        let decline = |id| ClientMsg::DeclineRematch { id, game_id: g };
        let offer = |id| ClientMsg::OfferRematch { id, game_id: g };
        let id = two.id();
        assert_error(&two.request(decline(id)).await, ErrorCode::NoRematch);
        let id = one.id();
        assert_ok(&one.request(offer(id)).await);
        two.expect("rematch_offered", |m| {
            matches!(m, ServerMsg::RematchOffered { game_id, by } if *game_id == g && *by == Seat::One)
        })
        .await;
        let id = two.id();
        assert_ok(&two.request(decline(id)).await);
        one.expect("rematch_declined", |m| {
            matches!(m, ServerMsg::RematchDeclined { game_id, by } if *game_id == g && *by == Seat::Two)
        })
        .await;
        let id = two.id();
        assert_error(&two.request(decline(id)).await, ErrorCode::NoRematch);
        // Withdrawn: two's own offer is an offer, not an acceptance; one's next one starts it.
        let id = two.id();
        assert_ok(&two.request(offer(id)).await);
        one.expect(
            "rematch_offered",
            |m| matches!(m, ServerMsg::RematchOffered { by, .. } if *by == Seat::Two),
        )
        .await;
        let id = one.id();
        assert_ok(&one.request(offer(id)).await);
        let (rematch, _) = one.game_start().await;
        assert_ne!(rematch.game_id, g);
    }
}

#[tokio::test]
async fn copied_commitment_is_refused_and_a_wrong_reveal_can_be_corrected() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "erin1", "frank").await;
        let g = game.game_id;
        let nonce = [7u8; 32];
        assert_ok(&one.commit(g, 1, Seat::One, 3, nonce).await);
        // Two copies one's commitment byte for byte.
        let copied = elementals_protocol::commitment::make(&g.0, 1, Seat::One, 3, &nonce).to_vec();
        let id = two.id();
        let reply = two
            .request(ClientMsg::Commit {
                id,
                game_id: g,
                round: 1,
                commitment: copied,
                pick: None,
                nonce: None,
            })
            .await;
        assert_error(&reply, ErrorCode::DuplicateCommitment);
        let nonce2 = [9u8; 32];
        assert_ok(&two.commit(g, 1, Seat::Two, 1, nonce2).await);
        one.expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { .. })
        })
        .await;
        // A reveal that does not match: refused, and then corrected.
        assert_error(&one.reveal(g, 1, 4, nonce).await, ErrorCode::RevealMismatch);
        assert_ok(&one.reveal(g, 1, 3, nonce).await);
        assert_ok(&two.reveal(g, 1, 1, nonce2).await);
        match one
            .expect("round_result", |m| {
                matches!(m, ServerMsg::RoundResult { .. })
            })
            .await
        {
            ServerMsg::RoundResult { record, .. } => {
                assert_eq!((record.picks.one, record.picks.two), (3, 1));
                assert_eq!(record.outcome.winner, Some(Seat::One));
            }
            _ => unreachable!(),
        }
    }
}

#[tokio::test]
async fn out_of_phase_and_foreign_moves_change_nothing() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, two, game) = paired_players(&server, "gina1", "harry").await;
        let g = game.game_id;
        // A reveal before both have committed.
        assert_error(&one.reveal(g, 1, 1, [0; 32]).await, ErrorCode::WrongPhase);
        // The wrong round.
        assert_error(
            &one.commit(g, 2, Seat::One, 1, [0; 32]).await,
            ErrorCode::WrongRound,
        );
        // A commitment of the wrong length.
        let id = one.id();
        let r = one
            .request(ClientMsg::Commit {
                id,
                game_id: g,
                round: 1,
                commitment: vec![1, 2, 3],
                pick: None,
                nonce: None,
            })
            .await;
        assert_error(&r, ErrorCode::BadCommitment);
        // A third player cannot act in this game at all.
        let mut intruder = TestClient::connect(&server).await;
        intruder.register("ivan1").await;
        assert_error(
            &intruder.commit(g, 1, Seat::Two, 1, [0; 32]).await,
            ErrorCode::NotSeated,
        );
        let id = intruder.id();
        assert_error(
            &intruder.request(ClientMsg::Resign { id, game_id: g }).await,
            ErrorCode::NotSeated,
        );
        // A spectator cannot act either.
        let mut watcher = TestClient::connect(&server).await;
        let id = watcher.id();
        assert!(matches!(
            watcher.request(ClientMsg::Watch { id, game_id: g }).await,
            ServerMsg::Snapshot { .. }
        ));
        assert_error(
            &watcher.commit(g, 1, Seat::One, 1, [0; 32]).await,
            ErrorCode::NotAuthenticated,
        );
        // Nothing above changed the game: round 1, nobody committed.
        let id = one.id();
        match one.request(ClientMsg::Sync { id, game_id: g }).await {
            ServerMsg::Snapshot { snapshot, seat, .. } => {
                assert_eq!(seat, Some(Seat::One));
                assert_eq!(snapshot.round, 1);
                assert!(!snapshot.committed.one && !snapshot.committed.two);
            }
            other => panic!("{other:?}"),
        }
        // A second commit in the round is refused.
        assert_ok(&one.commit(g, 1, Seat::One, 1, [1; 32]).await);
        assert_error(
            &one.commit(g, 1, Seat::One, 2, [2; 32]).await,
            ErrorCode::AlreadyCommitted,
        );
        drop(two);
    }
}
