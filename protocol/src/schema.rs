//! The protocol as JSON Schema, derived from the message types (`schemars`), and the
//! AsyncAPI 3.0 document of the WebSocket protocol built on it: what `protocol/schema/`
//! holds (`messages.json`, `asyncapi.json`) and the server serves at `/asyncapi.json`.
//!
//! The schemas describe a frame's MessagePack as JSON: a map is an object, an array an
//! array, a str a string, an int an integer, a float a number, nil null. JSON has no bytes:
//! a bin is a string whose schema says `"x-msgpack": "bin"` (in base64 were it JSON).
//! Client messages are described as the server reads them (a field with a default may be
//! left out; an unknown field is refused), server messages as the server writes them
//! (every field present, nil for "absent", unless a field says it may be left out; clients
//! must ignore fields they do not know, so their objects stay open).
//!
//! Every message is a definition of its own, named after its `type` in PascalCase with
//! `Msg` (`hello` is `HelloMsg`); `ClientMsg` and `ServerMsg` are the unions of each
//! direction's messages, and `ServerBatch` is a frame of several server messages, which a
//! client that asks for batches in `hello` may receive (PROTOCOL.md, "Batches").

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use crate::error::ErrorCode;
use crate::messages::{ClientMsg, ServerMsg};
use crate::PROTOCOL_VERSION;

/// Each request and the replies that answer it on success; any request may instead be
/// answered by `error`. PROTOCOL.md section 2 states the same table.
pub const REPLIES: &[(&str, &[&str])] = &[
    ("hello", &["welcome"]),
    ("ping", &["pong"]),
    ("register", &["authenticated"]),
    ("login", &["authenticated"]),
    ("guest", &["authenticated"]),
    ("resume", &["authenticated"]),
    ("logout", &["ok"]),
    ("join_pool", &["queued"]),
    ("leave_pool", &["ok"]),
    ("create_seek", &["seek_created"]),
    ("cancel_seek", &["ok"]),
    ("list_seeks", &["seeks"]),
    ("accept_seek", &["ok"]),
    ("challenge", &["challenge_sent"]),
    ("accept_challenge", &["ok"]),
    ("decline_challenge", &["ok"]),
    ("cancel_challenge", &["ok"]),
    ("offer_rematch", &["ok"]),
    ("decline_rematch", &["ok"]),
    ("play_bot", &["ok"]),
    ("lobby_counts", &["counts"]),
    ("commit", &["ok"]),
    ("reveal", &["ok"]),
    ("resign", &["ok"]),
    ("abort", &["ok"]),
    ("offer_draw", &["ok"]),
    ("decline_draw", &["ok"]),
    ("claim_win", &["ok"]),
    ("sync", &["snapshot"]),
    ("my_games", &["open_games"]),
    ("list_games", &["live_games"]),
    ("watch", &["snapshot", "ok"]),
    ("unwatch", &["ok"]),
];

/// The numbered game events: they carry `game_id` and `seq`.
pub const GAME_EVENTS: &[&str] = &[
    "round_start",
    "committed",
    "reveal_phase",
    "revealed",
    "round_result",
    "draw_offered",
    "draw_declined",
    "presence",
    "game_over",
    "rating_update",
];

/// Where the definitions live in [`messages`].
const DEFS: &str = "#/$defs/";

/// The JSON Schema (2020-12) of every message: `$defs` holds each message, `ClientMsg`,
/// `ServerMsg` and every type they contain; a frame of either direction is valid at the root.
pub fn messages() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://elementals.invalid/protocol/v1/messages.json",
        "title": "Elementals protocol messages",
        "description": format!(
            "Every frame of the Elementals WebSocket protocol, version {PROTOCOL_VERSION}, as \
             JSON describes its MessagePack (see PROTOCOL.md): a client sends a ClientMsg, a \
             server a ServerMsg. A bin is a string whose schema says \"x-msgpack\": \"bin\"."
        ),
        "anyOf": [
            {"$ref": format!("{DEFS}ClientMsg")},
            {"$ref": format!("{DEFS}ServerMsg")},
            {"$ref": format!("{DEFS}{BATCH}")},
        ],
        "$defs": definitions(),
    })
}

/// The definition of a batch: one frame holding several server messages.
pub const BATCH: &str = "ServerBatch";

