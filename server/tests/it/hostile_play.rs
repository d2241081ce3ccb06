//! Hostile play over real WebSockets: values outside the documented limits, moves out of
//! phase, replays of earlier rounds, commitments carried from another game, moves after
//! the end. Each gets its documented code and leaves the game as it was.
//! (`games.rs` covers a reveal before anyone committed, a wrong round, a short commitment,
//! a second commit and moves by players and spectators with no seat.)

use crate::common::*;
use elementals_protocol::commitment;
use elementals_protocol::messages::{ClientMsg, GameId, GameSnapshot, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ErrorCode, TimeControl};

async fn snapshot(client: &mut TestClient, game_id: GameId) -> GameSnapshot {
    let id = client.id();
    match client.request(ClientMsg::Sync { id, game_id }).await {
        ServerMsg::Snapshot { snapshot, .. } => snapshot,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

async fn commit_bytes(
    client: &mut TestClient,
    game_id: GameId,
    round: u32,
    commitment: Vec<u8>,
) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Commit {
            id,
            game_id,
            round,
            commitment,
            pick: None,
            nonce: None,
        })
        .await
}

async fn reveal_bytes(
    client: &mut TestClient,
    game_id: GameId,
    round: u32,
    pick: u16,
    nonce: Vec<u8>,
) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Reveal {
            id,
            game_id,
            round,
            pick,
            nonce,
        })
        .await
}

async fn reveal_phase(client: &mut TestClient, round: u32) {
    client
        .expect(
            "reveal_phase",
            |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
        )
        .await;
}

#[tokio::test]
async fn commitments_nonces_and_picks_out_of_range_change_nothing() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "range1", "range2").await;
    let g = game.game_id;
    for len in [0, 31, 33, 64] {
        let r = commit_bytes(&mut one, g, 1, vec![7; len]).await;
        assert_error(&r, ErrorCode::BadCommitment);
    }
    assert!(!snapshot(&mut one, g).await.committed.one);
    let nonce = [5u8; 32];
    assert_ok(&one.commit(g, 1, Seat::One, 3, nonce).await);
    assert_ok(&two.commit(g, 1, Seat::Two, 1, [6; 32]).await);
    reveal_phase(&mut one, 1).await;
    for len in [0, 31, 33] {
        let r = reveal_bytes(&mut one, g, 1, 3, vec![5; len]).await;
        assert_error(&r, ErrorCode::BadNonce);
    }
    // Classic has elements 1..=5; a pick outside is refused before it is checked against
    // the commitment (and a pick over u16 does not even decode: see hostile_frames).
    for pick in [0, 6, 99, u16::MAX] {
        let r = reveal_bytes(&mut one, g, 1, pick, nonce.to_vec()).await;
        assert_error(&r, ErrorCode::InvalidPick);
    }
    assert!(!snapshot(&mut one, g).await.revealed.one);
    assert_ok(&one.reveal(g, 1, 3, nonce).await);
    assert_ok(&two.reveal(g, 1, 1, [6; 32]).await);
    one.expect("round_result", |m| {
        matches!(m, ServerMsg::RoundResult { .. })
    })
    .await;
}

