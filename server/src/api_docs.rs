//! The documents that describe the server to other programs, built from the types: the
//! OpenAPI 3.1 document of the HTTP API (here, from the answers' types and the routes of
//! `http.rs`) and the AsyncAPI 3.0 document of the WebSocket protocol
//! (`elementals_protocol::schema`). The server serves them at `/openapi.json` and
//! `/asyncapi.json`; `protocol/schema/` holds them committed, with the messages' JSON
//! Schema, and a test here fails when those files are stale.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use elementals_protocol::messages::{LiveGame, MyGame};
use elementals_protocol::record::GameRecord;
use elementals_protocol::schema::{self, pretty};
use elementals_protocol::transcript::{SignedTranscript, TranscriptKey};
use elementals_protocol::PROTOCOL_VERSION;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use crate::api::MAX_OFFSET;
use crate::api::{MAX_GAMES, MAX_HISTORY, MAX_LIST};
use crate::db::{LeaderRow, PlayerGame, PlayerPage};

/// What writes a document.
type Make = fn() -> Value;

/// The committed files, relative to the workspace, with what writes each.
pub const FILES: [(&str, Make); 3] = [
    ("protocol/schema/messages.json", schema::messages),
    ("protocol/schema/asyncapi.json", schema::asyncapi),
    ("protocol/schema/openapi.json", openapi),
];

/// The command that writes the files again.
pub const REGENERATE: &str =
    "ELEMENTALS_WRITE_SCHEMA=1 cargo test -p elementals-server --lib api_docs";

/// Routes serving the documents; merge them into the server's router. Each is built once,
/// at its first request.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    static OPENAPI: OnceLock<String> = OnceLock::new();
    static ASYNCAPI: OnceLock<String> = OnceLock::new();
    Router::new()
        .route(
            "/openapi.json",
            get(|| async { json_document(OPENAPI.get_or_init(|| pretty(&openapi()))) }),
        )
        .route(
            "/asyncapi.json",
            get(|| async { json_document(ASYNCAPI.get_or_init(|| pretty(&schema::asyncapi()))) }),
        )
}

fn json_document(text: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], text)
}

