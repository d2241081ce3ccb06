//! Signed transcripts end to end: two bots play a rated game over WebSockets on the real
//! server, its transcript is fetched over HTTP and verified by the library and by the
//! `elementals verify` binary; changed transcripts are refused by the binary, each with
//! its own message and a non-zero exit.

use std::process::Stdio;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use elementals_client::http::Http;
use elementals_client::protocol::messages::GameId;
use elementals_client::protocol::transcript::{self, SignedTranscript, TranscriptKey};
use elementals_client::transcript::{parse_public_key, verify, VerifyError};
use elementals_client::{
    play_game, wait_for_game_start, Greedy, Player, PlayerOptions, Random, TlsRoots,
};
mod real_server;

use real_server::{queued_bot, start_server, TestServer, WAIT};

/// Two bots play a rated game to its end; returns its id once its ratings are stored.
async fn rated_game(server: &TestServer) -> GameId {
    let (ann, bob) = (
        queued_bot(server, "ann").await,
        queued_bot(server, "bob").await,
    );
    let (a, b) = tokio::time::timeout(
        WAIT,
        futures::future::join(wait_for_game_start(&ann), wait_for_game_start(&bob)),
    )
    .await
    .expect("the pool pairs them");
    let (a, b) = (a.unwrap(), b.unwrap());
    let (a, b) = tokio::time::timeout(
        WAIT,
        futures::future::join(
            play_game(&ann, a, Greedy::seeded(3)),
            play_game(&bob, b, Random::seeded(4)),
        ),
    )
    .await
    .expect("the game finishes");
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.rating.is_some() && b.rating.is_some(), "{a:?}");
    a.game_id
}

async fn get(server: &TestServer, path: &str) -> Vec<u8> {
    let response = Http::new(&server.server_url(), &TlsRoots::default())
        .unwrap()
        .get(path)
        .await
        .unwrap();
    assert_eq!(response.status, 200, "{path}");
    response.body
}

