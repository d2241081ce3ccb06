//! PROTOCOL.md documents every message, field and error code, and the limits and presets
//! of the code.

use std::collections::BTreeSet;

use elementals_protocol::rules::{MAX_DISTANCE, MAX_NUMBER, MAX_ROUNDS};
use elementals_protocol::time_control::{
    MAX_INCREMENT_MS, MAX_INITIAL_MS, MAX_PER_PHASE_MS, MAX_REVEAL_MS, MIN_INITIAL_MS,
    MIN_PER_PHASE_MS, MIN_REVEAL_MS,
};
use elementals_protocol::wire::{
    self, MAX_CLIENT_MESSAGE_BYTES, MAX_DEPTH, MAX_SERVER_MESSAGE_BYTES,
};
use elementals_protocol::{ErrorCode, TimeControl, PROTOCOL_VERSION};

use crate::examples::{client_examples, client_type, server_examples, server_type};
use crate::helpers::{collect_keys, entries, value_of};

const PROTOCOL_MD: &str = include_str!("../../../PROTOCOL.md");

/// The text of the section under a `#### \`name\`` heading, up to the next heading.
fn doc_section(name: &str) -> &'static str {
    let heading = format!("#### `{name}`");
    let start = PROTOCOL_MD
        .find(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("PROTOCOL.md has no heading {heading}"));
    let body = &PROTOCOL_MD[start + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    &body[..end]
}

#[test]
fn protocol_md_lists_every_error_code_as_in_the_code() {
    for code in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.description());
        assert!(
            PROTOCOL_MD.contains(&row),
            "PROTOCOL.md lacks the row\n{row}"
        );
    }
    // And in the same order, in the table of section 10.
    let table = &PROTOCOL_MD[PROTOCOL_MD.find("### Error codes").unwrap()..];
    let positions: Vec<usize> = ErrorCode::ALL
        .iter()
        .map(|c| table.find(&format!("| `{}` |", c.as_str())).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn protocol_md_documents_every_message_and_each_of_its_fields() {
    let client = client_examples()
        .into_iter()
        .map(|m| (client_type(&m), wire::encode(&m)));
    let server = server_examples()
        .into_iter()
        .map(|m| (server_type(&m), wire::encode(&m)));
    for (name, bytes) in client.chain(server) {
        let section = doc_section(name);
        for (key, _) in entries(&value_of(&bytes)).iter().skip(1) {
            let key = key.as_str().unwrap();
            let row = format!("| `{key}` |");
            assert!(
                section.contains(&row),
                "PROTOCOL.md's `{name}` has no field row {row}"
            );
        }
    }
}

#[test]
fn protocol_md_documents_every_nested_field() {
    let mut keys = BTreeSet::new();
    for msg in server_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    for msg in client_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    for key in keys {
        assert!(
            PROTOCOL_MD.contains(&format!("| `{key}` |")),
            "no field row for `{key}`"
        );
    }
    for name in [
        "Account",
        "PlayerInfo",
        "GameInfo",
        "Clocks",
        "RoundRecord",
        "Outcome",
        "Move",
        "Phase",
        "EndReason",
        "GameResult",
        "GameSnapshot",
        "LiveGame",
        "Seek",
        "Challenge",
        "Limits",
        "SeatPair",
        "RatingChange",
        "Variant",
        "TimeControl",
    ] {
        doc_section(name);
    }
    for field in [
        "max_message_bytes",
        "max_messages_per_s",
        "heartbeat_ms",
        "idle_timeout_ms",
        "max_rounds",
    ] {
        assert!(doc_section("Limits").contains(&format!("| `{field}` |")));
    }
    for phase in ["commit", "reveal", "over"] {
        assert!(doc_section("Phase").contains(&format!("`{phase}`")));
    }
    for reason in [
        "edge",
        "time",
        "no_reveal",
        "resignation",
        "abandoned",
        "draw_agreed",
        "aborted",
        "server_aborted",
        "max_rounds",
    ] {
        assert!(doc_section("EndReason").contains(&format!("| `{reason}` |")));
    }
}

#[test]
fn protocol_md_states_the_limits_and_presets_of_the_code() {
    let must = [
        format!("| `MAX_CLIENT_MESSAGE_BYTES` | {MAX_CLIENT_MESSAGE_BYTES} |"),
        format!("| `MAX_SERVER_MESSAGE_BYTES` | {MAX_SERVER_MESSAGE_BYTES} |"),
        format!("| `MAX_DEPTH` | {MAX_DEPTH} |"),
        format!("| `MAX_NUMBER` | {MAX_NUMBER} |"),
        format!("| `MAX_DISTANCE` | {MAX_DISTANCE} |"),
        format!("| `MAX_ROUNDS` | {MAX_ROUNDS} |"),
        format!("| `initial_ms` | {MIN_INITIAL_MS} | {MAX_INITIAL_MS} |"),
        format!("| `increment_ms` | 0 | {MAX_INCREMENT_MS} |"),
        format!("| `reveal_ms` | {MIN_REVEAL_MS} | {MAX_REVEAL_MS} |"),
        format!("| `per_phase_ms` | {MIN_PER_PHASE_MS} | {MAX_PER_PHASE_MS} |"),
        format!("`protocol_version` is `{PROTOCOL_VERSION}`"),
    ];
    for line in must {
        assert!(PROTOCOL_MD.contains(&line), "PROTOCOL.md lacks {line}");
    }
    for (name, tc) in TimeControl::PRESETS {
        let row = match tc.per_phase_ms {
            Some(per_phase_ms) => format!("| `{name}` | {per_phase_ms} |"),
            None => format!(
                "| `{name}` | {} | {} | {} |",
                tc.initial_ms, tc.increment_ms, tc.reveal_ms
            ),
        };
        assert!(
            PROTOCOL_MD.contains(&row),
            "PROTOCOL.md lacks the preset row {row}"
        );
    }
}
