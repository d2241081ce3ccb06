//! The browser client's tests (unit tests and end-to-end tests in headless Chromium),
//! run as part of `cargo test --workspace` against the server binary cargo just built.
//! `clients/web/run-tests.sh` installs what they need (npm packages, Debian's Chromium).
//! They fail, never skip, when the browser cannot start.

use std::path::Path;
use std::process::Command;

#[test]
fn browser_client_unit_and_end_to_end_tests_pass() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = Command::new("bash")
        .arg(repo.join("clients/web/run-tests.sh"))
        .env(
            "ELEMENTALS_SERVER_BIN",
            env!("CARGO_BIN_EXE_elementals-server"),
        )
        .current_dir(repo)
        .status()
        .expect("bash runs clients/web/run-tests.sh");
    assert!(status.success(), "browser tests failed: {status}");
}
