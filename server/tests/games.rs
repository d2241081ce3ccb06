//! End-to-end games over real WebSocket frames: wins, losses by rule, refusals.

mod common;

use common::*;
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

#[tokio::test]
async fn resignation_loses_and_is_rated() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "jack1", "kate1").await;
        one.resign(game.game_id).await;
        match two
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, rated, .. } => {
                assert_eq!(result.winner, Some(Seat::Two));
                assert_eq!(result.reason, EndReason::Resignation);
                assert!(rated);
            }
            _ => unreachable!(),
        }
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        // Acting after the end is refused.
        let id = one.id();
        let reply = one
            .request(ClientMsg::Resign {
                id,
                game_id: game.game_id,
            })
            .await;
        assert!(
            matches!(
                reply,
                ServerMsg::Error {
                    code: ErrorCode::GameOver | ErrorCode::UnknownGame | ErrorCode::NotSeated,
                    ..
                }
            ),
            "{reply:?}"
        );
    }
}

#[tokio::test]
async fn a_player_who_does_not_reveal_loses() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut a = TestClient::connect(&server).await;
        a.register("liam1").await;
        let mut b = TestClient::connect(&server).await;
        b.register("mona1").await;
        // A custom seek with the shortest reveal window.
        let tc = TimeControl {
            initial_ms: 60_000,
            increment_ms: 0,
            reveal_ms: 2_000,
        };
        let id = a.id();
        let seek = match a
            .request(ClientMsg::CreateSeek {
                id,
                variant: Variant::CLASSIC,
                time_control: tc,
                rated: true,
            })
            .await
        {
            ServerMsg::SeekCreated { seek, .. } => seek,
            other => panic!("{other:?}"),
        };
        let id = b.id();
        assert_ok(
            &b.request(ClientMsg::AcceptSeek {
                id,
                seek_id: seek.seek_id,
            })
            .await,
        );
        let (game, seat_a) = a.game_start().await;
        let _ = b.game_start().await;
        let (mut one, mut two) = if seat_a == Seat::One { (a, b) } else { (b, a) };
        let g = game.game_id;
        assert_ok(&one.commit(g, 1, Seat::One, 1, [1; 32]).await);
        assert_ok(&two.commit(g, 1, Seat::Two, 2, [2; 32]).await);
        two.expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { .. })
        })
        .await;
        assert_ok(&two.reveal(g, 1, 2, [2; 32]).await);
        // One never reveals.
        match two
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, .. } => {
                assert_eq!(result.winner, Some(Seat::Two));
                assert_eq!(result.reason, EndReason::NoReveal);
            }
            _ => unreachable!(),
        }
        one.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
    }
}

#[tokio::test]
async fn a_player_whose_bank_runs_out_loses_on_time() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut a = TestClient::connect(&server).await;
        a.register("nina1").await;
        let mut b = TestClient::connect(&server).await;
        b.register("oscar").await;
        let tc = TimeControl {
            initial_ms: elementals_protocol::time_control::MIN_INITIAL_MS,
            increment_ms: 0,
            reveal_ms: 5_000,
        };
        let id = a.id();
        let challenge = match a
            .request(ClientMsg::Challenge {
                id,
                opponent: "oscar".into(),
                variant: Variant::CLASSIC,
                time_control: tc,
                rated: true,
            })
            .await
        {
            ServerMsg::ChallengeSent { challenge, .. } => challenge,
            other => panic!("{other:?}"),
        };
        b.expect("challenge_received", |m| {
            matches!(m, ServerMsg::ChallengeReceived { .. })
        })
        .await;
        let id = b.id();
        assert_ok(
            &b.request(ClientMsg::AcceptChallenge {
                id,
                challenge_id: challenge.challenge_id,
            })
            .await,
        );
        let (game, seat_a) = a.game_start().await;
        let (mut one, mut two) = if seat_a == Seat::One { (a, b) } else { (b, a) };
        // Round 1 runs under the abort window, not the clocks; play it, then in round 2 seat
        // one commits and seat two never does and runs out of time.
        play_round(&mut one, &mut two, game.game_id, 1, (1, 1)).await;
        assert_ok(&one.commit(game.game_id, 2, Seat::One, 1, [1; 32]).await);
        match one
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, clocks, .. } => {
                assert_eq!(result.winner, Some(Seat::One));
                assert_eq!(result.reason, EndReason::Time);
                assert_eq!(clocks.two_ms, 0);
                assert!(clocks.one_ms > 0);
            }
            _ => unreachable!(),
        }
    }
}

#[tokio::test]
async fn nobody_committing_in_round_one_aborts_unrated_as_welcome_announces() {
    for backend in BACKENDS {
        let server = start_server_on_with(backend, |c| c.first_commit_secs = 1).await;
        let limits = TestClient::welcome_limits(&server).await;
        assert_eq!(limits.first_commit_ms, 1_000);
        let (mut one, _two, _game) = paired_players(&server, "paula", "quinn").await;
        match one
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await
        {
            ServerMsg::GameOver { result, rated, .. } => {
                assert_eq!(result.reason, EndReason::Aborted);
                assert_eq!(result.winner, None);
                assert!(!rated);
            }
            _ => unreachable!(),
        }
        let (_, body) = server.http_get("/api/players/paula").await;
        let page: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page["rating"], 1.0);
        assert_eq!(page["history"].as_array().unwrap().len(), 0);
    }
}

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
            },
            ClientMsg::Ping { id: ids[1] },
            ClientMsg::Commit {
                id: ids[2],
                game_id,
                round: 1,
                commitment,
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

/// The field names of a `#### \`name\`` table of PROTOCOL.md.
fn documented_fields(name: &str) -> Vec<String> {
    const PROTOCOL_MD: &str = include_str!("../../PROTOCOL.md");
    let heading = format!("#### `{name}`\n");
    let start = PROTOCOL_MD
        .find(&heading)
        .unwrap_or_else(|| panic!("PROTOCOL.md documents `{name}`"));
    let body = &PROTOCOL_MD[start + heading.len()..];
    let body = &body[..body.find("\n#").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`'))
        .map(|(field, _)| field.to_owned())
        .collect()
}

fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn sorted(mut fields: Vec<String>) -> Vec<String> {
    fields.sort();
    fields
}

/// `GET /api/games/{id}` answers exactly the shape PROTOCOL.md section 12 documents, and
/// nothing internal: no account ids.
#[tokio::test]
async fn a_finished_game_record_has_the_documented_shape_and_no_account_ids() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "shape1", "shape2").await;
        play_round(&mut one, &mut two, game.game_id, 1, (5, 2)).await;
        one.resign(game.game_id).await;
        // The record is stored once the ratings are: the rating update says so.
        one.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let (status, body) = server
            .http_get(&format!("/api/games/{}", game.game_id))
            .await;
        assert_eq!(status, 200);
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(keys(&record), sorted(documented_fields("GameRecord")));
        for seat in ["one", "two"] {
            let player = &record["players"][seat];
            assert_eq!(
                keys(player),
                sorted(documented_fields("RecordPlayer")),
                "{seat}"
            );
        }
        assert_eq!(
            record["players"]["one"]["name"],
            game.players.one.name.as_str()
        );
        let round = &record["rounds"][0];
        assert_eq!(keys(round), sorted(documented_fields("RecordRound")));
        assert_eq!(round["commitments"]["one"].as_str().map(str::len), Some(64));
        assert!(!body.contains("account_id"), "{body}");
        // Any spelling of the id.
        let upper = game.game_id.to_string().to_uppercase();
        let (status, _) = server.http_get(&format!("/api/games/{upper}")).await;
        assert_eq!(status, 200);
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
