//! PROTOCOL.md shows exactly what the code sends: the example session, real bytes both
//! ways, and every commitment test vector.

use elementals_protocol::commitment::{self, TEST_VECTORS};
use elementals_protocol::wire::{decode_client, decode_server};
use elementals_protocol::{ClientMsg, Seat, ServerMsg};

use crate::render::{hex_dump, render_frame};
use crate::session::{encode, first, game_id, session, Frame};

const PROTOCOL_MD: &str = include_str!("../../../PROTOCOL.md");

#[test]
fn the_example_session_is_a_valid_game_that_round_trips() {
    let (frames, resumed) = session();
    for frame in &frames {
        let bytes = encode(frame);
        match frame {
            Frame::ToServer(msg) => assert_eq!(decode_client(&bytes).as_ref(), Ok(msg)),
            Frame::ToClient(msg) => assert_eq!(decode_server(&bytes).as_ref(), Ok(msg)),
        }
    }
    // Events follow the seated snapshot's `seq` without gaps.
    let Frame::ToClient(ServerMsg::Snapshot { snapshot, .. }) = first(&frames, "snapshot") else {
        panic!("alice is seated with a snapshot");
    };
    let seqs: Vec<u64> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::ToClient(msg) => msg.seq(),
            Frame::ToServer(_) => None,
        })
        .collect();
    let after = snapshot.seq + 1;
    assert_eq!(seqs, (after..after + seqs.len() as u64).collect::<Vec<_>>());
    // Every commitment opens with its reveal.
    let commits = frames.iter().filter_map(|f| match f {
        Frame::ToServer(ClientMsg::Commit {
            round, commitment, ..
        }) => Some((*round, commitment.clone())),
        _ => None,
    });
    let reveals = frames.iter().filter_map(|f| match f {
        Frame::ToServer(ClientMsg::Reveal {
            round, pick, nonce, ..
        }) => Some((*round, *pick, nonce.clone())),
        _ => None,
    });
    for ((round, commitment), (reveal_round, pick, nonce)) in commits.zip(reveals) {
        assert_eq!(round, reveal_round);
        assert!(commitment::verify(
            &commitment,
            &game_id().0,
            round,
            Seat::One,
            pick,
            &nonce
        ));
    }
    assert_eq!(resumed.positions, vec![0, -2, 0, 0, 0]);
    assert_eq!(resumed.rounds.len(), 2);
}

#[test]
fn protocol_md_shows_the_example_session_as_generated() {
    let (frames, resumed) = session();
    let mut rest = PROTOCOL_MD;
    for frame in &frames {
        let shown = render_frame(frame);
        let at = rest.find(&shown).unwrap_or_else(|| {
            let all: Vec<String> = frames.iter().map(render_frame).collect();
            panic!(
                "PROTOCOL.md lacks, after the previous frame:\n{shown}\n\nThe whole session:\n{}",
                all.join("\n")
            )
        });
        rest = &rest[at + shown.len()..];
    }
    let snapshot = Frame::ToClient(ServerMsg::Snapshot {
        id: None,
        snapshot: resumed,
        seat: Some(Seat::One),
    });
    let shown = render_frame(&snapshot);
    assert!(PROTOCOL_MD.contains(&shown), "PROTOCOL.md lacks\n{shown}");
}

#[test]
fn protocol_md_shows_the_real_bytes_of_frames_both_ways() {
    let (frames, _) = session();
    let shown = ["hello", "welcome", "commit", "reveal", "round_result"].map(|t| first(&frames, t));
    for frame in shown {
        let dump = hex_dump(&encode(frame));
        assert!(
            PROTOCOL_MD.contains(&dump),
            "PROTOCOL.md lacks the bytes of {}:\n{dump}",
            render_frame(frame)
        );
    }
}

#[test]
fn protocol_md_lists_every_commitment_test_vector() {
    for v in TEST_VECTORS {
        for text in [v.game_id, v.nonce_hex, v.preimage_hex, v.commitment_hex] {
            assert!(PROTOCOL_MD.contains(text), "PROTOCOL.md lacks {text}");
        }
    }
}