#[tokio::test]
async fn invalid_variants_and_time_controls_are_refused() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    client.register("shape1").await;
    let bad_variants = [
        (2, 1, 3),   // too few elements
        (100, 2, 3), // too many
        (5, 0, 3),   // no range
        (5, 3, 3),   // range over (number - 1) / 2
        (5, 2, 0),   // no distance
        (5, 2, 21),  // too far
    ];
    for (number, range, distance) in bad_variants {
        let variant = Variant {
            number,
            range,
            distance,
        };
        let id = client.id();
        let r = client
            .request(ClientMsg::JoinPool {
                id,
                variant,
                time_control: "blitz".into(),
                rated: true,
            })
            .await;
        assert_error(&r, ErrorCode::InvalidVariant);
        let id = client.id();
        let r = client
            .request(ClientMsg::CreateSeek {
                id,
                variant,
                time_control: TimeControl::BLITZ,
                rated: true,
            })
            .await;
        assert_error(&r, ErrorCode::InvalidVariant);
    }
    for preset in ["bullet", "", "BLITZ "] {
        let id = client.id();
        let r = client
            .request(ClientMsg::JoinPool {
                id,
                variant: Variant::CLASSIC,
                time_control: preset.into(),
                rated: true,
            })
            .await;
        assert_error(&r, ErrorCode::InvalidTimeControl);
    }
    let tc = |initial_ms, increment_ms, reveal_ms| TimeControl {
        initial_ms,
        increment_ms,
        reveal_ms,
        per_phase_ms: None,
    };
    let bad_time_controls = [
        tc(9_999, 0, 15_000),
        tc(7_200_001, 0, 15_000),
        tc(180_000, 60_001, 15_000),
        tc(180_000, 0, 1_999),
        tc(180_000, 0, 120_001),
        tc(u64::MAX, u64::MAX, u64::MAX),
    ];
    for time_control in bad_time_controls {
        let id = client.id();
        let r = client
            .request(ClientMsg::CreateSeek {
                id,
                variant: Variant::CLASSIC,
                time_control,
                rated: false,
            })
            .await;
        assert_error(&r, ErrorCode::InvalidTimeControl);
    }
    // Nothing was created or joined.
    let id = client.id();
    assert_error(
        &client.request(ClientMsg::LeavePool { id }).await,
        ErrorCode::NotQueued,
    );
    let id = client.id();
    match client.request(ClientMsg::ListSeeks { id }).await {
        ServerMsg::Seeks { seeks, .. } => assert!(seeks.is_empty(), "{seeks:?}"),
        other => panic!("{other:?}"),
    }
}

async fn register(client: &mut TestClient, name: &str, password: &str) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::Register {
            id,
            name: name.into(),
            password: password.into(),
        })
        .await
}

#[tokio::test]
async fn names_and_passwords_outside_the_limits_are_refused() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    let long_name = "a".repeat(21);
    for name in [
        "ab",
        &long_name,
        "bad name",
        "naïve",
        "tab\tname",
        "",
        "guest-42",
        "GUEST-x1",
    ] {
        let r = register(&mut client, name, "password123").await;
        assert_error(&r, ErrorCode::InvalidName);
    }
    let long_password = "p".repeat(129);
    for password in ["", "1234567", &long_password] {
        let r = register(&mut client, "okname", password).await;
        assert_error(&r, ErrorCode::InvalidPassword);
    }
    // A login with a name or password over the limits is just wrong credentials.
    let id = client.id();
    let r = client
        .request(ClientMsg::Login {
            id,
            name: "n".repeat(10_000),
            password: "password123".into(),
        })
        .await;
    assert_error(&r, ErrorCode::BadCredentials);
    // The limits themselves are allowed (bytes, not characters, for passwords).
    let r = register(&mut client, "abc", &"é".repeat(64)).await;
    assert!(matches!(r, ServerMsg::Authenticated { .. }), "{r:?}");
    let mut other = TestClient::connect(&server).await;
    let r = register(&mut other, &"z".repeat(20), "12345678").await;
    assert!(matches!(r, ServerMsg::Authenticated { .. }), "{r:?}");
}

#[tokio::test]
async fn moves_out_of_phase_are_refused() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "phase1", "phase2").await;
    let g = game.game_id;
    let (n1, n2) = ([1u8; 32], [2u8; 32]);
    assert_ok(&one.commit(g, 1, Seat::One, 2, n1).await);
    // One has committed, two has not: still too early to reveal.
    assert_error(&one.reveal(g, 1, 2, n1).await, ErrorCode::WrongPhase);
    assert_ok(&two.commit(g, 1, Seat::Two, 4, n2).await);
    reveal_phase(&mut one, 1).await;
    // A commit during the reveal phase, by either seat.
    assert_error(
        &one.commit(g, 1, Seat::One, 3, [3; 32]).await,
        ErrorCode::AlreadyCommitted,
    );
    assert_error(
        &two.commit(g, 1, Seat::Two, 3, [3; 32]).await,
        ErrorCode::AlreadyCommitted,
    );
    assert_ok(&one.reveal(g, 1, 2, n1).await);
    assert_error(&one.reveal(g, 1, 2, n1).await, ErrorCode::AlreadyRevealed);
    let s = snapshot(&mut two, g).await;
    assert_eq!((s.round, s.revealed.one, s.revealed.two), (1, true, false));
    assert_ok(&two.reveal(g, 1, 4, n2).await);
}