/// Every definition: each message, the two unions, the types they contain and
/// [`BATCH`], keyed by name.
pub fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    let client = direction::<ClientMsg>(SchemaSettings::draft2020_12().for_deserialize());
    let server = direction::<ServerMsg>(SchemaSettings::draft2020_12().for_serialize());
    for (name, schema) in client.into_iter().chain(server) {
        match defs.get(&name) {
            // A type both directions hold must read the same either way.
            Some(known) => assert_eq!(known, &schema, "`{name}` differs between directions"),
            None => {
                defs.insert(name, schema);
            }
        }
    }
    defs.insert(
        BATCH.into(),
        json!({
            "description": "A frame of several server messages, sent only to a client whose \
                `hello` said `batch: true`: their MessagePack array, two or more, in the order \
                they would otherwise come one a frame, each element exactly the map it would \
                otherwise be (PROTOCOL.md, \"Batches\"). The server batches what one event \
                causes for one connection: a request's reply with the game events it caused, \
                or a game's events to a spectator that waited for them.",
            "type": "array",
            "minItems": 2,
            "items": {"$ref": format!("{DEFS}ServerMsg")},
        }),
    );
    defs.sort_keys();
    defs
}

/// The definitions of one direction's enum `T`, each message split out of the union.
fn direction<T: JsonSchema>(settings: SchemaSettings) -> Map<String, Value> {
    let mut generator = settings.into_generator();
    let union = T::schema_name().into_owned();
    generator.subschema_for::<T>();
    let mut defs = generator.take_definitions(true);
    let Some(Value::Object(mut schema)) = defs.remove(&union) else {
        unreachable!("a message enum is a definition")
    };
    let Some(Value::Array(variants)) = schema.remove("oneOf") else {
        unreachable!("a message enum is a `oneOf` of its messages")
    };
    let mut refs = Vec::new();
    for variant in variants {
        let name = message_type(&variant)
            .unwrap_or_else(|| panic!("a message without a `type`: {variant}"))
            .to_owned();
        let def = message_def(&name);
        refs.push(json!({"$ref": format!("{DEFS}{def}")}));
        defs.insert(def, variant);
    }
    schema.insert("oneOf".into(), Value::Array(refs));
    defs.insert(union, Value::Object(schema));
    defs
}

/// The `type` a message's schema fixes.
pub fn message_type(schema: &Value) -> Option<&str> {
    schema
        .pointer("/properties/type/const")
        .and_then(Value::as_str)
}

/// The definition a message's schema is kept under: `round_start` is `RoundStartMsg`.
pub fn message_def(name: &str) -> String {
    let mut def: String = name
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
        })
        .collect();
    def.push_str("Msg");
    def
}

/// Rewrites every `$ref` into `#/$defs/` to point under `prefix` instead (OpenAPI's and
/// AsyncAPI's `#/components/schemas/`).
pub fn move_refs(value: &mut Value, prefix: &str) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(target) if key == "$ref" => {
                        if let Some(name) = target.strip_prefix(DEFS) {
                            *target = format!("{prefix}{name}");
                        }
                    }
                    _ => move_refs(value, prefix),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| move_refs(item, prefix)),
        _ => {}
    }
}

