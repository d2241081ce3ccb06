//! Correspondence time controls over real frames: in pools, seeks, challenges and against the
//! computer; refused out of bounds; and a game kept, not voided or held, over a restart.
//! (A game weeks long runs on tokio's paused clock in `game::actor::tests::correspondence`:
//! here the server's database thread runs on real time.)

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, GameInfo, GameSnapshot, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::time_control::{MAX_PER_PHASE_MS, MIN_PER_PHASE_MS};
use elementals_protocol::{ErrorCode, TimeControl};

const DAY_MS: u64 = 24 * 3600 * 1000;

/// The snapshot a player gets with `game_start` or on resuming.
async fn snapshot(client: &mut TestClient) -> GameSnapshot {
    match client
        .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => snapshot,
        _ => unreachable!(),
    }
}

/// Two new accounts paired in the classic `preset` pool, in seat order.
async fn paired_in(server: &TestServer, preset: &str, names: [&str; 2]) -> [TestClient; 2] {
    let mut clients = Vec::new();
    for name in names {
        let mut client = TestClient::connect(server).await;
        client.register(name).await;
        client.join_pool(Variant::CLASSIC, preset).await;
        clients.push(client);
    }
    let (mut b, mut a) = (clients.pop().unwrap(), clients.pop().unwrap());
    let (game, seat) = a.game_start().await;
    let _ = b.game_start().await;
    assert_eq!(game.time_control, TimeControl::preset(preset).unwrap());
    if seat == Seat::One {
        [a, b]
    } else {
        [b, a]
    }
}

#[tokio::test]
async fn correspondence_pools_pair_and_round_one_runs_on_a_days_deadline() {
    let server = start_server().await;
    let [mut one, _two] = paired_in(&server, "corr-1d", ["cora1", "cora2"]).await;
    let snap = snapshot(&mut one).await;
    assert_eq!(snap.game.time_control.per_phase_ms, Some(DAY_MS));
    // Both owe round 1's commit, each with (just under) a day to go: no 30-s window.
    assert!(
        snap.clocks.running.one && snap.clocks.running.two,
        "{snap:?}"
    );
    for ms in [snap.clocks.one_ms, snap.clocks.two_ms] {
        assert!((DAY_MS - 60_000..=DAY_MS).contains(&ms), "{ms}");
    }
    // The pools are apart: a corr-3d player is not paired with a corr-1d one.
    let mut c = TestClient::connect(&server).await;
    c.register("cora3").await;
    c.join_pool(Variant::CLASSIC, "corr-3d").await;
    let mut d = TestClient::connect(&server).await;
    d.register("cora4").await;
    d.join_pool(Variant::CLASSIC, "corr-1d").await;
    let id = c.id();
    assert_ok(&c.request(ClientMsg::LeavePool { id }).await);
    let id = d.id();
    assert_ok(&d.request(ClientMsg::LeavePool { id }).await);
}

/// `create_seek` or `challenge` (to `opponent`) with `tc`; the answer.
async fn offer(client: &mut TestClient, tc: TimeControl, opponent: Option<&str>) -> ServerMsg {
    let id = client.id();
    let msg = match opponent {
        None => ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control: tc,
            rated: true,
        },
        Some(name) => ClientMsg::Challenge {
            id,
            opponent: name.into(),
            variant: Variant::CLASSIC,
            time_control: tc,
            rated: true,
        },
    };
    client.request(msg).await
}

#[tokio::test]
async fn seeks_challenges_and_the_computer_take_correspondence_controls() {
    let server = start_server().await;
    let mut a = TestClient::connect(&server).await;
    a.register("corb1").await;
    let mut b = TestClient::connect(&server).await;
    b.register("corb2").await;
    let started = |game: GameInfo, tc| assert_eq!(game.time_control, tc);

    let seek = match offer(&mut a, TimeControl::CORR_3D, None).await {
        ServerMsg::SeekCreated { seek, .. } => seek,
        other => panic!("{other:?}"),
    };
    let id = b.id();
    let accept = ClientMsg::AcceptSeek {
        id,
        seek_id: seek.seek_id,
    };
    assert_ok(&b.request(accept).await);
    started(a.game_start().await.0, TimeControl::CORR_3D);
    started(b.game_start().await.0, TimeControl::CORR_3D);
    let game_id = snapshot(&mut a).await.game.game_id;
    a.resign(game_id).await;
    b.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;

    // A custom correspondence control, two hours a phase, between two more players.
    let mut a = TestClient::connect(&server).await;
    a.register("corb3").await;
    let mut b = TestClient::connect(&server).await;
    b.register("corb4").await;
    let custom = TimeControl::correspondence(2 * 3600 * 1000);
    let challenge = match offer(&mut a, custom, Some("corb4")).await {
        ServerMsg::ChallengeSent { challenge, .. } => challenge,
        other => panic!("{other:?}"),
    };
    b.expect("challenge_received", |m| {
        matches!(m, ServerMsg::ChallengeReceived { .. })
    })
    .await;
    let id = b.id();
    let accept = ClientMsg::AcceptChallenge {
        id,
        challenge_id: challenge.challenge_id,
    };
    assert_ok(&b.request(accept).await);
    started(a.game_start().await.0, custom);
    let game_id = snapshot(&mut a).await.game.game_id;
    a.resign(game_id).await;

    let mut c = TestClient::connect(&server).await;
    c.register("corb5").await;
    let id = c.id();
    let play = ClientMsg::PlayBot {
        id,
        strength: "easy".into(),
        variant: Variant::CLASSIC,
        time_control: "corr-7d".into(),
    };
    assert_ok(&c.request(play).await);
    started(c.game_start().await.0, TimeControl::CORR_7D);
}

