//! Escrowed reveals over real WebSockets: a player who sends the pick and nonce with each
//! commit plays one visit a round; the opponent and a spectator see nothing of the escrowed
//! pick before the round's result; a mismatching escrow is refused with nothing changed; the
//! escrow survives a restart; the record marks escrowed reveals.

use crate::common::*;
use elementals_protocol::messages::{ClientMsg, EndReason, GameId, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;
use elementals_protocol::{wire, ErrorCode};

/// The seed's example game: seat two wins at the edge after five rounds.
const SEED: [(u16, u16); 5] = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];

/// Whether `bytes` holds `needle` anywhere.
fn holds(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// Reads every message `client` receives up to and including the result of `round`, and
/// asserts that none before the result gives away the escrowed reveal: no frame holds its
/// nonce (in bytes or hex), and none but the result holds a record of the round. Returns
/// the result's picks.
async fn frames_until_result(
    client: &mut TestClient,
    who: &str,
    round: u32,
    nonce: &[u8; 32],
) -> SeatPair<u16> {
    let hex = hex::encode(nonce);
    loop {
        let msg = client.recv().await;
        let bytes = wire::encode(&msg);
        assert!(!holds(&bytes, nonce), "{who} got the nonce: {msg:?}");
        assert!(
            !holds(&bytes, hex.as_bytes()),
            "{who} got the nonce: {msg:?}"
        );
        match msg {
            ServerMsg::RoundResult { record, .. } => {
                assert_eq!(record.round, round, "{who}");
                return record.picks;
            }
            ServerMsg::Snapshot { snapshot, .. } => {
                assert!(snapshot.rounds.iter().all(|r| r.round < round), "{who}");
            }
            ServerMsg::GameOver { .. } | ServerMsg::RatingUpdate { .. } => {
                panic!("{who}: the game ended before round {round}'s result: {msg:?}")
            }
            _ => {}
        }
    }
}

async fn watcher(server: &TestServer, game: GameId) -> TestClient {
    let mut watcher = TestClient::connect(server).await;
    let id = watcher.id();
    let reply = watcher
        .request(ClientMsg::Watch { id, game_id: game })
        .await;
    assert!(matches!(reply, ServerMsg::Snapshot { .. }), "{reply:?}");
    watcher
}

#[tokio::test]
async fn one_player_escrows_every_round_and_nobody_sees_a_pick_before_its_result() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "esca1", "escb1").await;
    let g = game.game_id;
    let mut spectator = watcher(&server, g).await;
    for (i, (p1, p2)) in SEED.into_iter().enumerate() {
        let round = i as u32 + 1;
        let (n1, n2) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
        // Seat one escrows first, so its pick is held while seat two has not committed.
        assert_ok(&one.commit_escrowed(g, round, Seat::One, p1, n1).await);
        assert_ok(&two.commit(g, round, Seat::Two, p2, n2).await);
        // Seat one never reveals: a reveal is a duplicate.
        assert_error(
            &one.reveal(g, round, p1, n1).await,
            ErrorCode::AlreadyRevealed,
        );
        // Seat two reveals once the server has revealed for seat one.
        let mut before_reveal = Vec::new();
        loop {
            let msg = two.recv().await;
            let done = matches!(
                msg,
                ServerMsg::Revealed {
                    seat: Seat::One,
                    round: r,
                    ..
                } if r == round
            );
            before_reveal.push(msg);
            if done {
                break;
            }
        }
        for msg in &before_reveal {
            assert!(!holds(&wire::encode(msg), &n1), "seat two got the nonce");
            assert!(!matches!(msg, ServerMsg::RoundResult { .. }), "{msg:?}");
        }
        assert_ok(&two.reveal(g, round, p2, n2).await);
        let picks = frames_until_result(&mut two, "seat two", round, &n1).await;
        assert_eq!((picks.one, picks.two), (p1, p2));
        let picks = frames_until_result(&mut spectator, "the spectator", round, &n1).await;
        assert_eq!((picks.one, picks.two), (p1, p2));
        one.expect(
            "round_result",
            |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
        )
        .await;
    }
    match two
        .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await
    {
        ServerMsg::GameOver { result, .. } => {
            assert_eq!(
                (result.winner, result.reason),
                (Some(Seat::Two), EndReason::Edge)
            );
        }
        _ => unreachable!(),
    }
    two.expect("rating_update", |m| {
        matches!(m, ServerMsg::RatingUpdate { .. })
    })
    .await;
    // The stored record marks seat one's reveals as escrowed in every round.
    let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
    assert_eq!(status, 200, "{body}");
    let record: serde_json::Value = serde_json::from_str(&body).unwrap();
    let rounds = record["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), SEED.len());
    for round in rounds {
        assert_eq!(
            round["escrowed"],
            serde_json::json!({"one": true, "two": false})
        );
    }
}

