//! libFuzzer's entry to the game actor's harness (`harness/game_commands.rs`, which says
//! what it checks). `server/tests/it/fuzz_replay.rs` replays `seeds/game_commands` through
//! the same harness in CI.

#![no_main]

use libfuzzer_sys::{arbitrary, fuzz_target};

include!("../harness/game_commands.rs");

fuzz_target!(|input: Input| run_input(input));