#[tokio::test]
async fn correspondence_controls_out_of_bounds_are_invalid_time_control() {
    let server = start_server().await;
    let mut a = TestClient::connect(&server).await;
    a.register("corc1").await;
    let mut b = TestClient::connect(&server).await;
    b.register("corc2").await;
    let bad = [
        TimeControl::correspondence(MIN_PER_PHASE_MS - 1),
        TimeControl::correspondence(MAX_PER_PHASE_MS + 1),
        TimeControl::correspondence(0),
        TimeControl {
            reveal_ms: 15_000,
            ..TimeControl::CORR_1D
        },
        TimeControl {
            per_phase_ms: Some(DAY_MS),
            ..TimeControl::BLITZ
        },
    ];
    for tc in bad {
        assert_error(
            &offer(&mut a, tc, None).await,
            ErrorCode::InvalidTimeControl,
        );
        let challenged = offer(&mut a, tc, Some("corc2")).await;
        assert_error(&challenged, ErrorCode::InvalidTimeControl);
    }
    for name in ["corr-2d", "corr", "CORR-1D"] {
        let id = a.id();
        let join = ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: name.into(),
            rated: true,
        };
        assert_error(&a.request(join).await, ErrorCode::InvalidTimeControl);
    }
    // Nothing was created: no challenge arrived, no seek is listed.
    let pushed = b.received_before_pong().await;
    assert!(
        !pushed
            .iter()
            .any(|m| matches!(m, ServerMsg::ChallengeReceived { .. })),
        "{pushed:?}"
    );
    let id = b.id();
    match b.request(ClientMsg::ListSeeks { id }).await {
        ServerMsg::Seeks { seeks, .. } => assert!(seeks.is_empty(), "{seeks:?}"),
        other => panic!("{other:?}"),
    }
}

/// Resumes `token` on `server`; the player's snapshot.
async fn resume(server: &TestServer, token: &str) -> (TestClient, GameSnapshot) {
    let mut client = TestClient::connect(server).await;
    match client.resume(token).await {
        ServerMsg::Authenticated { .. } => client.token = Some(token.into()),
        other => panic!("resume failed: {other:?}"),
    }
    let snap = snapshot(&mut client).await;
    (client, snap)
}

/// After a restart a correspondence round goes on where it stood: the commit made before it
/// stands (and is revealed with its nonce), the clocks are not held, and the deadline still
/// counts from the phase's start.
#[tokio::test]
async fn a_restart_neither_voids_nor_holds_a_correspondence_round() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let [mut one, two] = paired_in(&server, "corr-1d", ["cord1", "cord2"]).await;
        let g = snapshot(&mut one).await.game.game_id;
        let phase_began = std::time::Instant::now();
        let nonce = [7; 32];
        assert_ok(&one.commit(g, 1, Seat::One, 2, nonce).await);
        let tokens = [one.token.clone().unwrap(), two.token.clone().unwrap()];
        drop((one, two));
        // At least this much of the phase is gone by the time the server is back (the
        // exact re-anchoring is `game::state::tests::correspondence`'s).
        let gone = phase_began.elapsed().as_millis() as u64;
        let server = server.restart().await;
        let (mut one, snap) = resume(&server, &tokens[0]).await;
        let (mut two, _) = resume(&server, &tokens[1]).await;
        assert_eq!(
            (snap.round, snap.committed.one, snap.committed.two),
            (1, true, false)
        );
        assert!(
            !snap.clocks.running.one && snap.clocks.running.two,
            "{snap:?}"
        );
        assert!(
            snap.clocks.two_ms <= DAY_MS - gone,
            "{snap:?}: {gone} ms of the phase had gone before the restart"
        );
        assert!(snap.clocks.two_ms > DAY_MS - 60_000, "{snap:?}");
        // The round goes on with one's commitment from before the restart.
        let nonce_two = [9; 32];
        assert_ok(&two.commit(g, 1, Seat::Two, 3, nonce_two).await);
        one.expect(
            "reveal_phase",
            |m| matches!(m, ServerMsg::RevealPhase { reveal_ms, .. } if *reveal_ms == DAY_MS),
        )
        .await;
        assert_ok(&one.reveal(g, 1, 2, nonce).await);
        assert_ok(&two.reveal(g, 1, 3, nonce_two).await);
        one.expect("round_result", |m| {
            matches!(m, ServerMsg::RoundResult { .. })
        })
        .await;
    }
}
