//! The CI smoke run: the built load generator against its own local server, a few
//! hundred players for a few seconds. It asserts that games complete and that nothing
//! failed; timings are never asserted (a shared machine makes them noise).

mod support;

use support::run;

#[test]
fn a_short_run_completes_games_without_errors() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let csv = dir.path().join("samples.csv");
    let (report, text, stdout) = run(
        &dir,
        &[
            "--players=200",
            "--spectators=20",
            "--think-ms=100",
            "--ramp-per-s=400",
            "--duration=10s",
            "--sample-every=2s",
            &format!("--samples-csv={}", csv.display()),
        ],
    );
    let count = |key: &str| {
        report[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} missing in {text}"))
    };
    assert_eq!(count("errors"), 0, "errors in the run:\n{stdout}");
    // Thinking 100 ms against a 2 s increment, no bank can run out.
    assert_eq!(count("games_lost_on_time"), 0, "{stdout}");
    assert_eq!(count("players_target"), 200);
    assert_eq!(
        report["players_connected_peak"].as_i64(),
        Some(200),
        "{stdout}"
    );
    assert!(count("games_completed") > 0, "no game completed:\n{stdout}");
    // The local server's CPU per round of the hold, from its cores and the rounds.
    assert!(
        report["server_cpu_us_per_round"]
            .as_f64()
            .is_some_and(|us| us > 0.0),
        "{text}"
    );
    // 200 players in 100 games, each player at 80 % of the default 20 messages/s, a
    // commit and a reveal a round: at most 100 * 8 rounds/s.
    assert_eq!(
        report["pace_cap_rounds_per_s"].as_f64(),
        Some(800.0),
        "{text}"
    );
    assert!(
        report["pace_cap_vs_echo"].is_null(),
        "no echo was measured: {text}"
    );
    assert!(
        stdout.contains("players' pacing caps rounds/s at"),
        "{stdout}"
    );
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

    // The server's samples: one before any client, every 2 s, at the end of the hold
    // and after the clients have gone; the summary covers the hold's second half.
    let samples = report["server_samples"]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("server_samples.samples missing in {text}"));
    assert!(samples.len() >= 6, "{} samples in {text}", samples.len());
    for sample in samples {
        for key in [
            "server_rss_bytes",
            "server_fds",
            "elapsed_s",
            "games_completed",
        ] {
            assert!(sample[key].is_number(), "{key} missing in {sample}");
        }
    }
    let summary = &report["server_samples"]["summary"];
    for key in [
        "first",
        "last",
        "min",
        "max",
        "growth_percent",
        "slope_per_min",
    ] {
        assert!(
            summary["server_rss_bytes"][key].is_number(),
            "server_rss_bytes.{key} missing in {summary}"
        );
        assert!(
            summary["server_fds"][key].is_number(),
            "server_fds.{key} missing in {summary}"
        );
    }
    let fds = summary["server_fds"]["last"].as_u64().expect("a count");
    assert!(fds >= 220, "220 clients' sockets, but {fds} descriptors");
    let lines = std::fs::read_to_string(&csv).expect("the samples CSV");
    let mut lines = lines.lines();
    assert!(lines
        .next()
        .is_some_and(|h| h.starts_with("elapsed_s,phase,")));
    assert_eq!(lines.count(), samples.len(), "a CSV line per sample");
}

/// Spectators read by the lean thread (`--lean-spectators`): they sign in, find the live
/// games, watch them, and time results, without errors. The fan-out ceiling measured
/// first reaches every spectator with every broadcast.
#[test]
fn lean_spectators_watch_games_and_time_their_results() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, text, stdout) = run(
        &dir,
        &[
            "--players=20",
            "--spectators=60",
            "--lean-spectators",
            "--fanout-ceiling",
            "--fanout-ceiling-rounds=3",
            "--think-ms=100",
            "--ramp-per-s=400",
            "--duration=5s",
        ],
    );
    assert_eq!(report["errors"].as_u64(), Some(0), "errors:\n{stdout}");
    assert_eq!(report["spectator_client"], "lean", "{text}");
    assert_eq!(
        report["spectators_connected_peak"].as_i64(),
        Some(60),
        "{stdout}"
    );
    let timed = report["spectator_result_latency_ms"]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("spectator_result_latency_ms.count missing in {text}"));
    assert!(
        timed > 60,
        "only {timed} results timed at spectators:\n{stdout}"
    );
    let rounds = report["fanout_last_spectator_ms"]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("fanout_last_spectator_ms.count missing in {text}"));
    assert!(rounds > 0, "no round's fan-out timed:\n{stdout}");
    // The rounds behind that figure, one entry each, in the order they were played.
    let listed = report["fanout_rounds"]
        .as_array()
        .unwrap_or_else(|| panic!("fanout_rounds missing in {text}"));
    assert_eq!(listed.len() as u64, rounds, "{text}");
    assert_eq!(report["fanout_rounds_left_out"].as_u64(), Some(0), "{text}");
    let mut at = 0.0;
    let mut with_from_result = 0;
    for round in listed {
        let (half, last) = (round["half_ms"].as_f64(), round["last_ms"].as_f64());
        let (Some(half), Some(last)) = (half, last) else {
            panic!("a round without its times: {round}");
        };
        assert!(half <= last, "{round}");
        // A result reaches a player after the round's last reveal went, so the fan-out
        // timed from there is never longer.
        if let Some(from_result) = round["last_from_result_ms"].as_f64() {
            assert!((0.0..=last).contains(&from_result), "{round}");
            with_from_result += 1;
        }
        let received = round["received"].as_u64().unwrap_or(0);
        assert!((1..=60).contains(&received), "{round}");
        let this = round["at_s"].as_f64().unwrap_or(-1.0);
        assert!(this >= at, "rounds out of order: {text}");
        at = this;
    }
    // Both players of each round are in this process, so a player had every round's
    // result too, bar a round the run's end cut short (at most one in each of the 10
    // games).
    assert!(
        with_from_result > 0 && with_from_result + 10 >= rounds,
        "{with_from_result} of {rounds} rounds timed from the players' result: {text}"
    );
    assert_eq!(
        report["fanout_from_result_ms"]["count"].as_u64(),
        Some(with_from_result),
        "{text}"
    );
    let ceiling = &report["fanout_ceiling"];
    assert_eq!(ceiling["errors"].as_u64(), Some(0), "{text}");
    assert_eq!(ceiling["spectators"].as_u64(), Some(60), "{text}");
    assert_eq!(
        ceiling["last_spectator_ms"]["count"].as_u64(),
        Some(3),
        "a last arrival per broadcast: {text}"
    );
    assert_eq!(
        ceiling["spectator_ms"]["count"].as_u64(),
        Some(180),
        "every spectator timed for every broadcast: {text}"
    );
    assert!(report["fanout_vs_ceiling"].is_number(), "{text}");
}

