//! Any bytes a server might send, as a client decodes them; the checks are
//! `harness/decode.rs`'s `check_server`.

#![no_main]

#[allow(dead_code)] // each target uses one of the two checks
mod harness {
    include!("../harness/decode.rs");
}

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| harness::check_server(bytes));