fn elementals(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_elementals"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Runs `elementals verify ARGS`: (success, stdout, stderr).
async fn run_verify(args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    let out = tokio::time::timeout(WAIT, elementals(&all).output())
        .await
        .expect("verify finishes")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The signed body changed by `change`, signed again with a key of the test's own: the
/// signature holds, so the check that refuses it is the one for what was changed.
fn resigned(signed: &SignedTranscript, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut body: serde_json::Value =
        serde_json::from_slice(&BASE64.decode(&signed.transcript).unwrap()).unwrap();
    change(&mut body);
    let bytes = serde_json::to_vec(&body).unwrap();
    let key = SigningKey::from_bytes(&[5; 32]);
    let public = key.verifying_key().to_bytes();
    serde_json::to_vec(&SignedTranscript {
        transcript: BASE64.encode(&bytes),
        signature: BASE64.encode(key.sign(&bytes).to_bytes()),
        public_key: BASE64.encode(public),
        key_id: transcript::key_id(&public),
    })
    .unwrap()
}

#[tokio::test]
async fn a_real_games_transcript_verifies_and_changed_ones_are_refused() {
    let server = start_server().await;
    let game_id = rated_game(&server).await;
    let path = format!("/api/games/{game_id}/transcript");
    let body = get(&server, &path).await;
    let key: TranscriptKey =
        serde_json::from_slice(&get(&server, "/api/transcript-key").await).expect("the key's JSON");
    let public = parse_public_key(&key.public_key).unwrap();

    // The library: the server's key, the game as played, the ratings before and after.
    let verified = verify(&body, Some(&public)).expect("the real transcript verifies");
    assert_eq!(verified.key_id, key.key_id);
    assert_eq!(verified.transcript.game.game_id, game_id);
    assert!(!verified.transcript.game.rounds.is_empty());
    let ratings = verified.transcript.ratings.expect("a rated game's ratings");
    assert_eq!((ratings.one.before, ratings.two.before), (1.0, 1.0));

    // The binary, on a file and on the URL, required to be the server's key.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("game.json");
    std::fs::write(&file, &body).unwrap();
    let file = file.to_str().unwrap();
    let (ok, stdout, stderr) = run_verify(&[file, "--key", &key.public_key]).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(
        stdout.starts_with(&format!("verified: game {game_id}")),
        "{stdout}"
    );
    assert!(stdout.contains(&key.key_id), "{stdout}");
    let url = format!("{}{path}", server.server_url().http_base());
    let (ok, stdout, stderr) = run_verify(&[&url, "--key", &key.public_key]).await;
    assert!(ok, "{stdout}{stderr}");

    let signed: SignedTranscript = serde_json::from_slice(&body).unwrap();
    let refused = |name: &str, bytes: Vec<u8>| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_str().unwrap().to_owned()
    };
    // One byte of the signed bytes changed: the signature fails.
    let mut bytes = BASE64.decode(&signed.transcript).unwrap();
    let at = bytes.windows(7).position(|w| w == b"\"round\"").unwrap();
    bytes[at + 1] = b'R';
    let changed_byte = refused(
        "byte.json",
        serde_json::to_vec(&SignedTranscript {
            transcript: BASE64.encode(&bytes),
            ..signed.clone()
        })
        .unwrap(),
    );
    // The winner's rating after the game raised.
    let winner = verified
        .transcript
        .game
        .result
        .winner
        .expect("won at the edge");
    let winner = serde_json::to_value(winner).unwrap();
    let wrong_rating = refused(
        "rating.json",
        resigned(&signed, |body| {
            body["ratings"][winner.as_str().unwrap()]["after"] = serde_json::json!(9.0);
        }),
    );
    // Round 1's pick for player one changed: its commitment does not open to it.
    let first = verified.transcript.game.rounds[0].picks.one;
    let wrong_commitment = refused(
        "commitment.json",
        resigned(&signed, |body| {
            body["game"]["rounds"][0]["picks"]["one"] = serde_json::json!(first % 5 + 1);
        }),
    );
    for (file, message) in [
        (&changed_byte, "bad signature"),
        (
            &wrong_rating,
            "the rating change does not follow from the ratings before the game",
        ),
        (
            &wrong_commitment,
            "round 1: player 1's commitment does not match their pick and nonce",
        ),
    ] {
        let (ok, stdout, stderr) = run_verify(&[file]).await;
        assert!(!ok, "{file} accepted: {stdout}");
        assert!(stderr.contains(message), "{file}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    // Signed by another key than the one required.
    let (ok, _, stderr) = run_verify(&[&wrong_rating, "--key", &key.public_key]).await;
    assert!(!ok);
    assert!(stderr.contains("not with the key required"), "{stderr}");
    // And the library says the same of them.
    let read = |path: &str| std::fs::read(path).unwrap();
    assert!(matches!(
        verify(&read(&changed_byte), None),
        Err(VerifyError::Signature { .. })
    ));
    assert!(matches!(
        verify(&read(&wrong_rating), None),
        Err(VerifyError::Rating(_))
    ));
    assert_eq!(
        verify(&read(&wrong_commitment), None),
        Err(VerifyError::Commitment { round: 1, seat: 1 })
    );
}

/// A game in which one player escrows every reveal (`PlayerOptions::escrow`): its transcript
/// marks those reveals and verifies like any other, with the library and the binary.
#[tokio::test]
async fn an_escrowed_games_transcript_marks_the_escrow_and_verifies() {
    let server = start_server().await;
    let (eve, fay) = (
        queued_bot(&server, "eve").await,
        queued_bot(&server, "fay").await,
    );
    let (e, f) = tokio::time::timeout(
        WAIT,
        futures::future::join(wait_for_game_start(&eve), wait_for_game_start(&fay)),
    )
    .await
    .expect("the pool pairs them");
    let (e, f) = (e.unwrap(), f.unwrap());
    let escrowing_seat = e.seat;
    let options = PlayerOptions {
        escrow: true,
        ..PlayerOptions::default()
    };
    let mut escrower = Player::with_options(Greedy::seeded(5), options);
    let (e, f) = tokio::time::timeout(
        WAIT,
        futures::future::join(
            escrower.play_game(&eve, e),
            play_game(&fay, f, Random::seeded(6)),
        ),
    )
    .await
    .expect("the game finishes");
    let (e, _) = (e.unwrap(), f.unwrap());
    let body = get(&server, &format!("/api/games/{}/transcript", e.game_id)).await;
    let verified = verify(&body, None).expect("an escrowed game's transcript verifies");
    let rounds = &verified.transcript.game.rounds;
    assert!(!rounds.is_empty());
    for round in rounds {
        assert!(*round.escrowed.get(escrowing_seat), "round {}", round.round);
        assert!(
            !*round.escrowed.get(escrowing_seat.other()),
            "round {}",
            round.round
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("escrowed.json");
    std::fs::write(&file, &body).unwrap();
    let (ok, stdout, stderr) = run_verify(&[file.to_str().unwrap()]).await;
    assert!(ok, "{stdout}{stderr}");
}
