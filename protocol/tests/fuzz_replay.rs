//! The wire format's two fuzz targets (`protocol/fuzz`) run over their committed inputs
//! (`protocol/fuzz/seeds/decode_client` and `decode_server`) as ordinary tests, through
//! the same checks (`protocol/fuzz/harness/decode.rs`). CI does not run the fuzzer (it
//! needs cargo-fuzz and libFuzzer); this keeps the checks in step with the decoders in
//! every `cargo test`. The seeds are a set cover of a local fuzzing corpus's edges
//! (libFuzzer's `-set_cover_merge=1`), plus a few hand-made frames.
//!
//! `ELEMENTALS_FUZZ_REPLAY_DIR` replays another directory instead (a local corpus, say),
//! through both checks.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
mod harness {
    include!("../fuzz/harness/decode.rs");
}

/// A target's committed seeds.
fn seeds(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

/// What to replay for a target: its seeds, or `ELEMENTALS_FUZZ_REPLAY_DIR`.
fn replay_dir(target: &str) -> PathBuf {
    std::env::var_os("ELEMENTALS_FUZZ_REPLAY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| seeds(target))
}

fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).expect("a readable input");
            (f, bytes)
        })
        .collect()
}

/// Runs `check` over every input, naming the input that fails.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let inputs = inputs(&replay_dir(target));
    for (file, bytes) in &inputs {
        if std::panic::catch_unwind(|| check(bytes)).is_err() {
            panic!(
                "{} breaks the {target} checks (the panic is above)",
                file.display()
            );
        }
    }
    inputs.len()
}

#[test]
fn committed_client_frames_replay_without_a_broken_invariant() {
    let n = replay("decode_client", harness::check_client);
    println!("{n} inputs replayed");
}

#[test]
fn committed_server_frames_replay_without_a_broken_invariant() {
    let n = replay("decode_server", harness::check_server);
    println!("{n} inputs replayed");
}

/// The replay is only worth running if the seeds reach past the first refusal: some must
/// decode to a message, or the round trips above were never checked.
#[test]
fn the_committed_seeds_include_frames_that_decode() {
    use elementals_protocol::wire;
    let client = inputs(&seeds("decode_client"))
        .iter()
        .filter(|(_, b)| wire::decode_client(b).is_ok())
        .count();
    let server = inputs(&seeds("decode_server"))
        .iter()
        .filter(|(_, b)| wire::decode_server(b).is_ok())
        .count();
    assert!(
        client >= 10 && server >= 10,
        "decoding seeds: {client} client, {server} server"
    );
    println!("{client} client and {server} server seeds decode");
}