/// The OpenAPI 3.1 document of every HTTP route.
pub fn openapi() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.definitions_path = "/components/schemas/".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    let mut add = |path: &str, operation: Value| {
        paths.insert(path.to_owned(), json!({ "get": operation }));
    };

    add(
        "/healthz",
        json!({
            "operationId": "healthz",
            "summary": "Whether the server can write its games' log (and, in a cluster, hears Redis).",
            "responses": {
                "200": text("`ok`"),
                "503": text("The game log cannot be written (a full disk, say), or a cluster's node does not hear Redis."),
            },
        }),
    );
    add(
        "/metrics",
        json!({
            "operationId": "metrics",
            "summary": "Prometheus metrics.",
            "responses": {"200": {
                "description": "The metrics in Prometheus's text format.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }},
        }),
    );
    add(
        "/ws",
        json!({
            "operationId": "websocket",
            "summary": "The WebSocket of the game protocol (`/asyncapi.json` describes it).",
            "parameters": [
                upgrade_header("Connection", "Upgrade", "Its tokens include `upgrade`."),
                upgrade_header("Upgrade", "websocket", "Its tokens include `websocket`."),
                upgrade_header("Sec-WebSocket-Version", "13", "`13`."),
                {
                    "name": "Sec-WebSocket-Key",
                    "in": "header",
                    "required": true,
                    "description": "16 random bytes in base64 (RFC 6455).",
                    "schema": {"type": "string"},
                },
                {
                    "name": "Sec-WebSocket-Protocol",
                    "in": "header",
                    "description": "Optional; `elementals.v1` is accepted and echoed.",
                    "schema": {"type": "string"},
                },
            ],
            "responses": {
                "101": {"description": "Switching to the WebSocket protocol."},
                "400": text("Not a valid WebSocket upgrade (a missing `Connection: upgrade`, `Upgrade: websocket` or `Sec-WebSocket-Key`, or a `Sec-WebSocket-Version` other than 13)."),
                "403": text("A browser page's `Origin` is not allowed."),
                "426": text("The connection cannot be upgraded (not HTTP/1.1)."),
                "429": text("The client's address holds its maximum of connections."),
                "503": text("The server is at its connection limit or shutting down."),
            },
        }),
    );
    add(
        "/api/leaderboard",
        api_get(
            "leaderboard",
            "Registered accounts by rating, best first, ties by name.",
            page(MAX_LIST),
            ok(
                "A page of the leaderboard.",
                generator.subschema_for::<Vec<LeaderRow>>(),
            ),
            &[],
        ),
    );
    add(
        "/api/players/{name}",
        api_get(
            "player",
            "A registered player's rating and rating changes, newest first (the name ignoring case).",
            with_name(page(MAX_HISTORY)),
            ok("The player's page.", generator.subschema_for::<PlayerPage>()),
            &[("404", "No registered player has that name (guests have no page).")],
        ),
    );
    add(
        "/api/players/{name}/games",
        api_get(
            "playerGames",
            "A registered player's finished games, newest first by their end.",
            with_name(page(MAX_GAMES)),
            ok(
                "A page of the player's games.",
                generator.subschema_for::<Vec<PlayerGame>>(),
            ),
            &[(
                "404",
                "No registered player has that name (guests have no page).",
            )],
        ),
    );
    add(
        "/api/games/live",
        api_get(
            "liveGames",
            "The live games, most watched first (ties by id).",
            page(MAX_LIST),
            ok(
                "A page of the live games.",
                generator.subschema_for::<Vec<LiveGame>>(),
            ),
            &[],
        ),
    );
    let mut my_games = api_get(
        "myGames",
        "The open games of the account whose session token is the bearer token, with what each waits for.",
        vec![],
        ok(
            "The account's open games.",
            generator.subschema_for::<Vec<MyGame>>(),
        ),
        &[("503", "The account store cannot be read now; retry.")],
    );
    my_games["security"] = json!([{"session": []}]);
    my_games["responses"]["401"] = json!({
        "description": "No valid session token: none, not `Bearer`, unknown, expired or logged out.",
        "headers": {"WWW-Authenticate": {
            "description": "`Bearer`.",
            "required": true,
            "schema": {"type": "string"},
        }},
        "content": {"text/plain": {"schema": {"type": "string"}}},
    });
    add("/api/me/games", my_games);
    add(
        "/api/games/{id}",
        api_get(
            "game",
            "A finished game's stored record, with every round's commitments and nonces in hex.",
            vec![game_id()],
            ok("The game's record.", generator.subschema_for::<GameRecord>()),
            &[
                ("400", "The id is not valid percent-encoded UTF-8."),
                ("404", "No finished game has that id (yet: a record is stored moments after `game_over`)."),
            ],
        ),
    );
    add(
        "/api/games/{id}/transcript",
        api_get(
            "transcript",
            "A finished game's signed transcript: its record and the ratings around it, signed with the server's Ed25519 key.",
            vec![game_id()],
            ok(
                "The signed transcript.",
                generator.subschema_for::<SignedTranscript>(),
            ),
            &[
                ("400", "The id is not valid percent-encoded UTF-8."),
                ("404", "No finished game has that id (yet)."),
            ],
        ),
    );
    add(
        "/api/transcript-key",
        api_get(
            "transcriptKey",
            "The key transcripts are signed with.",
            vec![],
            ok("The key.", generator.subschema_for::<TranscriptKey>()),
            &[],
        ),
    );
    for (path, id, what) in [
        ("/", "page", "The browser client's page."),
        ("/index.html", "indexHtml", "The browser client's page."),
    ] {
        add(path, file(id, what, "text/html"));
    }
    add(
        "/app.js",
        file("appJs", "The browser client's script.", "text/javascript"),
    );
    add(
        "/app.css",
        file("appCss", "The browser client's style sheet.", "text/css"),
    );
    add(
        "/openapi.json",
        document("openapi", "This document: the HTTP API in OpenAPI 3.1."),
    );
    add(
        "/asyncapi.json",
        document(
            "asyncapi",
            "The WebSocket protocol in AsyncAPI 3.0 (its schemas are those of `protocol/schema/messages.json`).",
        ),
    );

    let mut schemas = generator.take_definitions(true);
    schemas.sort_keys();
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Elementals HTTP API",
            "version": PROTOCOL_VERSION.to_string(),
            "description": "The HTTP side of an Elementals server, on the port of its WebSocket \
                (`/ws`, described by `/asyncapi.json`). Answers are JSON unless noted. The lists \
                take `limit` and `offset`; another query parameter is answered 400. One client \
                address may make 10 requests a second to `/api/…`, in bursts of up to 20: more \
                are answered 429 with `Retry-After`. PROTOCOL.md section 12 is the full contract.",
            "license": {"name": "MIT"},
        },
        "servers": [{"url": "http://127.0.0.1:7878", "description": "The default listen address."}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"session": {
                "type": "http",
                "scheme": "bearer",
                "description": "A session token, as `authenticated` gives it on the WebSocket.",
            }},
        },
    })
}