/// The AsyncAPI 3.0 document of the WebSocket protocol, as the server sees it: it
/// receives each request on `/ws` and answers with the replies [`REPLIES`] names (or
/// `error`), and sends the pushes and game events on its own.
pub fn asyncapi() -> Value {
    const SCHEMAS: &str = "#/components/schemas/";
    let mut schemas = definitions();
    for schema in schemas.values_mut() {
        move_refs(schema, SCHEMAS);
    }
    let client = names_in(&schemas, "ClientMsg");
    let server = names_in(&schemas, "ServerMsg");
    let channel_message = |name: &str| json!({"$ref": format!("#/channels/ws/messages/{name}")});

    let mut messages = Map::new();
    let mut channel_messages = Map::new();
    for name in client.iter().chain(&server) {
        let def = message_def(name);
        let schema = &schemas[&def];
        let mut message = json!({
            "name": name,
            "title": name,
            "payload": {"$ref": format!("{SCHEMAS}{def}")},
        });
        if let Some(summary) = schema.get("description") {
            message["summary"] = summary.clone();
        }
        if schema.pointer("/properties/id").is_some() {
            message["correlationId"] = json!({"$ref": "#/components/correlationIds/id"});
        }
        messages.insert(name.clone(), message);
        channel_messages.insert(
            name.clone(),
            json!({"$ref": format!("#/components/messages/{name}")}),
        );
    }

    // A batch is a frame, not a message of the protocol: its elements are the messages.
    messages.insert(
        "batch".into(),
        json!({
            "name": "batch",
            "title": "A batch of server messages",
            "summary": "Several server messages in one frame, for a client that asked for batches.",
            "payload": {"$ref": format!("{SCHEMAS}{BATCH}")},
        }),
    );
    channel_messages.insert(
        "batch".into(),
        json!({"$ref": "#/components/messages/batch"}),
    );

    let mut operations = Map::new();
    for name in &client {
        let replies = REPLIES
            .iter()
            .find(|(request, _)| request == name)
            .map(|(_, replies)| *replies)
            .unwrap_or_else(|| panic!("`{name}` has no entry in REPLIES"));
        let mut answers: Vec<Value> = replies.iter().map(|r| channel_message(r)).collect();
        answers.push(channel_message("error"));
        operations.insert(
            name.clone(),
            json!({
                "action": "receive",
                "channel": {"$ref": "#/channels/ws"},
                "summary": format!(
                    "`{name}`, answered by {} or `error`, with the request's `id`.",
                    replies.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(" or ")
                ),
                "messages": [channel_message(name)],
                "reply": {
                    "channel": {"$ref": "#/channels/ws"},
                    "messages": answers,
                },
            }),
        );
    }
    let replies: Vec<&str> = REPLIES
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    for name in &server {
        // `error` and `snapshot` are also pushed, with a nil `id`.
        let pushed = !replies.contains(&name.as_str()) || name == "snapshot";
        if name != "error" && !pushed {
            continue;
        }
        let kind = if GAME_EVENTS.contains(&name.as_str()) {
            "a numbered game event (`game_id`, `seq`)"
        } else if name == "error" {
            "an `error` with a nil `id`: it answers no request"
        } else if name == "snapshot" {
            "a `snapshot` with a nil `id`: pushed"
        } else {
            "a push: it answers no request"
        };
        operations.insert(
            format!("push_{name}"),
            json!({
                "action": "send",
                "channel": {"$ref": "#/channels/ws"},
                "summary": format!("`{name}`, {kind}."),
                "messages": [channel_message(name)],
            }),
        );
    }

    operations.insert(
        "push_batch".into(),
        json!({
            "action": "send",
            "channel": {"$ref": "#/channels/ws"},
            "summary": "A `batch`: to a connection whose `hello` said `batch: true`, the messages \
                one event causes for it (a reply and the game events it caused, say) as one \
                frame holding their array; each element is one of the messages above, replies \
                keeping their `id`. Without `batch: true`, every frame is one message.",
            "messages": [channel_message("batch")],
        }),
    );

    let codes: Vec<Value> = ErrorCode::ALL
        .iter()
        .map(|code| json!({"code": code.as_str(), "description": code.description()}))
        .collect();
    json!({
        "asyncapi": "3.0.0",
        "id": "urn:elementals:protocol:v1",
        "info": {
            "title": "Elementals WebSocket protocol",
            "version": PROTOCOL_VERSION.to_string(),
            "description": "A client connects to `/ws` on the server's HTTP port and sends \
                binary frames, each one MessagePack map with a `type`. Every client message is a \
                request with an `id` (u32) that its reply echoes; pushes and game events answer \
                no request. A client whose `hello` says `batch: true` may also receive a \
                `batch`: one frame holding the array of several server messages. The payload schemas describe the MessagePack as JSON would (a bin is a \
                string marked `\"x-msgpack\": \"bin\"`). PROTOCOL.md is the full contract; \
                `x-error-codes` lists every `error` code.",
            "license": {"name": "MIT"},
        },
        "defaultContentType": "application/msgpack",
        "servers": {
            "local": {
                "host": "127.0.0.1:7878",
                "protocol": "ws",
                "description": "The default listen address; `wss` behind a TLS proxy.",
            },
        },
        "channels": {
            "ws": {
                "address": "/ws",
                "title": "The game connection",
                "description": "One WebSocket per client: binary frames only, one message each.",
                "messages": channel_messages,
            },
        },
        "operations": operations,
        "components": {
            "schemas": schemas,
            "messages": messages,
            "correlationIds": {
                "id": {
                    "description": "A request's `id`, echoed by its reply.",
                    "location": "$message.payload#/id",
                },
            },
        },
        "x-error-codes": codes,
    })
}

