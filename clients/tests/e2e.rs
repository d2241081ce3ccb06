//! The client against the real server on 127.0.0.1:0: bots play full rated games while a
//! spectator follows, the leaderboard is read over HTTP, and the `elementals` binary does
//! the same from the command line; a game aborted, and a rematch offered and declined.

use std::process::Stdio;

use elementals_client::protocol::messages::EndReason;
use elementals_client::protocol::{ErrorCode, Seat, ServerMsg, Variant};
use elementals_client::{
    apply_or_resync, http, message_game, play_game, wait_for_game_start, wait_for_rating, Client,
    GameStart, GameState, Greedy, Random, ServerUrl,
};
use tokio::io::{AsyncBufReadExt, BufReader};
mod real_server;

use real_server::{elementals, queued_bot, start_server, TestServer, WAIT};

async fn paired(
    server: &TestServer,
    a: &str,
    b: &str,
) -> ((Client, GameStart), (Client, GameStart)) {
    let (one, two) = (queued_bot(server, a).await, queued_bot(server, b).await);
    let (start_a, start_b) = tokio::time::timeout(
        WAIT,
        futures::future::join(wait_for_game_start(&one), wait_for_game_start(&two)),
    )
    .await
    .expect("the pool pairs the two bots");
    ((one, start_a.unwrap()), (two, start_b.unwrap()))
}

#[tokio::test]
async fn two_bots_play_a_rated_game_while_a_spectator_watches() {
    let server = start_server().await;
    let ((ann, ann_start), (bob, bob_start)) = paired(&server, "ann", "bob").await;
    let game_id = ann_start.game.game_id;
    assert_eq!(bob_start.game.game_id, game_id);
    assert_ne!(ann_start.seat, bob_start.seat);

    // The spectator is attached before either bot picks, so it sees the whole game.
    let watcher = Client::connect(&server.url).await.unwrap();
    watcher.guest().await.unwrap();
    let live = watcher.list_games().await.unwrap();
    assert!(live.iter().any(|g| g.game_id == game_id));
    let mut seen = GameState::from_snapshot(watcher.watch(game_id).await.unwrap(), None);
    let spectate = async {
        while !seen.is_over() {
            let event = watcher.next_event().await.expect("watcher connected");
            apply_or_resync(&watcher, &mut seen, &event).await.unwrap();
        }
        wait_for_rating(&watcher, &mut seen, WAIT).await.unwrap();
    };

    let (a, b, ()) = tokio::time::timeout(
        WAIT,
        futures::future::join3(
            play_game(&ann, ann_start, Greedy::seeded(1)),
            play_game(&bob, bob_start, Random::seeded(2)),
            spectate,
        ),
    )
    .await
    .expect("the game finishes");
    let (a, b) = (a.unwrap(), b.unwrap());

    assert_eq!(a.result, b.result);
    assert_eq!(a.result.reason, EndReason::Edge);
    assert!(a.rated && b.rated);
    assert_eq!(a.rounds, b.rounds);
    let (winner, loser) = if a.won() == Some(true) {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!(winner.won(), Some(true));
    assert_eq!(winner.rating_after, Some(1.5), "1.0 + 1/(e^0 + 1)");
    assert_eq!(loser.rating_after, Some(1.0), "held at the floor");

    // The spectator saw the same game: every round, the winning element on the edge.
    assert_eq!(seen.result(), Some(a.result));
    assert_eq!(seen.history().len() as u32, a.rounds);
    let edge = match winner.seat {
        Seat::One => 3,
        Seat::Two => -3,
    };
    assert!(seen.positions().contains(&edge), "{:?}", seen.positions());
    let ratings = seen.ratings().expect("spectators get the rating update");
    assert_eq!(ratings.get(winner.seat).after, 1.5);

    // And the leaderboard, read over HTTP, has the winner on top.
    let url = ServerUrl::parse(&server.url).unwrap();
    let board = http::leaderboard(&url).await.unwrap();
    let names: Vec<&str> = board.iter().map(|e| e.name.as_str()).collect();
    let winner_name = if a.won() == Some(true) { "ann" } else { "bob" };
    assert_eq!(names.first(), Some(&winner_name), "{board:?}");
    assert_eq!(board[0].rating, 1.5);
}

/// A client-library bot against the server's own: `play_bot` starts the game at once, and
/// it is played to its end, unrated, with `lobby_counts` answering meanwhile.
#[tokio::test]
async fn a_library_bot_plays_the_servers_computer_to_the_end() {
    let server = start_server().await;
    let client = Client::connect(&server.url).await.unwrap();
    client.register("ida", "password-1").await.unwrap();
    let err = client
        .play_bot("expert", Variant::CLASSIC, "blitz")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownStrength));
    client
        .play_bot("medium", Variant::CLASSIC, "blitz")
        .await
        .unwrap();
    let start = tokio::time::timeout(WAIT, wait_for_game_start(&client))
        .await
        .expect("the game starts at once")
        .unwrap();
    let bot = start.game.players.get(start.seat.other());
    assert_eq!((bot.name.as_str(), bot.bot), ("bot-medium", true));
    let (online, pools) = client.lobby_counts().await.unwrap();
    assert_eq!((online, pools), (1, vec![]));
    let summary = tokio::time::timeout(WAIT, play_game(&client, start, Greedy::seeded(7)))
        .await
        .expect("the game finishes")
        .unwrap();
    assert!(!summary.rated);
    assert!(matches!(
        summary.result.reason,
        EndReason::Edge | EndReason::MaxRounds
    ));
}

