// The checks of the wire format's two fuzz targets, shared by `fuzz_targets/*.rs` (under
// libFuzzer) and `protocol/tests/fuzz_replay.rs` (over the committed seeds, in every
// `cargo test`), both of which `include!` this file. It uses only the protocol crate and
// `rmpv`, which both crates depend on.

use elementals_protocol::wire::{self, MAX_CLIENT_MESSAGE_BYTES, MAX_SERVER_MESSAGE_BYTES};

/// A frame the structure walk accepts is exactly one MessagePack value: a general reader
/// must read it whole.
fn agrees_with_rmpv(bytes: &[u8]) {
    let mut rest = bytes;
    rmpv::decode::read_value(&mut rest).expect("a checked frame is MessagePack");
    assert!(rest.is_empty(), "a checked frame has no trailing bytes");
}

/// Any bytes a client may send: decoding never panics, never allocates by what a frame
/// merely claims (the structure walk runs first), agrees with a general MessagePack reader,
/// and whatever decodes re-encodes to a frame that decodes to the same message.
pub fn check_client(bytes: &[u8]) {
    let structure = wire::check_structure(bytes, MAX_CLIENT_MESSAGE_BYTES);
    if structure.is_ok() {
        agrees_with_rmpv(bytes);
    }
    let decoded = wire::decode_client(bytes);
    match &decoded {
        Ok(msg) => {
            assert!(structure.is_ok(), "decoded a frame the walk refused");
            let again = wire::encode(msg);
            assert_eq!(wire::decode_client(&again).as_ref(), Ok(msg), "round trip");
        }
        Err(e) => {
            // Every refusal maps to a published error code.
            assert!(elementals_protocol::ErrorCode::ALL.contains(&e.code()));
        }
    }
    // A server's decoder gives the same verdict, and the id of a refusal is the frame's
    // one top-level `id`.
    let request = wire::decode_request(bytes);
    assert_eq!(
        request.as_ref().map_err(|r| &r.error),
        decoded.as_ref(),
        "same verdict"
    );
    if let Err(wire::Refused { id: Some(id), .. }) = request {
        let mut rest = bytes;
        let value = rmpv::decode::read_value(&mut rest).expect("a frame with an id is MessagePack");
        assert!(rest.is_empty(), "a frame with an id has no trailing bytes");
        let ids: Vec<&rmpv::Value> = value
            .as_map()
            .expect("a frame with an id is a map")
            .iter()
            .filter(|(k, _)| k.as_str() == Some("id"))
            .map(|(_, v)| v)
            .collect();
        assert_eq!(ids.len(), 1, "one id");
        assert_eq!(ids[0].as_u64(), Some(u64::from(id)), "the frame's id");
    }
}

/// Any bytes a server might send, as a client decodes them: no panic, and whatever decodes
/// has one canonical encoding (compared as bytes: ratings are floats, and NaN != NaN).
pub fn check_server(bytes: &[u8]) {
    let structure = wire::check_structure(bytes, MAX_SERVER_MESSAGE_BYTES);
    if structure.is_ok() {
        agrees_with_rmpv(bytes);
    }
    if let Ok(msg) = wire::decode_server(bytes) {
        assert!(structure.is_ok(), "decoded a frame the walk refused");
        let canonical = wire::encode(&msg);
        let again = wire::decode_server(&canonical).expect("a canonical frame decodes");
        assert_eq!(
            wire::encode(&again),
            canonical,
            "canonical encoding is stable"
        );
    }
}
