//! `elementals bot` playing several games at once on one connection, against the real
//! server on 127.0.0.1:0: paired twice from the `corr-1d` pool with `--at-once 2`, it
//! commits in both games; killed before either reveal and started again on the same state
//! directory, it comes back into both games and reveals each one's kept pick. Sitting in a
//! correspondence game, it plays a blitz game from the pool beside it.

use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::rules::{Element, Seat};
use elementals_client::protocol::Variant;
use elementals_client::render::seat_name;
use elementals_client::{
    play_game, wait_for_game_start, Client, GameStart, GameState, NonceStore, Random, SealedPick,
};
use tokio::io::{AsyncBufReadExt, BufReader};

mod real_server;

use real_server::{elementals, queued_bot, start_server, until, WAIT};

/// `client`, seated as `seat`, commits to `pick` in round 1 and reveals it at once.
async fn commit_and_reveal(client: &Client, game: GameId, seat: Seat, pick: Element) {
    let (sealed, commitment) = SealedPick::new(game, 1, seat, pick);
    client.commit(game, 1, commitment).await.unwrap();
    client
        .reveal(game, 1, sealed.pick, sealed.nonce)
        .await
        .unwrap();
}

/// One of the bot's opponents: its client, the game as it sees it, and the bot's seat.
struct Opponent {
    client: Client,
    game: GameId,
    seen: GameState,
    bots: Seat,
}

/// `name` signs in and joins the `corr-1d` pool, where the bot waits (or comes): paired.
async fn paired_with_the_bot(server: &real_server::TestServer, name: &str) -> Opponent {
    paired_with(server, name, "cor").await
}

/// `name` signs in and joins the `corr-1d` pool, where `other` waits (or comes): paired.
async fn paired_with(server: &real_server::TestServer, name: &str, other: &str) -> Opponent {
    let client = Client::connect(&server.url).await.unwrap();
    client.register_or_login(name, "password-1").await.unwrap();
    client
        .join_pool(Variant::CLASSIC, "corr-1d", true)
        .await
        .unwrap();
    let GameStart { game, seat } = tokio::time::timeout(WAIT, wait_for_game_start(&client))
        .await
        .expect("the pool pairs it with the bot")
        .unwrap();
    assert_eq!(game.players.get(seat.other()).name, other);
    Opponent {
        client,
        game: game.game_id,
        seen: GameState::new(game, Some(seat)),
        bots: seat.other(),
    }
}

#[tokio::test]
async fn a_bot_plays_two_correspondence_games_at_once_and_reveals_in_each_after_a_restart() {
    let server = start_server().await;
    let state_dir = tempfile::tempdir().unwrap();
    let dir = state_dir.path().to_str().unwrap().to_owned();
    let bot = |games: &'static str| {
        elementals(&[
            "bot",
            "--server",
            &server.url,
            "--name",
            "cor",
            "--password",
            "password-1",
            "--time-control",
            "corr-1d",
            "--games",
            games,
            "--at-once",
            "2",
            "--state-dir",
            &dir,
        ])
    };
    let mut first = bot("2").spawn().unwrap();
    let mut opponents = Vec::new();
    for name in ["pia", "quin"] {
        opponents.push(paired_with_the_bot(&server, name).await);
    }
    // The bot commits in both games, on one connection; each game's pick and nonce were
    // on disk, in a file of its own, before the server heard of them.
    for o in &mut opponents {
        let bots = o.bots;
        until(&o.client, &mut o.seen, |s| s.committed(bots)).await;
    }
    let store = NonceStore::open(state_dir.path(), "cor").unwrap();
    let kept: Vec<SealedPick> = opponents
        .iter()
        .map(|o| store.load(o.game).unwrap().expect("kept before the commit"))
        .collect();
    assert!(kept.iter().all(|k| k.round == 1));
    first.kill().await.unwrap();

    // Both reveal phases open while the bot is gone.
    for o in &opponents {
        commit_and_reveal(&o.client, o.game, o.bots.other(), 2).await;
    }

    // Started again with no game to seek, it comes back into both (one by the snapshot
    // that follows its sign-in, the other by `sync`) and reveals each kept pick.
    let second = bot("0").spawn().unwrap();
    for (o, kept) in opponents.iter_mut().zip(&kept) {
        until(&o.client, &mut o.seen, |s| !s.history().is_empty()).await;
        let round = &o.seen.history()[0];
        assert_eq!(*round.picks.get(o.bots), kept.pick);
        assert_eq!(*round.picks.get(o.bots.other()), 2);
    }
    for o in &opponents {
        o.client.resign(o.game).await.unwrap();
    }
    let out = tokio::time::timeout(WAIT, second.wait_with_output())
        .await
        .expect("the bot ends with its games")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for o in &opponents {
        let game = o.game;
        assert!(
            stdout.contains(&format!("resuming game {game}")),
            "{stdout}"
        );
        let won = format!("game resumed {game}: won as {}", seat_name(o.bots));
        assert!(stdout.contains(&won), "{stdout}");
    }
    // Nothing is kept once the games are over.
    assert_eq!(store.games().unwrap(), []);
}