#[tokio::test]
async fn requests_the_server_refuses_come_back_as_codes() {
    let server = start_server().await;
    let client = Client::connect(&server.url).await.unwrap();
    let err = client
        .join_pool(Variant::CLASSIC, "blitz", true)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotAuthenticated));
    client.register("cara", "password-1").await.unwrap();
    let err = client.leave_pool().await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotQueued));
    assert!(client.ping().await.is_ok());
}

#[tokio::test]
async fn the_cli_bots_play_their_games_and_the_cli_reads_the_leaderboard() {
    let server = start_server().await;
    let bot = |name: &str, strategy: &str, extra: &[&str]| {
        let mut args = vec![
            "bot",
            "--server",
            &server.url,
            "--name",
            name,
            "--password",
            "password-1",
            "--games",
            "2",
            "--strategy",
            strategy,
        ];
        args.extend_from_slice(extra);
        elementals(&args).output()
    };
    // One bot escrows every reveal (one visit a round), the other reveals as usual.
    let (dee, eve) = tokio::time::timeout(
        WAIT,
        futures::future::join(
            bot("dee", "greedy", &["--escrow"]),
            bot("eve", "minimax", &[]),
        ),
    )
    .await
    .expect("the bots finish");
    for out in [dee.unwrap(), eve.unwrap()] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let games: Vec<&str> = stdout.lines().filter(|l| l.starts_with("game ")).collect();
        assert_eq!(games.len(), 2, "{stdout}");
        assert!(games.iter().all(|l| l.contains("; rating ")), "{stdout}");
    }
    let http_base = server.url.replace("ws://", "http://").replace("/ws", "");
    let out = elementals(&["leaderboard", "--server", &http_base])
        .output()
        .await
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(table.contains("dee") && table.contains("eve"), "{table}");
}

#[tokio::test]
async fn the_cli_watcher_prints_every_round_until_the_game_ends() {
    let server = start_server().await;
    let ((fay, fay_start), (gus, gus_start)) = paired(&server, "fay", "gus").await;
    let game_id = fay_start.game.game_id.to_string();
    let mut watch = elementals(&["watch", "--server", &server.url, &game_id])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // The first board is printed once the watcher holds its snapshot: play may begin.
    let first = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert!(first.is_some_and(|l| l.starts_with("game ")));

    let (f, g) = tokio::time::timeout(
        WAIT,
        futures::future::join(
            play_game(&fay, fay_start, Greedy::seeded(3)),
            play_game(&gus, gus_start, Greedy::seeded(4)),
        ),
    )
    .await
    .unwrap();
    let rounds = f.unwrap().rounds;
    assert_eq!(g.unwrap().rounds, rounds);

    let mut printed = Vec::new();
    while let Some(line) = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        printed.push(line);
    }
    let status = watch.wait().await.unwrap();
    assert!(status.success());
    let round_lines = printed.iter().filter(|l| l.starts_with("round ")).count();
    assert_eq!(round_lines as u32, rounds, "{printed:#?}");
    assert!(
        printed
            .iter()
            .any(|l| l.contains(" wins: an element reached the edge")),
        "{printed:#?}"
    );
    assert!(
        printed.iter().any(|l| l.starts_with("ratings: ")),
        "{printed:#?}"
    );
}

