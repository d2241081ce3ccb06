//! The CI smoke run: the built load generator against its own local server, a few
//! hundred players for a few seconds. It asserts that games complete and that nothing
//! failed; timings are never asserted (they live in BENCHMARKS.md).

use std::process::Command;

#[test]
fn a_short_run_completes_games_without_errors() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("smoke.json");
    let output = Command::new(env!("CARGO_BIN_EXE_elementals-loadtest"))
        .args([
            "--players=200",
            "--spectators=20",
            "--think-ms=100",
            "--ramp-per-s=400",
            "--duration=10s",
        ])
        .arg(format!("--json={}", json.display()))
        .output()
        .expect("running elementals-loadtest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the load test failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let text = std::fs::read_to_string(&json).expect("the --json file");
    let report: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let count = |key: &str| {
        report[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} missing in {text}"))
    };
    assert_eq!(count("errors"), 0, "errors in the run:\n{stdout}");
    assert_eq!(count("players_target"), 200);
    assert_eq!(
        report["players_connected_peak"].as_i64(),
        Some(200),
        "{stdout}"
    );
    assert!(count("games_completed") > 0, "no game completed:\n{stdout}");
    assert!(
        count("rounds_completed") > 0,
        "no round completed:\n{stdout}"
    );
    for key in [
        "rounds_per_s",
        "messages_per_s",
        "duration_s",
        "server_rss_peak_bytes",
    ] {
        assert!(report[key].is_number(), "{key} missing in {text}");
    }
    for key in ["commit_ack_latency_ms", "result_latency_ms"] {
        for p in ["p50", "p90", "p99", "max"] {
            assert!(report[key][p].is_number(), "{key}.{p} missing in {text}");
        }
    }
    assert!(report["errors_by_kind"].is_object());
}
