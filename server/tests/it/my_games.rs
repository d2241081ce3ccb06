//! "My games" over real WebSockets and HTTP: a player's open game, with which seat owes a
//! commit or a reveal and by when, after each phase of a round; nothing once it has ended
//! or for a player with no game; and no one else's games.

use crate::common::*;
use elementals_protocol::messages::{GameInfo, MyGame, Owed, OwedAction, Phase, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::{ClientMsg, TimeControl};

/// `GET path` with `Authorization: <auth>` (if any), over loopback; status and body.
async fn get_with(server: &TestServer, path: &str, auth: Option<&str>) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.addr;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let status: u16 = text[9..12].parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (status, head.to_lowercase(), body.to_string())
}

/// The open games `token`'s account has, by `GET /api/me/games`.
async fn http_my_games(server: &TestServer, token: &str) -> Vec<MyGame> {
    let (status, _, body) =
        get_with(server, "/api/me/games", Some(&format!("Bearer {token}"))).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

async fn ws_my_games(client: &mut TestClient) -> Vec<MyGame> {
    let id = client.id();
    match client.request(ClientMsg::MyGames { id }).await {
        ServerMsg::OpenGames { id: got, games } => {
            assert_eq!(got, id);
            games
        }
        other => panic!("expected open_games, got {other:?}"),
    }
}

/// Which seats owe what, in order.
fn owing(game: &MyGame) -> Vec<(Seat, OwedAction)> {
    game.owed.iter().map(|o| (o.seat, o.action)).collect()
}

/// Both players' lists over both the WebSocket and HTTP agree and show `game` in `round`
/// and `phase` with `owed` outstanding; returns player one's.
async fn check_both(
    server: &TestServer,
    one: &mut TestClient,
    two: &mut TestClient,
    info: &GameInfo,
    (round, phase): (u32, Phase),
    owed: &[(Seat, OwedAction)],
) -> MyGame {
    let mut seen = Vec::new();
    for (client, seat) in [(&mut *one, Seat::One), (&mut *two, Seat::Two)] {
        let token = client.token.clone().unwrap();
        let ws = ws_my_games(client).await;
        let http = http_my_games(server, &token).await;
        assert_eq!(ws, http, "the request and the endpoint agree");
        assert_eq!(ws.len(), 1, "{ws:?}");
        let mine = &ws[0];
        assert_eq!(mine.game_id, info.game_id);
        assert_eq!(mine.seat, seat);
        assert_eq!(mine.time_control, TimeControl::BLITZ);
        assert_eq!((mine.round, mine.phase), (round, phase));
        assert_eq!(
            owing(mine),
            owed,
            "round {round} {phase:?} as seat {seat:?}"
        );
        seen.push(mine.clone());
    }
    // Each sees the other as the opponent (`paired_players` gives them in seat order).
    assert_eq!(seen[0].opponent, info.players.two);
    assert_eq!(seen[1].opponent, info.players.one);
    assert_eq!(seen[0].owed, seen[1].owed, "both see the same deadlines");
    seen.swap_remove(0)
}

fn deadline(owed: &Owed) -> u64 {
    owed.deadline.expect("a running game's deadline")
}

#[tokio::test]
async fn my_games_follows_each_phase_of_a_round_and_empties_when_the_game_ends() {
    let server = start_server().await;
    let (mut one, mut two, info) = paired_players(&server, "alice", "bobby").await;
    let g = info.game_id;
    let (c, r) = (OwedAction::Commit, OwedAction::Reveal);
    let (s1, s2) = (Seat::One, Seat::Two);

    // Round 1: both owe their commit by the end of the first-commit window.
    let now = elementals_server::clock::unix_ms();
    let first = check_both(
        &server,
        &mut one,
        &mut two,
        &info,
        (1, Phase::Commit),
        &[(s1, c), (s2, c)],
    )
    .await;
    let window = deadline(&first.owed[0]);
    assert_eq!(window, deadline(&first.owed[1]));
    assert!(
        window > now && window <= now + 60_000,
        "{window} vs now {now}"
    );

    let (n1, n2) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
    assert_ok(&one.commit(g, 1, s1, 5, n1).await);
    check_both(
        &server,
        &mut one,
        &mut two,
        &info,
        (1, Phase::Commit),
        &[(s2, c)],
    )
    .await;
    assert_ok(&two.commit(g, 1, s2, 2, n2).await);
    for client in [&mut one, &mut two] {
        client
            .expect("reveal_phase", |m| {
                matches!(m, ServerMsg::RevealPhase { .. })
            })
            .await;
    }
    // Reveals are due by the reveal window (15 s in blitz), before any bank runs out.
    let now = elementals_server::clock::unix_ms();
    let reveal = check_both(
        &server,
        &mut one,
        &mut two,
        &info,
        (1, Phase::Reveal),
        &[(s1, r), (s2, r)],
    )
    .await;
    for owed in &reveal.owed {
        let by = deadline(owed);
        assert!(
            by > now && by <= now + TimeControl::BLITZ.reveal_ms,
            "{by} vs {now}"
        );
    }
    assert_ok(&one.reveal(g, 1, 5, n1).await);
    check_both(
        &server,
        &mut one,
        &mut two,
        &info,
        (1, Phase::Reveal),
        &[(s2, r)],
    )
    .await;
    assert_ok(&two.reveal(g, 1, 2, n2).await);
    for client in [&mut one, &mut two] {
        client
            .expect("round_result", |m| {
                matches!(m, ServerMsg::RoundResult { .. })
            })
            .await;
    }

    // Round 2: the banks run (a full 3 minutes and the increment at most).
    let now = elementals_server::clock::unix_ms();
    let second = check_both(
        &server,
        &mut one,
        &mut two,
        &info,
        (2, Phase::Commit),
        &[(s1, c), (s2, c)],
    )
    .await;
    let most = TimeControl::BLITZ.initial_ms + TimeControl::BLITZ.increment_ms;
    for owed in &second.owed {
        let by = deadline(owed);
        assert!(
            by > now + TimeControl::BLITZ.reveal_ms && by <= now + most,
            "{by} vs {now}"
        );
    }

    one.resign(g).await;
    for client in [&mut one, &mut two] {
        client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        assert_eq!(ws_my_games(client).await, []);
        let token = client.token.clone().unwrap();
        assert_eq!(http_my_games(&server, &token).await, []);
    }
}

#[tokio::test]
async fn a_player_sees_only_their_own_games_and_a_token_is_required() {
    let server = start_server().await;
    let (mut one, _two, info) = paired_players(&server, "alice", "bobby").await;
    let mut carol = TestClient::connect(&server).await;
    let carol_token = carol.register("carol").await;

    // Carol plays nothing: her list is empty, whoever else is playing.
    assert_eq!(ws_my_games(&mut carol).await, []);
    assert_eq!(http_my_games(&server, &carol_token).await, []);
    assert_eq!(ws_my_games(&mut one).await.len(), 1);

    // Nobody else's games without their token: none, a malformed or a wrong one is 401.
    for auth in [
        None,
        Some("Bearer ".to_string()),
        Some("Basic YWxpY2U6cGFzc3dvcmQxMjM=".to_string()),
        Some(format!("Bearer {}", "0f".repeat(32))),
        Some(format!("Bearer {}", info.game_id.0)),
    ] {
        let (status, head, body) = get_with(&server, "/api/me/games", auth.as_deref()).await;
        assert_eq!(status, 401, "{auth:?}: {body}");
        assert!(head.contains("www-authenticate: bearer"), "{head}");
        assert!(!body.contains(&info.game_id.0.to_string()), "{body}");
    }

    // A signed-out token lists nothing any more.
    let id = carol.id();
    assert_ok(&carol.request(ClientMsg::Logout { id }).await);
    let auth = format!("Bearer {carol_token}");
    let (status, _, _) = get_with(&server, "/api/me/games", Some(&auth)).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn my_games_needs_a_signed_in_connection() {
    let server = start_server().await;
    let mut anonymous = TestClient::connect(&server).await;
    let id = anonymous.id();
    assert_error(
        &anonymous.request(ClientMsg::MyGames { id }).await,
        elementals_protocol::ErrorCode::NotAuthenticated,
    );
}

/// What `client` has been sent so far: the `your_move` pushes, and the types of the rest.
async fn your_moves(
    client: &mut TestClient,
) -> (Vec<(u32, Seat, OwedAction, Option<u64>)>, Vec<ServerMsg>) {
    let got = client.received_before_pong().await;
    let told = got
        .iter()
        .filter_map(|m| match m {
            ServerMsg::YourMove {
                round,
                seat,
                action,
                deadline,
                ..
            } => Some((*round, *seat, *action, *deadline)),
            _ => None,
        })
        .collect();
    (told, got)
}

/// Whether `got` holds a message `pred` picks.
fn has(got: &[ServerMsg], pred: impl Fn(&ServerMsg) -> bool) -> bool {
    got.iter().any(pred)
}

// Each move's `ok` is sent after the game has queued its pushes and events for both
// players, so the other player's `ping` is answered after them: `your_moves` sees them.
#[tokio::test]
async fn your_move_goes_once_per_owed_change_to_the_accounts_connection_that_asked_my_games() {
    let server = start_server().await;
    let (mut one, mut two, info) = paired_players(&server, "alice", "bobby").await;
    let g = info.game_id;
    let (c, r) = (OwedAction::Commit, OwedAction::Reveal);
    let (s1, s2) = (Seat::One, Seat::Two);

    // Alice asks for her list (and so follows it); Bobby never does.
    assert_eq!(ws_my_games(&mut one).await.len(), 1);
    let (n1, n2) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
    assert_ok(&one.commit(g, 1, s1, 5, n1).await);
    assert_ok(&two.commit(g, 1, s2, 2, n2).await);
    let (told, got) = your_moves(&mut one).await;
    assert!(has(&got, |m| matches!(m, ServerMsg::RevealPhase { .. })));
    assert_eq!(told.len(), 1, "one push, for the reveal phase: {told:?}");
    assert_eq!((told[0].0, told[0].1, told[0].2), (1, s1, r));
    assert!(told[0].3.is_some(), "a running game's deadline");

    // Alice signs in on a second connection (the first is superseded) and asks there.
    let token = one.token.clone().unwrap();
    let mut again = TestClient::connect(&server).await;
    again.resume(&token).await;
    assert_eq!(one.closed_with().await, Some(4000));
    assert_eq!(ws_my_games(&mut again).await.len(), 1);
    assert_ok(&again.reveal(g, 1, 5, n1).await);
    assert_ok(&two.reveal(g, 1, 2, n2).await);
    let (told, got) = your_moves(&mut again).await;
    assert!(has(&got, |m| matches!(
        m,
        ServerMsg::RoundStart { round: 2, .. }
    )));
    // Round 2's commit, once, with the deadline `my_games` shows.
    let listed = ws_my_games(&mut again).await;
    let by = listed[0]
        .owed
        .iter()
        .find(|o| o.seat == s1)
        .unwrap()
        .deadline;
    assert!(by.is_some());
    assert_eq!(told, [(2, s1, c, by)]);

    // Her commit changes what is owed but owes her nothing new; Bobby's opens the reveals:
    // one more push, the reveal's.
    let (n1, n2) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
    assert_ok(&again.commit(g, 2, s1, 1, n1).await);
    assert_eq!(your_moves(&mut again).await.0, []);
    assert_ok(&two.commit(g, 2, s2, 3, n2).await);
    let (told, got) = your_moves(&mut again).await;
    assert!(has(&got, |m| matches!(
        m,
        ServerMsg::RevealPhase { round: 2, .. }
    )));
    assert_eq!(
        told.iter().map(|t| (t.0, t.2)).collect::<Vec<_>>(),
        [(2, r)]
    );
    // Bobby, who never asked, was pushed nothing.
    assert_eq!(your_moves(&mut two).await.0, []);
}

/// A player who hears `game_over` is done with the game at once, though the game is still
/// being recorded: the server holds the game there for 3 s (`ELEMENTALS_HOLD_AT`), a window
/// that is otherwise microseconds wide, and which a loaded machine once widened enough for
/// the browser's "My games" to keep listing an aborted game. In it, `my_games` leaves the
/// game out, a move in it is answered `game_over`, and a new game may be sought
/// (`already_in_game` is for a live game that has not ended).
#[tokio::test]
async fn a_game_that_has_ended_is_over_for_its_players_as_soon_as_they_hear_it_ended() {
    use crate::recovery_support::{Database, ServerProcess};
    let db = Database::new();
    let server = ServerProcess::start_holding_at(&db, "game_over_published:3000").await;
    let (mut one, mut two, info) = paired_at(server.addr, "mg_hold_a", "mg_hold_b").await;
    let g = info.game_id;
    assert_eq!(ws_my_games(&mut one).await.len(), 1);
    one.resign(g).await;
    for client in [&mut one, &mut two] {
        client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        assert_eq!(ws_my_games(client).await, []);
        let id = client.id();
        let late = client.request(ClientMsg::Resign { id, game_id: g }).await;
        assert_error(&late, elementals_protocol::ErrorCode::GameOver);
        client.join_pool(Variant::CLASSIC, "blitz").await;
    }
    // Paired again, into a new game.
    let next = one
        .expect("game_start", |m| matches!(m, ServerMsg::GameStart { .. }))
        .await;
    let ServerMsg::GameStart { game, .. } = next else {
        unreachable!()
    };
    assert_ne!(game.game_id, g);
}