/// Quiet connections live on their pongs: players thinking far longer than the idle
/// timeout and spectators with little to read, against a server pinging every 2 s and
/// closing after 6 s without a frame. No connection may be dropped. (A reader that kept
/// one deadline timer per connection, `f8d7c9b`, dropped every one of them here.)
#[test]
fn connections_that_only_answer_pings_are_kept() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, _text, stdout) = run(
        &dir,
        &[
            "--players=4",
            "--spectators=4",
            "--think-ms=20000",
            "--ramp-per-s=100",
            "--duration=15s",
            "--server-arg=--idle-timeout-secs=6",
            "--server-arg=--heartbeat-secs=2",
        ],
    );
    assert_eq!(report["errors"].as_u64(), Some(0), "errors:\n{stdout}");
    assert_eq!(
        report["spectators_connected_peak"].as_i64(),
        Some(4),
        "{stdout}"
    );
    assert_eq!(
        report["players_in_game_at_end"].as_i64(),
        Some(4),
        "{stdout}"
    );
}

/// Every player's socket dropped at once halfway through and all resume with their
/// tokens: some come back to a game still on (a snapshot), some to one that ended while
/// they were away (`authenticated` says they hold no seat). All must be back, error-free.
#[test]
fn a_short_reconnect_storm_brings_every_player_back() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, text, stdout) = run(
        &dir,
        &[
            "--players=200",
            "--think-ms=100",
            "--ramp-per-s=400",
            "--duration=8s",
            "--reconnect-storm",
        ],
    );
    assert_eq!(report["errors"].as_u64(), Some(0), "errors:\n{stdout}");
    let storm = &report["reconnect_storm"];
    assert_eq!(storm["players"].as_u64(), Some(200), "{text}");
    assert_eq!(storm["back"].as_u64(), Some(200), "not all back:\n{stdout}");
    // Read from the machine's counters where it can (Linux): a number, else null.
    let overflows = &storm["listen_overflows"];
    assert!(overflows.is_u64() || overflows.is_null(), "{overflows}");
    assert!(
        storm["in_game_at_drop"].as_u64().is_some_and(|n| n > 0),
        "nobody was in a game when the storm hit:\n{stdout}"
    );
    assert!(
        report["games_completed"].as_u64().is_some_and(|n| n > 0),
        "no game completed:\n{stdout}"
    );
}

/// With the server refusing every sign-in that would wait for a password check
/// (`--sign-in-wait-secs=0`), a burst of registrations is partly answered `rate_limited`;
/// the players try again a few seconds later, as the protocol asks, and all get in: the
/// refusals are counted as retries, not errors.
#[test]
fn sign_ins_refused_while_password_checks_are_busy_are_retried() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, text, stdout) = run(
        &dir,
        &[
            "--players=300",
            "--think-ms=100",
            // All 300 sign in within a few milliseconds, and each hash takes a few (1 MiB):
            // the two slots are busy while most arrive, and with no wait allowed each of
            // those is refused. The retries, seconds later and spread out, find slots free.
            "--ramp-per-s=100000",
            "--argon2-memory-kib=1024",
            "--duration=3s",
            "--server-arg=--sign-in-wait-secs=0",
        ],
    );
    assert!(
        report["sign_in_retries"].as_u64().is_some_and(|n| n > 0),
        "no sign-in was refused, so none was retried:\n{text}"
    );
    assert_eq!(report["errors"].as_u64(), Some(0), "errors:\n{stdout}");
    assert_eq!(
        report["players_connected_peak"].as_i64(),
        Some(300),
        "{stdout}"
    );
}

#[test]
fn a_short_spectator_flood_refuses_no_move_and_fails_nothing() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (report, text, stdout) = run(&dir, &["flood", "--flooders=10", "--rounds=16"]);
    assert_eq!(report["rounds_played"].as_u64(), Some(16), "{stdout}");
    assert_eq!(
        report["result_latency_ms"]["count"].as_u64(),
        Some(32),
        "{text}"
    );
    assert_eq!(report["moves_refused"].as_u64(), Some(0), "{stdout}");
    let errors = report["errors"].as_object().expect("errors by kind");
    assert!(errors.is_empty(), "errors in the run:\n{stdout}");
    let answered: u64 = report["flood_answered"]
        .as_object()
        .expect("flood requests by kind")
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert!(answered > 0, "the flooders were never answered:\n{stdout}");
}
