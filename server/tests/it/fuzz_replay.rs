//! The game actor's fuzz harness (`server/fuzz/harness/game_commands.rs`) run over its
//! committed inputs (`server/fuzz/seeds/game_commands`) as an ordinary test: every frame
//! decodes, events run without gaps, results show the revealed picks, a finished game
//! accepts nothing. CI does not run the fuzzer itself (it needs cargo-fuzz and libFuzzer);
//! this keeps the harness in step with the server and its checks in every run. An input
//! goes through `Arbitrary::arbitrary_take_rest`, as libfuzzer-sys passes it to the fuzz
//! target, so a file that fails in the fuzzer fails here.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;

use arbitrary::{Arbitrary, Unstructured};

#[allow(dead_code)]
mod harness {
    include!("../../fuzz/harness/game_commands.rs");
}

/// Set by any panic in the test's thread, a game's task included (the harness's runtime
/// runs its tasks on the thread that calls it): libFuzzer aborts on either, and a panic
/// inside a spawned task would otherwise pass unseen.
static PANICKED: AtomicBool = AtomicBool::new(false);
/// The thread the replay runs on. The panic hook is the process's, and the other tests
/// of this binary panic on their own threads (a failed assertion, `should_panic`, the
/// connection task `hostile_panic` crashes on purpose): those are not the harness's.
static REPLAY_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Removes the harness's database files when the test ends, passed or not.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let db = harness::database_path();
        let (Some(dir), Some(name)) = (db.parent(), db.file_name()) else {
            return;
        };
        let name = name.to_string_lossy().into_owned();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[test]
fn committed_fuzz_inputs_replay_without_a_broken_invariant() {
    REPLAY_THREAD
        .set(std::thread::current().id())
        .expect("the replay runs once per process");
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if REPLAY_THREAD.get() == Some(&std::thread::current().id()) {
            PANICKED.store(true, Ordering::SeqCst);
        }
        default(info);
    }));
    let _cleanup = Cleanup;
    // ELEMENTALS_FUZZ_REPLAY_DIR replays another directory instead, such as the fuzzer's
    // local corpus (server/fuzz/corpus/game_commands).
    let seeds = std::env::var_os("ELEMENTALS_FUZZ_REPLAY_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/game_commands"));
    let mut files: Vec<_> = std::fs::read_dir(&seeds)
        .expect("the committed seeds")
        .map(|e| e.expect("a seed").path())
        .collect();
    files.sort();
    let mut replayed = 0;
    for file in &files {
        let bytes = std::fs::read(file).expect("a readable seed");
        // libfuzzer-sys skips an input that does not make an `Input`; so do we.
        let Ok(input) = harness::Input::arbitrary_take_rest(Unstructured::new(&bytes)) else {
            continue;
        };
        harness::run_input(input);
        assert!(
            !PANICKED.load(Ordering::SeqCst),
            "{} broke an invariant (the panic is printed above)",
            file.display()
        );
        replayed += 1;
    }
    println!("{replayed} of {} inputs replayed", files.len());
    assert!(
        replayed >= files.len() / 2 && replayed > 0,
        "only {replayed} of {} seeds made an input",
        files.len()
    );
}