#[tokio::test]
async fn an_escrow_that_does_not_open_the_commitment_is_refused_and_changes_nothing() {
    let server = start_server().await;
    let (mut one, mut two, game) = paired_players(&server, "escc1", "escd1").await;
    let g = game.game_id;
    let n1: [u8; 32] = rand::random();
    let commitment = elementals_protocol::commitment::make(&g.0, 1, Seat::One, 5, &n1).to_vec();
    let bad = [
        (Some(4), Some(n1.to_vec())),
        (Some(5), Some(vec![0; 32])),
        (Some(5), None),
        (None, Some(n1.to_vec())),
    ];
    for (pick, nonce) in bad {
        let id = one.id();
        let reply = one
            .request(ClientMsg::Commit {
                id,
                game_id: g,
                round: 1,
                commitment: commitment.clone(),
                pick,
                nonce,
            })
            .await;
        assert_error(&reply, ErrorCode::EscrowMismatch);
    }
    // Nothing happened: no event reached either player, and the game has no commitment.
    // (The game's start may still be delivering its snapshot and presence events.)
    for player in [&mut one, &mut two] {
        let seen = player.received_before_pong().await;
        let moves = |m: &ServerMsg| {
            matches!(
                m,
                ServerMsg::Committed { .. }
                    | ServerMsg::RevealPhase { .. }
                    | ServerMsg::Revealed { .. }
            )
        };
        assert!(!seen.iter().any(moves), "{seen:?}");
        let id = player.id();
        match player.request(ClientMsg::Sync { id, game_id: g }).await {
            ServerMsg::Snapshot { snapshot, .. } => {
                assert_eq!(snapshot.committed, SeatPair::new(false, false));
                assert_eq!(snapshot.phase, Phase::Commit);
            }
            other => panic!("{other:?}"),
        }
    }
    // The same commitment is still accepted, with a correct escrow.
    assert_ok(&one.commit_escrowed(g, 1, Seat::One, 5, n1).await);
}

#[tokio::test]
async fn an_escrowed_commit_survives_a_restart_and_is_revealed_after_it() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "esce1", "escf1").await;
        let g = game.game_id;
        play_round(&mut one, &mut two, g, 1, (5, 2)).await;
        let n1: [u8; 32] = rand::random();
        assert_ok(&one.commit_escrowed(g, 2, Seat::One, 5, n1).await);
        let tokens = (one.token.clone().unwrap(), two.token.clone().unwrap());
        drop((one, two));

        let server = server.restart().await;
        let mut players = Vec::new();
        for token in [tokens.0, tokens.1] {
            let mut player = TestClient::connect(&server).await;
            let reply = player.resume(&token).await;
            assert!(
                matches!(reply, ServerMsg::Authenticated { .. }),
                "{reply:?}"
            );
            let snapshot = match player
                .expect("snapshot", |m| matches!(m, ServerMsg::Snapshot { .. }))
                .await
            {
                ServerMsg::Snapshot { snapshot, .. } => snapshot,
                _ => unreachable!(),
            };
            // The round is kept, with seat one's escrowed commit in it.
            assert_eq!((snapshot.round, snapshot.phase), (2, Phase::Commit));
            assert_eq!(snapshot.committed, SeatPair::new(true, false));
            players.push(player);
        }
        let (mut one, mut two) = (players.remove(0), players.remove(0));
        let n2: [u8; 32] = rand::random();
        assert_ok(&two.commit(g, 2, Seat::Two, 2, n2).await);
        two.expect("seat one's reveal", |m| {
            matches!(
                m,
                ServerMsg::Revealed {
                    round: 2,
                    seat: Seat::One,
                    ..
                }
            )
        })
        .await;
        assert_ok(&two.reveal(g, 2, 2, n2).await);
        let picks = frames_until_result(&mut two, "seat two", 2, &n1).await;
        assert_eq!((picks.one, picks.two), (5, 2));
        play_round(&mut one, &mut two, g, 3, (5, 2)).await;
        two.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let (status, body) = server.http_get(&format!("/api/games/{g}")).await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rounds = record["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 3);
        // Rounds without escrow keep their old shape: no `escrowed` at all.
        assert!(rounds[0].get("escrowed").is_none(), "{backend:?}");
        assert_eq!(
            rounds[1]["escrowed"],
            serde_json::json!({"one": true, "two": false})
        );
        assert!(rounds[2].get("escrowed").is_none(), "{backend:?}");
    }
}
