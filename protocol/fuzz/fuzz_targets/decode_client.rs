//! Any bytes a client may send: decoding never panics, never allocates by what a frame
//! merely claims (the structure walk runs first), agrees with a general MessagePack reader,
//! and whatever decodes re-encodes to a frame that decodes to the same message.

#![no_main]

use elementals_protocol::wire::{self, MAX_CLIENT_MESSAGE_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let structure = wire::check_structure(bytes, MAX_CLIENT_MESSAGE_BYTES);
    if structure.is_ok() {
        // The walk accepted exactly one value spanning the frame: a real reader must too.
        let mut rest = bytes;
        rmpv::decode::read_value(&mut rest).expect("a checked frame is MessagePack");
        assert!(rest.is_empty(), "a checked frame has no trailing bytes");
    }
    match wire::decode_client(bytes) {
        Ok(msg) => {
            assert!(structure.is_ok(), "decoded a frame the walk refused");
            let again = wire::encode(&msg);
            assert_eq!(wire::decode_client(&again).as_ref(), Ok(&msg), "round trip");
        }
        Err(e) => {
            // Every refusal maps to a published error code.
            assert!(elementals_protocol::ErrorCode::ALL.contains(&e.code()));
        }
    }
});
