//! Spectators: snapshots, numbered events, no early picks, and no slowing the players.

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, GameId, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::ErrorCode;

#[tokio::test]
async fn a_spectator_joining_mid_game_gets_a_snapshot_then_every_event_in_order() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "rosa1", "sam01").await;
        let g = game.game_id;
        play_round(&mut one, &mut two, g, 1, (5, 2)).await;

        let mut watcher = TestClient::connect(&server).await;
        let id = watcher.id();
        let listed = watcher.request(ClientMsg::ListGames { id }).await;
        let ServerMsg::LiveGames { games, .. } = listed else {
            panic!("{listed:?}")
        };
        assert!(games.iter().any(|l| l.game_id == g));
        let id = watcher.id();
        let snapshot = match watcher.request(ClientMsg::Watch { id, game_id: g }).await {
            ServerMsg::Snapshot { snapshot, seat, .. } => {
                assert_eq!(seat, None);
                snapshot
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(snapshot.rounds.len(), 1);
        assert_eq!(snapshot.round, 2);
        assert_eq!(
            snapshot.positions[1], -1,
            "element 2 moved to -1 in round 1"
        );
        assert_eq!(snapshot.game.players.one.name, game.players.one.name);

        // Round 2: the spectator sees commits and reveals by seat only, and the picks only
        // in the round result.
        let (n1, n2) = ([1u8; 32], [2u8; 32]);
        assert_ok(&one.commit(g, 2, Seat::One, 1, n1).await);
        assert_ok(&two.commit(g, 2, Seat::Two, 2, n2).await);
        one.expect("reveal_phase", |m| {
            matches!(m, ServerMsg::RevealPhase { .. })
        })
        .await;
        assert_ok(&one.reveal(g, 2, 1, n1).await);
        assert_ok(&two.reveal(g, 2, 2, n2).await);

        let mut last_seq = snapshot.seq;
        let mut saw_result = false;
        while !saw_result {
            let msg = watcher.recv().await;
            if let Some(seq) = msg.seq() {
                assert_eq!(
                    seq,
                    last_seq + 1,
                    "events arrive numbered and in order: {msg:?}"
                );
                last_seq = seq;
            }
            match msg {
                ServerMsg::RoundResult { record, .. } => {
                    assert_eq!((record.picks.one, record.picks.two), (1, 2));
                    saw_result = true;
                }
                ServerMsg::Committed { .. }
                | ServerMsg::Revealed { .. }
                | ServerMsg::RevealPhase { .. } => {}
                other if other.seq().is_none() => {}
                other => panic!("unexpected event before the result: {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn players_finish_a_game_while_a_spectator_reads_nothing() {
    // The full-queue case (resync, then drop) is pinned by the game actor's unit tests,
    // where the spectator's outbox can be filled exactly; here the real socket path.
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "tina1", "umar1").await;
    // This spectator watches and never reads again.
    let mut stuck = TestClient::connect(&server).await;
    let id = stuck.id();
    stuck
        .send(&ClientMsg::Watch {
            id,
            game_id: game.game_id,
        })
        .await;
    let picks = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];
    for (i, p) in picks.iter().enumerate() {
        play_round(&mut one, &mut two, game.game_id, i as u32 + 1, *p).await;
    }
    one.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    two.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    drop(stuck);
}

#[tokio::test]
async fn games_that_have_ended_do_not_count_against_the_watch_limit() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let mut games = Vec::new();
        for i in 0..17 {
            games.push(paired_players(&server, &format!("wla{i:02}"), &format!("wlb{i:02}")).await);
        }
        let mut fan = TestClient::connect(&server).await;
        for (_, _, game) in &games[..16] {
            let r = watch(&mut fan, game.game_id).await;
            assert!(matches!(r, ServerMsg::Snapshot { .. }), "{r:?}");
        }
        let seventeenth = games[16].2.game_id;
        let r = watch(&mut fan, seventeenth).await;
        assert_error(&r, elementals_protocol::ErrorCode::TooManyRequests);

        // The first game ends (its rating update comes after the registry has let it go).
        let (one, two, first) = &mut games[0];
        one.resign(first.game_id).await;
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let r = watch(&mut fan, seventeenth).await;
        assert!(matches!(r, ServerMsg::Snapshot { .. }), "{r:?}");
    }
}

async fn watch(client: &mut TestClient, game_id: GameId) -> ServerMsg {
    let id = client.id();
    client.request(ClientMsg::Watch { id, game_id }).await
}

