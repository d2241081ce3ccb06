//! Games against the computer (`play_bot`) and the lobby's counts (`lobby_counts`), over
//! real WebSockets: a bot game played to its end, through a restart; bad requests answered
//! with their documented codes and changing nothing; counts that leave the asker out.

use crate::common::*;
use elementals_protocol::messages::{EndReason, GameId, GameInfo, Phase, PoolCount, ServerMsg};
use elementals_protocol::{ClientMsg, ErrorCode, Seat, Variant};

fn play_bot(id: u32, strength: &str, variant: Variant, preset: &str) -> ClientMsg {
    ClientMsg::PlayBot {
        id,
        strength: strength.into(),
        variant,
        time_control: preset.into(),
    }
}

/// `client` asks for a game against `strength`: answered `ok`, then its `game_start`.
async fn start_bot_game(client: &mut TestClient, strength: &str) -> (GameInfo, Seat) {
    let id = client.id();
    let reply = client
        .request(play_bot(id, strength, Variant::CLASSIC, "blitz"))
        .await;
    assert_ok(&reply);
    client.game_start().await
}

/// Plays `round` as `seat` with `pick`: commits at once, reveals once both have committed;
/// returns the round's result, or the game's end if it came first.
async fn play_my_round(
    client: &mut TestClient,
    game: GameId,
    round: u32,
    seat: Seat,
    pick: u16,
) -> ServerMsg {
    let nonce = rand::random::<[u8; 32]>();
    assert_ok(&client.commit(game, round, seat, pick, nonce).await);
    client
        .expect(
            "reveal_phase",
            |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
        )
        .await;
    assert_ok(&client.reveal(game, round, pick, nonce).await);
    client
        .expect("round_result or game_over", |m| {
            matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round)
                || matches!(m, ServerMsg::GameOver { .. })
        })
        .await
}

/// Plays rounds from `round` on (random picks) until `game_over`; returns it.
async fn play_to_the_end(
    client: &mut TestClient,
    game: GameId,
    mut round: u32,
    seat: Seat,
) -> ServerMsg {
    loop {
        assert!(round <= 300, "a game against the computer ends");
        let pick = rand::random_range(1..=5);
        match play_my_round(client, game, round, seat, pick).await {
            over @ ServerMsg::GameOver { .. } => return over,
            // A round that takes an element to an edge ends the game.
            ServerMsg::RoundResult { record, .. }
                if record.positions.iter().any(|p| p.abs() >= 3) =>
            {
                return client
                    .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
                    .await;
            }
            _ => round += 1,
        }
    }
}

#[tokio::test]
async fn a_game_against_the_computer_starts_at_once_and_is_played_to_its_end_unrated() {
    for backend in BACKENDS {
        a_game_against_the_computer_on(backend).await;
    }
}

async fn a_game_against_the_computer_on(backend: Backend) {
    let server = start_server_on(backend).await;
    let mut alice = TestClient::connect(&server).await;
    alice.register("alice").await;
    let (game, seat) = start_bot_game(&mut alice, "hard").await;
    assert!(!game.rated, "games against the computer are unrated");
    let bot = game.players.get(seat.other());
    assert_eq!(bot.name, "bot-hard");
    assert!(bot.bot);
    assert!(!game.players.get(seat).bot);
    // The snapshot shows the bot as such too.
    match alice
        .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => {
            assert!(snapshot.game.players.get(seat.other()).bot)
        }
        _ => unreachable!(),
    }
    match play_to_the_end(&mut alice, game.game_id, 1, seat).await {
        ServerMsg::GameOver { rated, result, .. } => {
            assert!(!rated);
            assert!(result.winner.is_some(), "{result:?}");
        }
        _ => unreachable!(),
    }
    // Nothing rated: alice's rating is where it started; the game is recorded.
    let (_, body) = server.http_get("/api/players/alice").await;
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["rating"], 1.0, "{body}");
    let (status, _) = server
        .http_get(&format!("/api/games/{}", game.game_id))
        .await;
    assert_eq!(status, 200);
    // The computer plays unrated only: the leaderboard, of rated play, leaves it out.
    let (_, body) = server.http_get("/api/leaderboard").await;
    let board: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = board
        .iter()
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alice"], "{body}");
    // The game's place under the cap is free again: another game starts.
    start_bot_game(&mut alice, "easy").await;
}

