//! What the load generator's test binaries share: running the built generator.

use std::process::Command;

/// Runs the load generator with `args` and `--json` into `dir`: the report, its text and
/// the run's standard output. The run itself must succeed.
pub fn run(dir: &tempfile::TempDir, args: &[&str]) -> (serde_json::Value, String, String) {
    let json = dir.path().join("report.json");
    let output = Command::new(env!("CARGO_BIN_EXE_elementals-loadtest"))
        .args(args)
        .arg(format!("--json={}", json.display()))
        .output()
        .expect("running elementals-loadtest");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the load test failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let text = std::fs::read_to_string(&json).expect("the --json file");
    let report = serde_json::from_str(&text).expect("valid JSON");
    (report, text, stdout)
}
