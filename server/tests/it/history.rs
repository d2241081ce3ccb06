//! Every game kept, over real HTTP on both backends: a player's games newest first, paged,
//! with opponent, variant, time control, result and rating change; and each finished
//! game's signed transcript with the key it is signed with.

use crate::common::*;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use elementals_protocol::messages::{GameId, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};

/// The seed's example game: player two wins after five rounds.
const SEED_PICKS: [(u16, u16); 5] = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Waits for both players' `game_over` and `rating_update` (sent once the record and its
/// rating changes are stored).
async fn game_recorded(one: &mut TestClient, two: &mut TestClient) {
    for client in [one, two] {
        client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        client
            .expect("rating_update", |m| {
                matches!(m, ServerMsg::RatingUpdate { .. })
            })
            .await;
    }
}

/// Alice and bobby play two rated games: the seed's (won by seat two at the edge), then one
/// resigned by seat one. Returns the two games' ids, oldest first, and alice's seats.
async fn two_games(server: &TestServer) -> ([GameId; 2], [Seat; 2]) {
    let (mut one, mut two, first) = paired_players(server, "alice", "bobby").await;
    let alice_first = if first.players.one.name == "alice" {
        Seat::One
    } else {
        Seat::Two
    };
    for (i, picks) in SEED_PICKS.iter().enumerate() {
        play_round(&mut one, &mut two, first.game_id, i as u32 + 1, *picks).await;
    }
    game_recorded(&mut one, &mut two).await;

    one.join_pool(Variant::CLASSIC, "blitz").await;
    two.join_pool(Variant::CLASSIC, "blitz").await;
    let (second, one_seat) = one.game_start().await;
    let (_, two_seat) = two.game_start().await;
    let (mut one, mut two) = match one_seat {
        Seat::One => (one, two),
        Seat::Two => (two, one),
    };
    assert_ne!(one_seat, two_seat);
    let alice_second = if second.players.one.name == "alice" {
        Seat::One
    } else {
        Seat::Two
    };
    one.resign(second.game_id).await;
    game_recorded(&mut one, &mut two).await;
    ([first.game_id, second.game_id], [alice_first, alice_second])
}

#[tokio::test]
async fn a_players_games_are_listed_newest_first_with_their_rating_changes() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let ([first, second], [alice_first, alice_second]) = two_games(&server).await;

        let (status, body) = server.http_get("/api/players/alice/games").await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let games = json(&body);
        let games = games.as_array().unwrap();
        assert_eq!(games.len(), 2, "{backend:?}");
        let (newest, oldest) = (&games[0], &games[1]);
        assert_eq!(newest["game_id"], second.to_string());
        assert_eq!(oldest["game_id"], first.to_string());
        for (game, seat) in [(newest, alice_second), (oldest, alice_first)] {
            assert_eq!(game["seat"], serde_json::to_value(seat).unwrap());
            assert_eq!(game["opponent"]["name"], "bobby");
            assert_eq!(game["opponent"]["guest"], false);
            assert_eq!(
                game["variant"],
                serde_json::to_value(Variant::CLASSIC).unwrap()
            );
            assert_eq!(game["time_control"]["initial_ms"], 180_000);
            assert_eq!(game["rated"], true);
            assert!(game["ended_at"].as_u64().unwrap() >= game["started_at"].as_u64().unwrap());
        }
        assert_eq!(oldest["rounds"], 5);
        assert_eq!(oldest["result"]["winner"], "two");
        assert_eq!(oldest["result"]["reason"], "edge");
        assert_eq!(newest["rounds"], 0);
        assert_eq!(newest["result"]["reason"], "resignation");

        // Each rating change is the one the player page's history holds for that game.
        let (_, page) = server.http_get("/api/players/alice").await;
        let history = json(&page)["history"].as_array().unwrap().clone();
        assert_eq!(history.len(), 2);
        for game in games {
            let change = history
                .iter()
                .find(|h| h["game_id"] == game["game_id"])
                .expect("a rated, won game is in the history");
            assert_eq!(game["rating_change"]["before"], change["before"]);
            assert_eq!(game["rating_change"]["after"], change["after"]);
        }

        // Paged, the name in any case; bad pages and unknown names refused.
        let (_, body) = server.http_get("/api/players/ALICE/games?limit=1").await;
        assert_eq!(json(&body)[0]["game_id"], second.to_string());
        let (_, body) = server
            .http_get("/api/players/alice/games?limit=1&offset=1")
            .await;
        let page = json(&body);
        assert_eq!(page.as_array().unwrap().len(), 1);
        assert_eq!(page[0]["game_id"], first.to_string());
        let (_, body) = server.http_get("/api/players/bobby/games?offset=2").await;
        assert_eq!(json(&body), serde_json::json!([]));
        for bad in ["offset=10001", "limit=x", "page=1"] {
            let (status, _) = server
                .http_get(&format!("/api/players/alice/games?{bad}"))
                .await;
            assert_eq!(status, 400, "{bad}");
        }
        let (status, _) = server.http_get("/api/players/nobody/games").await;
        assert_eq!(status, 404);
    }
}