/// A game that has ended answers `sync` and `watch` with `game_over`, never with a
/// snapshot or `ok`, to its players and to its spectators alike: a client that missed the
/// end learns it, and fetches the result from `GET /api/games/{id}`. Anyone else is told
/// the game is unknown.
#[tokio::test]
async fn sync_and_watch_of_an_ended_game_answer_game_over_not_a_snapshot() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "endsy1", "endsy2").await;
        let g = game.game_id;
        // Watching needs no sign-in.
        let mut watcher = TestClient::connect(&server).await;
        let id = watcher.id();
        let reply = watcher.request(ClientMsg::Watch { id, game_id: g }).await;
        assert!(matches!(reply, ServerMsg::Snapshot { .. }), "{reply:?}");
        let mut stranger = TestClient::connect(&server).await;
        stranger.register("endsy3").await;

        one.resign(g).await;
        watcher
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        // The game has left the live games.
        until_metric(&server, "elementals_live_games", 0).await;

        for (who, client) in [("a spectator", &mut watcher), ("a player", &mut two)] {
            let id = client.id();
            match client.request(ClientMsg::Sync { id, game_id: g }).await {
                ServerMsg::Error { code, .. } => assert_eq!(code, ErrorCode::GameOver, "{who}"),
                other => panic!("{who}: {other:?}"),
            }
            match watch(client, g).await {
                ServerMsg::Error { code, .. } => assert_eq!(code, ErrorCode::GameOver, "{who}"),
                other => panic!("{who}'s watch: {other:?}"),
            }
        }
        let id = stranger.id();
        assert_error(
            &stranger.request(ClientMsg::Sync { id, game_id: g }).await,
            ErrorCode::UnknownGame,
        );
        assert_error(&watch(&mut stranger, g).await, ErrorCode::UnknownGame);
        // The result is where the error says it is, once stored (the rating update says so).
        one.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let (status, _) = server.http_get(&format!("/api/games/{g}")).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn a_repeated_watch_changes_nothing_and_is_answered_ok() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (_one, _two, game) = paired_players(&server, "rwa01", "rwb01").await;
        let mut fan = TestClient::connect(&server).await;
        let first = watch(&mut fan, game.game_id).await;
        let ServerMsg::Snapshot { snapshot, .. } = first else {
            panic!("{first:?}")
        };
        assert_eq!(snapshot.spectators, 1);
        for _ in 0..5 {
            assert_ok(&watch(&mut fan, game.game_id).await);
        }
        // A spectator's `sync` is the way to a fresh snapshot; it is still one spectator.
        let id = fan.id();
        let synced = fan
            .request(ClientMsg::Sync {
                id,
                game_id: game.game_id,
            })
            .await;
        let ServerMsg::Snapshot { snapshot, .. } = synced else {
            panic!("{synced:?}")
        };
        assert_eq!(snapshot.spectators, 1);
    }
}

/// Fifty connections watching one game and asking for snapshots as fast as they are
/// answered, while its players play: every move is answered `ok`, and each connection is
/// one spectator however often it asks. (That no spectator's command is handled before a
/// waiting move is pinned where the queues can be filled exactly: the game actor's tests,
/// `isolation::moves_are_handled_before_any_spectators_command_however_many_wait`.)
#[tokio::test]
async fn a_flood_of_watches_and_syncs_refuses_no_move_and_counts_each_spectator_once() {
    const FLOODERS: usize = 50;
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "flo01", "flo02").await;
    let g = game.game_id;
    let mut flooders = Vec::new();
    for _ in 0..FLOODERS {
        let mut fan = TestClient::connect(&server).await;
        let first = watch(&mut fan, g).await;
        assert!(matches!(first, ServerMsg::Snapshot { .. }), "{first:?}");
        flooders.push(tokio::spawn(async move {
            for _ in 0..20 {
                assert_ok(&watch(&mut fan, g).await);
                let id = fan.id();
                let synced = fan.request(ClientMsg::Sync { id, game_id: g }).await;
                assert!(matches!(synced, ServerMsg::Snapshot { .. }), "{synced:?}");
            }
            fan
        }));
    }
    // The seed's first three rounds (the game is still live after them).
    for (round, picks) in [(5, 2), (1, 2), (2, 3)].into_iter().enumerate() {
        play_round(&mut one, &mut two, g, round as u32 + 1, picks).await;
    }
    let mut fans = Vec::new();
    for flooder in flooders {
        fans.push(flooder.await.expect("every flooder's request was answered"));
    }
    let mut late = TestClient::connect(&server).await;
    let r = watch(&mut late, g).await;
    let ServerMsg::Snapshot { snapshot, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(snapshot.spectators, FLOODERS as u32 + 1);
    assert_eq!(snapshot.rounds.len(), 3);
}
