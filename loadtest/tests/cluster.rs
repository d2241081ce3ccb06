//! The load generator against a cluster of its own (`--nodes`) or one server on a
//! PostgreSQL database of its own (`--postgres`), with its players shared
//! by several generator processes (`--processes`), and its failover run (`--kill-node`):
//! real server processes on the PostgreSQL at 127.0.0.1:5432 and the Redis at
//! 127.0.0.1:6379. Small and short; the figures are asserted for what they count (rounds,
//! errors, players on every node, rounds lost), never for their timings.

mod support;

/// Runs the load generator with `args`; returns its `--json` report and its stdout.
fn run(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, _text, stdout) = support::run(&dir, args);
    (report, stdout)
}

/// The process groups whose cores the report gives.
fn core_names(cluster: &serde_json::Value) -> Vec<&str> {
    cluster["cores"]
        .as_array()
        .expect("cores")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect()
}

#[test]
fn players_spread_over_three_nodes_by_two_generators_play_without_errors() {
    let (report, stdout) = run(&[
        "--nodes=3",
        "--processes=2",
        "--players=24",
        "--think-ms=150",
        "--ramp-per-s=200",
        "--duration=6s",
        "--lobby-poll-ms=0",
    ]);
    assert_eq!(report["errors"], 0, "{stdout}");
    assert_eq!(report["players_connected_peak"], 24, "{stdout}");
    assert!(report["rounds_in_hold"].as_u64() > Some(0), "{stdout}");
    // Both generators' results are in the merged histogram.
    assert!(
        report["result_latency_ms"]["count"].as_u64() >= report["rounds_in_hold"].as_u64(),
        "{stdout}"
    );
    let cluster = &report["cluster"];
    assert_eq!(cluster["nodes"], 3, "{stdout}");
    assert_eq!(cluster["processes"], 2, "{stdout}");
    // Round robin: 8 players on each node, as each node counts its connections.
    let open = cluster["connections_at_hold_end"]
        .as_array()
        .expect("counts");
    assert_eq!(open.len(), 3, "{stdout}");
    for count in open {
        assert_eq!(count, 8, "{stdout}");
    }
    let cores = core_names(cluster);
    for name in ["node n0", "node n1", "node n2", "generators"] {
        assert!(cores.contains(&name), "{name} missing: {stdout}");
    }
}

#[test]
fn a_node_killed_under_load_has_every_game_claimed_and_loses_no_acknowledged_round() {
    let (report, stdout) = run(&[
        "--nodes=3",
        "--players=30",
        "--think-ms=300",
        "--ramp-per-s=200",
        // The kill comes halfway through the hold; the claim takes ~7 s and the players'
        // resumes up to ~8 s more at CI's load, so the hold leaves every game time to play
        // a round after it.
        "--duration=32s",
        "--lobby-poll-ms=0",
        "--kill-node",
    ]);
    let failover = &report["cluster"]["failover"];
    assert!(failover["games"].as_u64() > Some(0), "{stdout}");
    assert_eq!(failover["claimed"], failover["games"], "{stdout}");
    assert_eq!(failover["played_on"], failover["games"], "{stdout}");
    assert_eq!(failover["rounds_lost"], 0, "{stdout}");
    assert!(
        failover["rounds_acknowledged"].as_u64() > Some(0),
        "{stdout}"
    );
    // A third of the players were on the killed node, and came back elsewhere.
    assert!(failover["reconnects"].as_u64() >= Some(10), "{stdout}");
    assert!(report["rounds_in_hold"].as_u64() > Some(0), "{stdout}");
}

#[test]
fn one_server_on_a_postgresql_database_of_the_runs_own_is_measured_with_its_backends() {
    let (report, stdout) = run(&[
        "--postgres",
        "--players=12",
        "--think-ms=150",
        "--ramp-per-s=200",
        "--duration=4s",
        "--lobby-poll-ms=0",
    ]);
    assert_eq!(report["errors"], 0, "{stdout}");
    assert!(report["rounds_in_hold"].as_u64() > Some(0), "{stdout}");
    let cluster = &report["cluster"];
    assert_eq!(cluster["nodes"], 1, "{stdout}");
    let cores = core_names(cluster);
    // The server's own connections to the run's database, found as the hold starts.
    for name in ["server", "postgres (the run's connections)", "generators"] {
        assert!(cores.contains(&name), "{name} missing: {stdout}");
    }
}
