//! PROTOCOL.md's quick start shows the real frames of a first game, with their bytes, and
//! every frame of the document's session conforms to the published schema.

use elementals_protocol::commitment;
use elementals_protocol::conformance;
use elementals_protocol::messages::ClientMsg;
use elementals_protocol::{Seat, Variant, PROTOCOL_VERSION};

use crate::render::render_flat;
use crate::session::{encode, game_id, nonce, session, Frame};

const PROTOCOL_MD: &str = include_str!("../../../PROTOCOL.md");

/// The quick start's frames: hello, guest, join_pool, then round 1's commit of 5 and its
/// reveal, in the game of the annotated session (section 9).
fn quick_start() -> Vec<ClientMsg> {
    let pick = 5;
    vec![
        ClientMsg::Hello {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            client: None,
            batch: false,
        },
        ClientMsg::Guest { id: 2 },
        ClientMsg::JoinPool {
            id: 3,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: false,
        },
        ClientMsg::Commit {
            id: 4,
            game_id: game_id(),
            round: 1,
            commitment: commitment::make(&game_id().0, 1, Seat::One, pick, &nonce(1)).to_vec(),
            pick: None,
            nonce: None,
        },
        ClientMsg::Reveal {
            id: 5,
            game_id: game_id(),
            round: 1,
            pick,
            nonce: nonce(1).to_vec(),
        },
    ]
}

/// A frame as the quick start shows it: rendered on one line, then its bytes in hex, 32 a
/// line.
fn shown(msg: &ClientMsg) -> String {
    let bytes = wire_bytes(msg);
    let value = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
    let mut text = format!("→ {}", render_flat(&value));
    for line in bytes.chunks(32) {
        text.push_str("\n  ");
        text.push_str(&hex::encode(line));
    }
    text
}

#[test]
fn protocol_md_opens_with_the_quick_starts_real_frames() {
    let start = PROTOCOL_MD
        .find("## Quick start")
        .expect("PROTOCOL.md has a quick start");
    let end = PROTOCOL_MD.find("## 1. Transport").unwrap();
    assert!(start < end, "the quick start comes first");
    let mut rest = &PROTOCOL_MD[start..end];
    for msg in quick_start() {
        conformance::assert_client_frame(&wire_bytes(&msg));
        let text = shown(&msg);
        let at = rest.find(&text).unwrap_or_else(|| {
            let all: Vec<String> = quick_start().iter().map(shown).collect();
            panic!(
                "the quick start lacks, after the previous frame:\n{text}\n\nAll of them:\n{}",
                all.join("\n")
            )
        });
        rest = &rest[at + text.len()..];
    }
}

fn wire_bytes(msg: &ClientMsg) -> Vec<u8> {
    encode(&Frame::ToServer(msg.clone()))
}

#[test]
fn every_frame_of_the_annotated_session_conforms_to_the_schema() {
    let (frames, _) = session();
    for frame in &frames {
        let bytes = encode(frame);
        match frame {
            Frame::ToServer(_) => conformance::assert_client_frame(&bytes),
            Frame::ToClient(_) => conformance::assert_server_frame(&bytes),
        }
    }
}
