//! Playing over several visits, against the real server on 127.0.0.1:0: an
//! `elementals bot` or `play` process killed between its commit and its reveal is started
//! again on the same state directory, comes back into its game and reveals the pick it
//! committed to; and a client that asked `my_games` hears `your_move` when its move is owed.

use elementals_client::protocol::messages::{GameId, OwedAction};
use elementals_client::protocol::rules::{Element, Seat};
use elementals_client::protocol::ServerMsg;
use elementals_client::render::seat_name;
use elementals_client::{
    wait_for_game_start, Client, GameStart, GameState, NonceStore, SealedPick,
};

mod real_server;

use real_server::{elementals, queued_bot, start_server, until, WAIT};

/// Waits until the pool pairs `client`'s queued player with another.
async fn paired(client: &Client) -> GameStart {
    tokio::time::timeout(WAIT, wait_for_game_start(client))
        .await
        .expect("the pool pairs the players")
        .unwrap()
}

/// `client`, seated as `seat`, commits to `pick` in round 1 and reveals it at once.
async fn commit_and_reveal(client: &Client, game: GameId, seat: Seat, pick: Element) {
    let (sealed, commitment) = SealedPick::new(game, 1, seat, pick);
    client.commit(game, 1, commitment).await.unwrap();
    client
        .reveal(game, 1, sealed.pick, sealed.nonce)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_bot_killed_between_its_commit_and_its_reveal_reveals_when_it_comes_back() {
    let server = start_server().await;
    let state_dir = tempfile::tempdir().unwrap();
    let dir = state_dir.path().to_str().unwrap().to_owned();
    let bot = |games: &'static str| {
        elementals(&[
            "bot",
            "--server",
            &server.url,
            "--name",
            "dot",
            "--password",
            "password-1",
            "--games",
            games,
            "--state-dir",
            &dir,
        ])
    };
    let mut first = bot("1").spawn().unwrap();
    let bob = queued_bot(&server, "bob").await;
    let start = paired(&bob).await;
    let game = start.game.game_id;
    let (mine, dots) = (start.seat, start.seat.other());
    let mut seen = GameState::new(start.game, Some(mine));

    // The bot commits; its pick and nonce were on disk before the server heard of them.
    until(&bob, &mut seen, |s| s.committed(dots)).await;
    let store = NonceStore::open(state_dir.path(), "dot").unwrap();
    let kept = store.load(game).unwrap().expect("kept before the commit");
    assert_eq!(kept.round, 1);
    first.kill().await.unwrap();

    // The reveal phase opens while the bot is gone.
    commit_and_reveal(&bob, game, mine, 2).await;

    // Started again with no game to seek, it finishes the one it is seated in, revealing
    // the kept pick: the round resolves with it.
    let second = bot("0").spawn().unwrap();
    until(&bob, &mut seen, |s| !s.history().is_empty()).await;
    let round = &seen.history()[0];
    assert_eq!(*round.picks.get(dots), kept.pick);
    assert_eq!(*round.picks.get(mine), 2);

    bob.resign(game).await.unwrap();
    let out = tokio::time::timeout(WAIT, second.wait_with_output())
        .await
        .expect("the bot ends with its game")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("resuming game {game}")),
        "{stdout}"
    );
    let won = format!("game resumed {game}: won as {}", seat_name(dots));
    assert!(stdout.contains(&won), "{stdout}");
    // Nothing is kept once the game is over.
    assert_eq!(store.games().unwrap(), []);
}

#[tokio::test]
async fn a_client_that_asked_my_games_hears_your_move_when_its_move_is_owed() {
    let server = start_server().await;
    let (ivy, jon) = (
        queued_bot(&server, "ivy").await,
        queued_bot(&server, "jon").await,
    );
    let start = paired(&ivy).await;
    let jon_start = wait_for_game_start(&jon).await.unwrap();
    let game = start.game.game_id;
    assert_eq!(ivy.my_games().await.unwrap().len(), 1);
    for (client, seat) in [(&ivy, start.seat), (&jon, jon_start.seat)] {
        let (_, commitment) = SealedPick::new(game, 1, seat, 1);
        client.commit(game, 1, commitment).await.unwrap();
    }
    // Both committed: Ivy owes her reveal, and is told so.
    let told = tokio::time::timeout(WAIT, async {
        loop {
            if let msg @ ServerMsg::YourMove { .. } = ivy.next_event().await.unwrap() {
                return msg;
            }
        }
    })
    .await
    .expect("your_move comes");
    let ServerMsg::YourMove {
        game_id,
        seat,
        round,
        action,
        deadline,
    } = &told
    else {
        unreachable!()
    };
    assert_eq!(
        (*game_id, *seat, *round, *action),
        (game, start.seat, 1, OwedAction::Reveal)
    );
    assert!(deadline.is_some());
    assert_eq!(elementals_client::message_game(&told), Some(game));
}

#[tokio::test]
async fn a_person_whose_terminal_player_stopped_after_their_pick_reveals_on_coming_back() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = start_server().await;
    let state_dir = tempfile::tempdir().unwrap();
    let dir = state_dir.path().to_str().unwrap().to_owned();
    let play = || {
        let mut cmd = elementals(&[
            "play",
            "--server",
            &server.url,
            "--name",
            "kim",
            "--password",
            "password-1",
            "--state-dir",
            &dir,
        ]);
        cmd.stdin(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (child, stdin, lines)
    };
    let (mut first, mut stdin, mut lines) = play();
    let bob = queued_bot(&server, "lou").await;
    let start = paired(&bob).await;
    let game = start.game.game_id;
    let (mine, kims) = (start.seat, start.seat.other());
    let mut seen = GameState::new(start.game, Some(mine));
    // Kim picks 4 when asked.
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("round 1: your pick") {
                stdin.write_all(b"4\n").await.unwrap();
                return;
            }
        }
    })
    .await
    .expect("asked for a pick");
    until(&bob, &mut seen, |s| s.committed(kims)).await;
    first.kill().await.unwrap();

    commit_and_reveal(&bob, game, mine, 2).await;
    let (mut second, mut stdin, mut lines) = play();
    until(&bob, &mut seen, |s| !s.history().is_empty()).await;
    assert_eq!(*seen.history()[0].picks.get(kims), 4);
    bob.resign(game).await.unwrap();
    let mut printed = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            printed.push(line);
        }
    })
    .await
    .expect("the player ends with the game");
    stdin.shutdown().await.unwrap();
    assert!(second.wait().await.unwrap().success(), "{printed:#?}");
    assert!(
        printed.contains(&format!("resuming game {game}")),
        "{printed:#?}"
    );
    let store = NonceStore::open(state_dir.path(), "kim").unwrap();
    assert_eq!(store.games().unwrap(), []);
}
