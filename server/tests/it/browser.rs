//! The browser client's tests (unit tests and end-to-end tests in headless Chromium),
//! run as part of `cargo test --workspace` against the server binary cargo just built.
//! `.ci/test.sh` installs what they need (npm packages, Debian's Chromium) before
//! `cargo test`; they fail, never skip, when it is missing or the browser cannot start.

use std::path::Path;
use std::process::Command;

#[test]
fn browser_client_unit_and_end_to_end_tests_pass() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new("bash")
        .arg(repo.join("clients/web/run-tests.sh"))
        .env(
            "ELEMENTALS_SERVER_BIN",
            env!("CARGO_BIN_EXE_elementals-server"),
        )
        .current_dir(repo)
        .output()
        .expect("bash runs clients/web/run-tests.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "browser tests failed: {}\n{}",
        out.status,
        failures(&stdout)
    );
}

/// The bundle's build takes its npm packages from the directory it is given (server/build.rs
/// gives its `OUT_DIR`), not from the source tree: given an empty one, it fails for want of
/// esbuild, even where `clients/web/node_modules` is installed.
#[test]
fn the_bundle_build_takes_its_packages_from_the_directory_given() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("node_modules");
    std::fs::create_dir(&modules).unwrap();
    let out = Command::new("node")
        .arg(repo.join("clients/web/build.mjs"))
        .arg(dir.path().join("web"))
        .arg(&modules)
        .output()
        .expect("node runs clients/web/build.mjs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "built without esbuild: {stderr}");
    assert!(stderr.contains("Cannot find module 'esbuild'"), "{stderr}");
    assert!(!dir.path().join("web/app.js").exists());
}

/// The head of each failing test's report in node's TAP output (the line `not ok N - name`
/// and its error), so that a failure reads at the end of the log, where CI shows it.
fn failures(tap: &str) -> String {
    let mut picked = Vec::new();
    let mut lines_of_this = None;
    for line in tap.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("not ok ") {
            lines_of_this = Some(0);
        }
        if let Some(n) = lines_of_this.as_mut() {
            if *n < 25 {
                picked.push(line);
            }
            *n += 1;
            if trimmed == "..." {
                lines_of_this = None;
            }
        }
    }
    if picked.is_empty() {
        "(no `not ok` line: see the output above)".to_owned()
    } else {
        picked.join("\n")
    }
}