#[tokio::test]
async fn the_bot_plays_one_live_game_at_a_time() {
    let out = elementals(&[
        "bot",
        "--server",
        "ws://127.0.0.1:9/ws",
        "--name",
        "cor",
        "--password",
        "password-1",
        "--at-once",
        "2",
    ])
    .output()
    .await
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("correspondence"), "{stderr}");
}

#[tokio::test]
async fn a_bot_sitting_in_a_correspondence_game_plays_a_blitz_game_beside_it() {
    let server = start_server().await;
    // Liv sits in a correspondence game with Ned, then leaves it waiting.
    let liv = Client::connect(&server.url).await.unwrap();
    liv.register_or_login("liv", "password-1").await.unwrap();
    liv.join_pool(Variant::CLASSIC, "corr-1d", true)
        .await
        .unwrap();
    let mut ned = paired_with(&server, "ned", "liv").await;
    drop(liv);

    // The bot signs in as Liv to play one blitz game: it plays the correspondence game on
    // (its round-1 commit) and the blitz game to its end beside it.
    let mut bot = elementals(&[
        "bot",
        "--server",
        &server.url,
        "--name",
        "liv",
        "--password",
        "password-1",
        "--time-control",
        "blitz",
        "--games",
        "1",
    ])
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(bot.stdout.take().unwrap()).lines();
    let ozzy = queued_bot(&server, "ozzy").await;
    let start = tokio::time::timeout(WAIT, wait_for_game_start(&ozzy))
        .await
        .expect("the blitz pool pairs Ozzy with the bot")
        .unwrap();
    let blitz = start.game.game_id;
    let mut printed = Vec::new();
    let (summary, ()) = tokio::time::timeout(
        WAIT,
        futures::future::join(play_game(&ozzy, start, Random::seeded(3)), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let done = line.starts_with("game 1/1 ");
                printed.push(line);
                if done {
                    return;
                }
            }
        }),
    )
    .await
    .expect("the blitz game ends");
    assert_eq!(summary.unwrap().game_id, blitz);
    assert!(
        printed.contains(&format!("resuming game {}", ned.game)),
        "{printed:#?}"
    );
    assert!(
        printed
            .iter()
            .any(|l| l.starts_with(&format!("game 1/1 {blitz}: "))),
        "{printed:#?}"
    );
    // The correspondence game went on meanwhile, and ends the bot's run when it ends.
    let bots = ned.bots;
    until(&ned.client, &mut ned.seen, |s| s.committed(bots)).await;
    ned.client.resign(ned.game).await.unwrap();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            printed.push(line);
        }
    })
    .await
    .expect("the bot ends with its games");
    assert!(bot.wait().await.unwrap().success(), "{printed:#?}");
    let won = format!("game resumed {}: won as {}", ned.game, seat_name(bots));
    assert!(printed.iter().any(|l| l.starts_with(&won)), "{printed:#?}");
}