#[tokio::test]
async fn a_guests_games_are_not_listed() {
    let server = start_server().await;
    let mut guest = TestClient::connect(&server).await;
    let id = guest.id();
    let name = match guest
        .request(elementals_protocol::messages::ClientMsg::Guest { id })
        .await
    {
        ServerMsg::Authenticated { account, .. } => account.name,
        other => panic!("guest refused: {other:?}"),
    };
    let (status, _) = server.http_get(&format!("/api/players/{name}/games")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_finished_games_transcript_is_signed_with_the_published_key() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let ([first, _], _) = two_games(&server).await;
        let (status, key) = server.http_get("/api/transcript-key").await;
        assert_eq!(status, 200);
        let key = json(&key);
        assert_eq!(key["algorithm"], "ed25519");

        let (status, body) = server
            .http_get(&format!("/api/games/{first}/transcript"))
            .await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let signed = json(&body);
        assert_eq!(signed["key_id"], key["key_id"]);
        assert_eq!(signed["public_key"], key["public_key"]);
        let bytes = BASE64
            .decode(signed["transcript"].as_str().unwrap())
            .unwrap();
        let transcript: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(transcript["format"], "elementals-transcript-v1");
        // The game as `GET /api/games/{id}` answers it, and the ratings around it.
        let (_, record) = server.http_get(&format!("/api/games/{first}")).await;
        assert_eq!(transcript["game"], json(&record));
        assert_eq!(transcript["ratings"]["two"]["before"], 1.0);
        assert_eq!(transcript["ratings"]["two"]["after"], 1.5);
        // Served again, the same bytes.
        let (_, again) = server
            .http_get(&format!("/api/games/{first}/transcript"))
            .await;
        assert_eq!(json(&again), signed);

        let unknown = GameId::new_random_from([7; 16]);
        let (status, _) = server
            .http_get(&format!("/api/games/{unknown}/transcript"))
            .await;
        assert_eq!(status, 404);
    }
}

#[tokio::test]
async fn the_transcript_key_survives_a_restart() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let ([first, _], _) = two_games(&server).await;
        let (_, before) = server.http_get("/api/transcript-key").await;
        let (_, signed) = server
            .http_get(&format!("/api/games/{first}/transcript"))
            .await;
        let server = server.restart().await;
        let (_, after) = server.http_get("/api/transcript-key").await;
        assert_eq!(json(&before), json(&after), "{backend:?}");
        // The transcript signed before the restart checks with the key served after it.
        let (signed, key) = (json(&signed), json(&after));
        let public: [u8; 32] = BASE64
            .decode(key["public_key"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let signature: [u8; 64] = BASE64
            .decode(signed["signature"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let bytes = BASE64
            .decode(signed["transcript"].as_str().unwrap())
            .unwrap();
        let public = ed25519_dalek::VerifyingKey::from_bytes(&public).unwrap();
        let signature = ed25519_dalek::Signature::from_bytes(&signature);
        assert!(
            public.verify_strict(&bytes, &signature).is_ok(),
            "{backend:?}"
        );
    }
}