/// The bot commits when a round starts; the server restarts before the round resolves,
/// which voids it. Restarted, the bot takes its seat again and plays the round afresh and
/// the game on to its end.
#[tokio::test]
async fn the_computer_resumes_its_game_after_a_restart() {
    let server = start_server().await;
    let mut alice = TestClient::connect(&server).await;
    let token = alice.register("alice").await;
    let (game, seat) = start_bot_game(&mut alice, "medium").await;
    let g = game.game_id;
    let bot = seat.other();
    play_my_round(&mut alice, g, 1, seat, 2).await;
    alice
        .expect(
            "the bot's commitment in round 2",
            |m| matches!(m, ServerMsg::Committed { round: 2, seat: s, .. } if *s == bot),
        )
        .await;
    drop(alice);
    let server = server.restart().await;
    assert_eq!(
        metric(&server, "elementals_bot_games").await,
        1,
        "the restored game is the computer's again"
    );
    let mut alice = TestClient::connect(&server).await;
    match alice.resume(&token).await {
        ServerMsg::Authenticated { game_id, .. } => assert_eq!(game_id, Some(g)),
        other => panic!("{other:?}"),
    }
    match alice
        .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
        .await
    {
        ServerMsg::Snapshot { snapshot, .. } => {
            assert_eq!(snapshot.round, 2);
            assert_eq!(snapshot.phase, Phase::Commit, "round 2 is played again");
        }
        _ => unreachable!(),
    }
    match play_my_round(&mut alice, g, 2, seat, 4).await {
        ServerMsg::RoundResult { record, .. } => assert_eq!(record.round, 2),
        ServerMsg::GameOver { result, .. } => {
            assert_ne!(result.reason, EndReason::Time, "the bot revealed in time")
        }
        other => panic!("{other:?}"),
    }
    if let ServerMsg::GameOver { rated, .. } = play_to_the_end(&mut alice, g, 3, seat).await {
        assert!(!rated);
    }
}

#[tokio::test]
async fn play_bot_refuses_bad_requests_with_their_codes_and_starts_nothing() {
    let server = start_server_with(|c| c.max_bot_games = 1).await;
    let mut anon = TestClient::connect(&server).await;
    let id = anon.id();
    let reply = anon
        .request(play_bot(id, "easy", Variant::CLASSIC, "blitz"))
        .await;
    assert_error(&reply, ErrorCode::NotAuthenticated);

    let mut alice = TestClient::connect(&server).await;
    alice.register("alice").await;
    let bad = [
        (
            play_bot(alice.id(), "grandmaster", Variant::CLASSIC, "blitz"),
            ErrorCode::UnknownStrength,
        ),
        (
            play_bot(alice.id(), "easy", Variant::CLASSIC, "bullet"),
            ErrorCode::InvalidTimeControl,
        ),
        (
            play_bot(
                alice.id(),
                "easy",
                Variant {
                    number: 4,
                    range: 2,
                    distance: 3,
                },
                "blitz",
            ),
            ErrorCode::InvalidVariant,
        ),
    ];
    for (request, code) in bad {
        let reply = alice.request(request).await;
        assert_error(&reply, code);
    }
    // A `rated` field is not one of play_bot's: games against the computer are unrated.
    let id = alice.id();
    #[derive(serde::Serialize)]
    struct RatedPlayBot {
        r#type: &'static str,
        id: u32,
        strength: &'static str,
        variant: Variant,
        time_control: &'static str,
        rated: bool,
    }
    let bytes = rmp_serde::to_vec_named(&RatedPlayBot {
        r#type: "play_bot",
        id,
        strength: "easy",
        variant: Variant::CLASSIC,
        time_control: "blitz",
        rated: true,
    })
    .unwrap();
    alice.send_raw(bytes).await;
    let reply = alice
        .expect("the refusal", |m| matches!(m, ServerMsg::Error { .. }))
        .await;
    assert_error(&reply, ErrorCode::UnknownField);
    // None of that started a game: nothing arrives before a pong.
    assert_eq!(alice.received_before_pong().await, vec![]);

    // Seated against the computer, alice cannot start another game; and with the
    // server's one game against the computer taken, bob cannot either.
    let (game, _) = start_bot_game(&mut alice, "easy").await;
    assert_eq!(metric(&server, "elementals_bot_games").await, 1);
    let id = alice.id();
    let reply = alice
        .request(play_bot(id, "hard", Variant::CLASSIC, "blitz"))
        .await;
    assert_error(&reply, ErrorCode::AlreadyInGame);
    let mut bob = TestClient::connect(&server).await;
    bob.register("bob").await;
    let id = bob.id();
    let reply = bob
        .request(play_bot(id, "hard", Variant::CLASSIC, "blitz"))
        .await;
    assert_error(&reply, ErrorCode::TooManyRequests);
    assert_eq!(bob.received_before_pong().await, vec![]);
    // Once alice's game is over, its place is bob's.
    alice.resign(game.game_id).await;
    alice
        .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    // The bot's task frees the place as it reads the game's end, moments later.
    until_metric(&server, "elementals_bot_games", 0).await;
    let id = bob.id();
    let reply = bob
        .request(play_bot(id, "hard", Variant::CLASSIC, "blitz"))
        .await;
    assert_ok(&reply);
    bob.game_start().await;
}

