//! Any bytes a server might send, as a client decodes them: no panic, and whatever decodes
//! has one canonical encoding (compared as bytes: ratings are floats, and NaN != NaN).

#![no_main]

use elementals_protocol::wire::{self, MAX_SERVER_MESSAGE_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let structure = wire::check_structure(bytes, MAX_SERVER_MESSAGE_BYTES);
    if structure.is_ok() {
        let mut rest = bytes;
        rmpv::decode::read_value(&mut rest).expect("a checked frame is MessagePack");
        assert!(rest.is_empty(), "a checked frame has no trailing bytes");
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
});