#[tokio::test]
async fn a_person_plays_from_the_terminal_against_a_bot() {
    use tokio::io::AsyncWriteExt;
    let server = start_server().await;
    let mut play = elementals(&[
        "play",
        "--server",
        &server.url,
        "--name",
        "hal",
        "--password",
        "password-1",
    ])
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = play.stdin.take().unwrap();
    let mut lines = BufReader::new(play.stdout.take().unwrap()).lines();
    let bot = queued_bot(&server, "ida").await;
    let bot_game = async {
        let start = wait_for_game_start(&bot).await.unwrap();
        play_game(&bot, start, Random::seeded(5)).await.unwrap()
    };
    let person = async {
        let mut printed = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            // The person always picks element 2 when asked.
            if line.starts_with("round ") && line.contains("your pick") {
                stdin.write_all(b"2\n").await.unwrap();
            }
            printed.push(line);
        }
        printed
    };
    let (summary, printed) = tokio::time::timeout(WAIT, futures::future::join(bot_game, person))
        .await
        .expect("the game finishes");
    assert!(play.wait().await.unwrap().success());
    let text = printed.join("\n");
    let resolved = printed.iter().filter(|l| l.contains("one picked")).count();
    assert_eq!(resolved as u32, summary.rounds, "{text}");
    assert!(
        text.contains(" wins: an element reached the edge"),
        "{text}"
    );
    assert!(text.contains("your rating: 1.000 -> "), "{text}");
}

/// Reads `client`'s events until one `pick` keeps.
async fn next_such(client: &Client, pick: impl Fn(&ServerMsg) -> bool) -> ServerMsg {
    tokio::time::timeout(WAIT, async {
        loop {
            let event = client.next_event().await.expect("connected");
            if pick(&event) {
                return event;
            }
        }
    })
    .await
    .expect("it comes in time")
}

#[tokio::test]
async fn an_abort_ends_the_game_unrated_and_a_declined_rematch_is_heard() {
    let server = start_server().await;
    let ((kit, kit_start), (lee, lee_start)) = paired(&server, "kit", "lee").await;
    let game = kit_start.game.game_id;
    let kits = kit_start.seat;
    // Round 1 waits for both commitments: either player may call the game off.
    kit.abort(game).await.unwrap();
    for (client, start) in [(&kit, kit_start), (&lee, lee_start)] {
        let mut state = GameState::new(start.game, Some(start.seat));
        while !state.is_over() {
            let event = next_such(client, |_| true).await;
            apply_or_resync(client, &mut state, &event).await.unwrap();
        }
        assert_eq!(state.result().unwrap().reason, EndReason::Aborted);
        assert_eq!(state.result().unwrap().winner, None);
        assert_eq!(state.rated_result(), Some(false));
    }

    // Lee offers a rematch; Kit declines it, and Lee hears so.
    lee.offer_rematch(game).await.unwrap();
    let offered = next_such(&kit, |m| matches!(m, ServerMsg::RematchOffered { .. })).await;
    assert_eq!(message_game(&offered), Some(game));
    kit.decline_rematch(game).await.unwrap();
    let declined = next_such(&lee, |m| matches!(m, ServerMsg::RematchDeclined { .. })).await;
    let ServerMsg::RematchDeclined { game_id, by } = declined else {
        unreachable!()
    };
    assert_eq!((game_id, by), (game, kits));
    // Declined, the offer stands no more.
    let again = kit.decline_rematch(game).await.unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::NoRematch));
}