#[tokio::test]
async fn the_bots_names_are_not_for_players() {
    let server = start_server().await;
    let mut client = TestClient::connect(&server).await;
    for name in ["bot-easy", "Bot-Hard", "bot-x"] {
        let id = client.id();
        let reply = client
            .request(ClientMsg::Register {
                id,
                name: name.into(),
                password: "password123".into(),
            })
            .await;
        assert_error(&reply, ErrorCode::InvalidName);
        let id = client.id();
        let reply = client
            .request(ClientMsg::Login {
                id,
                name: name.into(),
                password: "password123".into(),
            })
            .await;
        assert_error(&reply, ErrorCode::BadCredentials);
    }
}

async fn counts(client: &mut TestClient) -> (u32, Vec<PoolCount>) {
    let id = client.id();
    match client.request(ClientMsg::LobbyCounts { id }).await {
        ServerMsg::Counts { online, pools, .. } => (online, pools),
        other => panic!("{other:?}"),
    }
}

fn pool(variant: Variant, waiting: u32) -> PoolCount {
    PoolCount {
        variant,
        time_control: "blitz".into(),
        rated: true,
        waiting,
    }
}

#[tokio::test]
async fn lobby_counts_shows_who_is_online_and_waiting_without_the_asker() {
    let server = start_server().await;
    let mut anon = TestClient::connect(&server).await;
    let id = anon.id();
    assert_error(
        &anon.request(ClientMsg::LobbyCounts { id }).await,
        ErrorCode::NotAuthenticated,
    );
    let seven = Variant::new(7, 3, 4).unwrap();
    let mut ann = TestClient::connect(&server).await;
    ann.register("ann").await;
    let mut bea = TestClient::connect(&server).await;
    bea.register("bea").await;
    let mut cid = TestClient::connect(&server).await;
    cid.register("cid").await;
    let mut dee = TestClient::connect(&server).await;
    dee.register("dee").await;
    ann.join_pool(Variant::CLASSIC, "blitz").await;
    bea.join_pool(seven, "blitz").await;
    // Ratings far apart would pair anyway in time; these two wait in different pools,
    // and cid joins bea's: the third waiter makes that pool the fullest.
    cid.join_pool(seven, "blitz").await;
    // cid and bea are paired at once (same pool, same rating): then only ann waits.
    let (_, _) = cid.game_start().await;
    bea.game_start().await;
    // Counted at the lobby's tick: the tick that sends ann a queue status after the
    // pairing above (after every message queued to her so far) counts after it too.
    ann.received_before_pong().await;
    ann.expect("queue_status", |m| {
        matches!(m, ServerMsg::QueueStatus { .. })
    })
    .await;
    let (online, pools) = counts(&mut dee).await;
    assert_eq!(
        online, 4,
        "ann, bea, cid and dee; not the connection never signed in"
    );
    assert_eq!(pools, vec![pool(Variant::CLASSIC, 1)]);
    // Ann does not count herself.
    let (_, pools) = counts(&mut ann).await;
    assert_eq!(pools, vec![]);
}
