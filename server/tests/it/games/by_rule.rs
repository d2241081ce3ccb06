//! Games lost by rule (resignation, no reveal, time) and aborted, over real frames.

use super::*;

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
            per_phase_ms: None,
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
            per_phase_ms: None,
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

/// `abort`: either player calls the game off until both have committed in round 1, the
/// other included after one has committed: no winner, unrated, no rating change. From
/// both commitments on it is refused, and the game goes on.
#[tokio::test]
async fn a_player_aborts_round_one_unrated_until_both_have_committed() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "abby1", "abel1").await;
        assert_ok(&one.commit(game.game_id, 1, Seat::One, 1, [1; 32]).await);
        let id = two.id();
        let reply = two
            .request(ClientMsg::Abort {
                id,
                game_id: game.game_id,
            })
            .await;
        assert_ok(&reply);
        for player in [&mut one, &mut two] {
            match player
                .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                .await
            {
                ServerMsg::GameOver { result, rated, .. } => {
                    assert_eq!(result.winner, None);
                    assert_eq!(result.reason, EndReason::Aborted);
                    assert!(!rated);
                }
                _ => unreachable!(),
            }
        }
        for name in ["abby1", "abel1"] {
            let body = until_recorded(&server, name).await;
            assert_eq!(body["rating"], 1.0, "{name}: {body}");
            assert_eq!(body["history"].as_array().unwrap().len(), 0, "{name}");
        }

        let (mut one, mut two, game) = paired_players(&server, "abby2", "abel2").await;
        assert_ok(&one.commit(game.game_id, 1, Seat::One, 1, [1; 32]).await);
        assert_ok(&two.commit(game.game_id, 1, Seat::Two, 2, [2; 32]).await);
        let id = one.id();
        let refused = one
            .request(ClientMsg::Abort {
                id,
                game_id: game.game_id,
            })
            .await;
        assert_error(&refused, ErrorCode::AbortNotAllowed);
        // Refused, it changed nothing: the round still resolves.
        assert_ok(&one.reveal(game.game_id, 1, 1, [1; 32]).await);
        assert_ok(&two.reveal(game.game_id, 1, 2, [2; 32]).await);
        one.expect("round_result", |m| {
            matches!(m, ServerMsg::RoundResult { .. })
        })
        .await;
    }
}

/// The player's page once their one finished game is stored (the writer records it after
/// the `game_over` is sent): polled, within `WAIT`.
async fn until_recorded(server: &TestServer, name: &str) -> serde_json::Value {
    until(format!("{name}'s game recorded"), WAIT, async || {
        let (_, body) = server.http_get(&format!("/api/players/{name}/games")).await;
        let games: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        if games.as_array().is_none_or(|g| g.len() != 1) {
            return Err(body);
        }
        assert_eq!(games[0]["result"]["reason"], "aborted", "{body}");
        Ok(())
    })
    .await;
    let (_, body) = server.http_get(&format!("/api/players/{name}")).await;
    serde_json::from_str(&body).unwrap()
}
