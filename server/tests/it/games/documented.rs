//! A finished game's record, as `GET /api/games/{id}` answers it, against PROTOCOL.md.

use super::*;

/// The field names of a `#### \`name\`` table of PROTOCOL.md.
fn documented_fields(name: &str) -> Vec<String> {
    const PROTOCOL_MD: &str = include_str!("../../../../PROTOCOL.md");
    let heading = format!("#### `{name}`\n");
    let start = PROTOCOL_MD
        .find(&heading)
        .unwrap_or_else(|| panic!("PROTOCOL.md documents `{name}`"));
    let body = &PROTOCOL_MD[start + heading.len()..];
    let body = &body[..body.find("\n#").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`'))
        .map(|(field, _)| field.to_owned())
        .collect()
}

fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn sorted(mut fields: Vec<String>) -> Vec<String> {
    fields.sort();
    fields
}

/// `GET /api/games/{id}` answers exactly the shape PROTOCOL.md section 12 documents, and
/// nothing internal: no account ids.
#[tokio::test]
async fn a_finished_game_record_has_the_documented_shape_and_no_account_ids() {
    for backend in BACKENDS {
        let server = start_server_on(backend).await;
        let (mut one, mut two, game) = paired_players(&server, "shape1", "shape2").await;
        play_round(&mut one, &mut two, game.game_id, 1, (5, 2)).await;
        one.resign(game.game_id).await;
        // The record is stored once the ratings are: the rating update says so.
        one.expect("rating_update", |m| {
            matches!(m, ServerMsg::RatingUpdate { .. })
        })
        .await;
        let (status, body) = server
            .http_get(&format!("/api/games/{}", game.game_id))
            .await;
        assert_eq!(status, 200);
        let record: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(keys(&record), sorted(documented_fields("GameRecord")));
        for seat in ["one", "two"] {
            let player = &record["players"][seat];
            assert_eq!(
                keys(player),
                sorted(documented_fields("RecordPlayer")),
                "{seat}"
            );
        }
        assert_eq!(
            record["players"]["one"]["name"],
            game.players.one.name.as_str()
        );
        let round = &record["rounds"][0];
        // `escrowed` is documented as left out when neither seat escrowed, as here.
        let mut fields = documented_fields("RecordRound");
        fields.retain(|f| f != "escrowed");
        assert_eq!(keys(round), sorted(fields));
        assert_eq!(round["commitments"]["one"].as_str().map(str::len), Some(64));
        assert!(!body.contains("account_id"), "{body}");
        // Any spelling of the id.
        let upper = game.game_id.to_string().to_uppercase();
        let (status, _) = server.http_get(&format!("/api/games/{upper}")).await;
        assert_eq!(status, 200);
    }
}