/// The `type`s of a union's messages, in their order in the union.
fn names_in(schemas: &Map<String, Value>, union: &str) -> Vec<String> {
    schemas[union]["oneOf"]
        .as_array()
        .expect("a union of messages")
        .iter()
        .map(|variant| {
            let target = variant["$ref"].as_str().expect("a reference");
            let def = target.rsplit('/').next().expect("a name");
            message_type(&schemas[def])
                .expect("a message has a `type`")
                .to_owned()
        })
        .collect()
}

/// A document as committed: two-space indents, a final newline.
pub fn pretty(document: &Value) -> String {
    let mut text = serde_json::to_string_pretty(document).expect("JSON values serialize");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::names::Message;

    /// The `type`s of a union in `defs`, and each message's property names.
    fn described(defs: &Map<String, Value>, union: &str) -> Vec<(String, BTreeSet<String>)> {
        names_in(defs, union)
            .into_iter()
            .map(|name| {
                let properties = defs[&message_def(&name)]["properties"]
                    .as_object()
                    .expect("a message has properties")
                    .keys()
                    .cloned()
                    .collect();
                (name, properties)
            })
            .collect()
    }

    #[test]
    fn the_schema_names_the_types_and_fields_serde_reads() {
        let defs = definitions();
        for (union, names) in [
            ("ClientMsg", ClientMsg::names()),
            ("ServerMsg", ServerMsg::names()),
        ] {
            let described = described(&defs, union);
            let types: Vec<&str> = described.iter().map(|(name, _)| name.as_str()).collect();
            let known: Vec<&str> = names.types().iter().map(|(name, _)| *name).collect();
            assert_eq!(types, known, "{union}");
            for ((name, properties), (_, fields)) in described.iter().zip(names.types()) {
                if let Some(fields) = fields {
                    let mut fields: BTreeSet<String> =
                        fields.iter().map(|f| f.to_string()).collect();
                    fields.insert("type".into());
                    assert_eq!(properties, &fields, "{name}");
                }
            }
        }
    }

    #[test]
    fn every_request_has_its_replies_and_they_are_server_messages() {
        let defs = definitions();
        let requests: Vec<String> = names_in(&defs, "ClientMsg");
        let listed: Vec<String> = REPLIES.iter().map(|(r, _)| r.to_string()).collect();
        assert_eq!(
            requests.iter().collect::<BTreeSet<_>>(),
            listed.iter().collect::<BTreeSet<_>>()
        );
        let server: BTreeSet<String> = names_in(&defs, "ServerMsg").into_iter().collect();
        for name in REPLIES
            .iter()
            .flat_map(|(_, r)| r.iter())
            .chain(GAME_EVENTS)
        {
            assert!(server.contains(*name), "{name}");
        }
    }

    #[test]
    fn every_message_is_a_definition_of_its_own() {
        assert_eq!(message_def("round_start"), "RoundStartMsg");
        let defs = definitions();
        assert_eq!(
            message_type(&defs["HelloMsg"]),
            Some("hello"),
            "{:#}",
            defs["HelloMsg"]
        );
        assert!(defs.contains_key("WelcomeMsg"));
        assert!(defs.contains_key("GameId"));
    }

    #[test]
    fn a_batch_is_an_array_of_server_messages_that_only_a_batching_client_asks_for() {
        let defs = definitions();
        assert_eq!(defs[BATCH]["items"]["$ref"], "#/$defs/ServerMsg");
        assert_eq!(defs[BATCH]["minItems"], 2);
        assert!(defs["HelloMsg"].pointer("/properties/batch").is_some());
        let document = asyncapi();
        assert_eq!(
            document["operations"]["push_batch"]["messages"][0]["$ref"],
            "#/channels/ws/messages/batch"
        );
        assert_eq!(
            document["components"]["messages"]["batch"]["payload"]["$ref"],
            "#/components/schemas/ServerBatch"
        );
    }
}