#[tokio::test]
async fn an_earlier_rounds_commitment_or_reveal_replayed_is_refused() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "replay1", "replay2").await;
    let g = game.game_id;
    let (n1, n2) = ([0x11u8; 32], [0x22u8; 32]);
    let round_one = commitment::make(&g.0, 1, Seat::One, 2, &n1).to_vec();
    assert_ok(&commit_bytes(&mut one, g, 1, round_one.clone()).await);
    assert_ok(&two.commit(g, 1, Seat::Two, 2, n2).await);
    reveal_phase(&mut one, 1).await;
    assert_ok(&one.reveal(g, 1, 2, n1).await);
    assert_ok(&two.reveal(g, 1, 2, n2).await);
    one.expect(
        "round 2",
        |m| matches!(m, ServerMsg::RoundStart { round, .. } if *round == 2),
    )
    .await;
    // The round-1 messages, resent as they were: the round is over.
    assert_error(
        &commit_bytes(&mut one, g, 1, round_one.clone()).await,
        ErrorCode::WrongRound,
    );
    assert_error(&one.reveal(g, 1, 2, n1).await, ErrorCode::WrongRound);
    // The round-1 commitment offered for round 2 is taken (it is opaque), but the round is
    // part of what it commits to, so the round-1 pick and nonce do not open it.
    assert_ok(&commit_bytes(&mut one, g, 2, round_one).await);
    assert_ok(&two.commit(g, 2, Seat::Two, 3, n2).await);
    reveal_phase(&mut one, 2).await;
    assert_error(&one.reveal(g, 2, 2, n1).await, ErrorCode::RevealMismatch);
    assert!(!snapshot(&mut one, g).await.revealed.one);
}

#[tokio::test]
async fn moves_in_another_game_are_refused_and_commitments_do_not_travel() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "travel1", "travel2").await;
    let (mut other, _other_two, other_game) = paired_players(&server, "travel3", "travel4").await;
    let (g, h) = (game.game_id, other_game.game_id);
    // A player of one live game cannot act in another.
    assert_error(
        &one.commit(h, 1, Seat::One, 1, [1; 32]).await,
        ErrorCode::NotSeated,
    );
    let id = one.id();
    assert_error(
        &one.request(ClientMsg::Resign { id, game_id: h }).await,
        ErrorCode::NotSeated,
    );
    // A commitment made for the other game (same round, seat, pick and nonce) is taken as
    // bytes, but it binds the other game's id: it never opens here.
    let nonce = [9u8; 32];
    let foreign = commitment::make(&h.0, 1, Seat::One, 4, &nonce).to_vec();
    assert_ok(&commit_bytes(&mut one, g, 1, foreign).await);
    assert_ok(&two.commit(g, 1, Seat::Two, 1, [8; 32]).await);
    reveal_phase(&mut one, 1).await;
    assert_error(&one.reveal(g, 1, 4, nonce).await, ErrorCode::RevealMismatch);
    // The other game never noticed any of it.
    let s = snapshot(&mut other, h).await;
    assert_eq!(s.round, 1);
    assert!(!s.committed.one && !s.committed.two);
}

#[tokio::test]
async fn moves_after_the_game_ended_are_refused_with_game_over() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "ended1", "ended2").await;
    let g = game.game_id;
    let id = two.id();
    assert_ok(&two.request(ClientMsg::Resign { id, game_id: g }).await);
    one.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    assert_error(
        &one.commit(g, 1, Seat::One, 1, [1; 32]).await,
        ErrorCode::GameOver,
    );
    assert_error(&one.reveal(g, 1, 1, [1; 32]).await, ErrorCode::GameOver);
    let requests: [fn(u32, GameId) -> ClientMsg; 3] = [
        |id, game_id| ClientMsg::Resign { id, game_id },
        |id, game_id| ClientMsg::OfferDraw { id, game_id },
        |id, game_id| ClientMsg::ClaimWin { id, game_id },
    ];
    for request in requests {
        let id = one.id();
        assert_error(&one.request(request(id, g)).await, ErrorCode::GameOver);
    }
    // Someone who did not play it is told there is no such live game.
    let mut stranger = TestClient::connect(&server).await;
    stranger.register("ended3").await;
    assert_error(
        &stranger.commit(g, 1, Seat::One, 1, [1; 32]).await,
        ErrorCode::UnknownGame,
    );
}
