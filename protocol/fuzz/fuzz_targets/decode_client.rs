//! Any bytes a client may send; the checks are `harness/decode.rs`'s `check_client`.

#![no_main]

#[allow(dead_code)] // each target uses one of the two checks
mod harness {
    include!("../harness/decode.rs");
}

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| harness::check_client(bytes));