/// A `/api/…` read: its parameters and answers, with the answers every such read may give.
fn api_get(
    id: &str,
    summary: &str,
    parameters: Vec<Value>,
    ok: Value,
    more: &[(&str, &str)],
) -> Value {
    let mut responses = Map::new();
    responses.insert("200".into(), ok);
    if parameters.iter().any(|p| p["in"] == "query") {
        responses.insert(
            "400".into(),
            text(&format!(
                "A malformed page: a negative or non-numeric value, an offset past {MAX_OFFSET}, or another query parameter."
            )),
        );
    }
    for (status, what) in more {
        responses.insert((*status).into(), text(what));
    }
    responses.insert(
        "429".into(),
        json!({
            "description": "Too many requests from this address.",
            "headers": {"Retry-After": {
                "description": "Seconds to wait.",
                "required": true,
                "schema": {"type": "integer", "minimum": 0},
            }},
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }),
    );
    if !responses.contains_key("503") {
        responses.insert(
            "503".into(),
            text("The database cannot be reached now; retry."),
        );
    }
    responses.insert("500".into(), text("The server failed."));
    json!({
        "operationId": id,
        "summary": summary,
        "parameters": parameters,
        "responses": responses,
    })
}

/// A header the WebSocket upgrade requires.
fn upgrade_header(name: &str, value: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "header",
        "required": true,
        "description": description,
        "schema": {"type": "string", "examples": [value]},
    })
}

/// `?limit=&offset=` of a list of at most `max` entries.
fn page(max: u32) -> Vec<Value> {
    vec![
        json!({
            "name": "limit",
            "in": "query",
            "description": format!("Entries at most; {max} when left out, and a larger one is held to {max}."),
            "schema": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
        }),
        json!({
            "name": "offset",
            "in": "query",
            "description": "Entries skipped first; 0 when left out.",
            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
        }),
    ]
}

fn with_name(mut parameters: Vec<Value>) -> Vec<Value> {
    parameters.insert(
        0,
        json!({
            "name": "name",
            "in": "path",
            "required": true,
            "description": "An account's name, in any case.",
            "schema": {"type": "string"},
        }),
    );
    parameters
}

fn game_id() -> Value {
    json!({
        "name": "id",
        "in": "path",
        "required": true,
        "description": "A game id (a UUID, in any spelling).",
        "schema": {"type": "string"},
    })
}

fn ok(description: &str, schema: schemars::Schema) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": schema}},
    })
}

fn text(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"text/plain": {"schema": {"type": "string"}}},
    })
}

fn file(id: &str, description: &str, media: &str) -> Value {
    json!({
        "operationId": id,
        "summary": description,
        "responses": {"200": {
            "description": description,
            "content": {media: {"schema": {"type": "string"}}},
        }},
    })
}

fn document(id: &str, description: &str) -> Value {
    json!({
        "operationId": id,
        "summary": description,
        "responses": {"200": {
            "description": description,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }},
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The committed documents are what the types give now; with `ELEMENTALS_WRITE_SCHEMA`
    /// set, this writes them instead.
    #[test]
    fn the_committed_schema_files_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let write = std::env::var_os("ELEMENTALS_WRITE_SCHEMA").is_some();
        let mut stale = Vec::new();
        for (file, make) in FILES {
            let path = root.join(file);
            let now = pretty(&make());
            if write {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &now).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(now.as_str()) {
                stale.push(file);
            }
        }
        assert!(
            stale.is_empty(),
            "{stale:?} no longer match the types; write them again with `{REGENERATE}`"
        );
    }
}
