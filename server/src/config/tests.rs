use super::*;

#[test]
fn the_database_is_sqlite_by_default_and_the_last_database_flag_wins() {
    use crate::db::Location;
    use std::path::Path;
    let config = Config::parse_from(["elementals-server"]);
    assert_eq!(
        Location::of(&config.database),
        Location::Sqlite(Path::new("elementals.db"))
    );
    let url = "postgres://postgres@127.0.0.1:5432/elementals";
    let config = Config::parse_from([
        "elementals-server",
        "--database=/tmp/a.db",
        &format!("--database={url}"),
    ]);
    assert_eq!(Location::of(&config.database), Location::Postgres(url));
    let config = Config::parse_from(["elementals-server", "--database=sqlite:///tmp/b.db"]);
    assert_eq!(
        Location::of(&config.database),
        Location::Sqlite(Path::new("/tmp/b.db"))
    );
}

#[test]
fn abuse_limits_default_to_the_documented_values() {
    let config = Config::parse_from(["elementals-server"]);
    assert_eq!(config.max_connections, 19_000);
    assert_eq!(config.max_connections_per_ip, 64);
    assert_eq!(config.max_handshakes, 1024);
    assert_eq!(config.accept_queue, 16_384);
    assert_eq!(config.sign_in_wait(), Duration::from_secs(5));
    assert_eq!(config.handshake_timeout(), Duration::from_secs(10));
    assert_eq!(config.auth_timeout(), Duration::from_secs(30));
    assert_eq!(config.heartbeat(), Duration::from_secs(20));
    assert_eq!(config.idle_timeout(), Duration::from_secs(60));
    assert_eq!(config.message_rate, 20);
    assert_eq!(config.login_failures_per_account, 5);
    assert_eq!(config.login_failures_per_ip, 20);
    assert_eq!(config.token_ttl(), Duration::from_secs(30 * 24 * 3600));
    assert_eq!(config.new_accounts_per_ip, 60);
    assert_eq!(config.max_sessions_per_account, 10);
    assert_eq!(config.prune_interval(), Duration::from_secs(3600));
    assert_eq!(config.guest_retention(), Duration::from_secs(7 * 24 * 3600));
    assert_eq!(config.http_requests_per_ip, 10);
    assert_eq!(config.leaderboard_cache(), Duration::from_secs(1));
    assert!(config.trusted_proxy.is_empty() && config.allowed_origin.is_empty());
    assert_eq!(config.max_rounds, 1_000);
}

#[test]
fn max_rounds_takes_1_to_1000_and_refuses_more() {
    for (given, taken) in [("1", 1), ("7", 7), ("1000", 1_000)] {
        let config = Config::try_parse_from(["x", "--max-rounds", given]).unwrap();
        assert_eq!(config.max_rounds, taken);
    }
    for refused in ["0", "1001", "100000", "-1"] {
        let flag = format!("--max-rounds={refused}");
        let err = Config::try_parse_from(["x", flag.as_str()]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{refused}"
        );
        let message = err.to_string();
        assert!(message.contains("--max-rounds"), "{message}");
        assert!(message.contains("1..=1000"), "{message}");
    }
}

#[test]
fn cluster_mode_is_off_without_redis_and_needs_postgres_with_it() {
    let config = Config::parse_from(["elementals-server"]);
    assert_eq!(config.cluster(), Ok(None));
    let config = Config::parse_from(["x", "--redis", "redis://127.0.0.1:6379"]);
    assert_eq!(config.cluster(), Err(ConfigError::ClusterNeedsPostgres));
    let pg = "--database=postgres://postgres@127.0.0.1:5432/e";
    let config = Config::parse_from(["x", pg, "--redis=redis://127.0.0.1:6379"]);
    let cluster = config.cluster().unwrap().unwrap();
    assert_eq!(cluster.name, "elementals");
    assert_eq!(cluster.redis_url, "redis://127.0.0.1:6379");
    // The process's own without --node-id, the same at every call.
    assert_eq!(cluster.node_id, config.cluster().unwrap().unwrap().node_id);
    assert!(cluster.node_id.contains(&std::process::id().to_string()));
    let config = Config::parse_from([
        "x",
        pg,
        "--redis=redis://127.0.0.1:6379",
        "--cluster=test-1",
        "--node-id=a",
    ]);
    let cluster = config.cluster().unwrap().unwrap();
    assert_eq!(
        (cluster.name.as_str(), cluster.node_id.as_str()),
        ("test-1", "a")
    );
    for bad in ["", "a b", "x:y", "é"] {
        let flag = format!("--cluster={bad}");
        let config = Config::parse_from(["x", pg, "--redis=redis://h:1", flag.as_str()]);
        assert_eq!(
            config.cluster(),
            Err(ConfigError::BadClusterName),
            "{bad:?}"
        );
    }
    let config = Config::parse_from(["x", pg, "--redis=http://h:1"]);
    assert_eq!(config.cluster(), Err(ConfigError::BadRedisUrl));
}

#[test]
fn proxies_and_origins_repeat_or_take_lists() {
    let config = Config::parse_from([
        "elementals-server",
        "--trusted-proxy",
        "10.0.0.1",
        "--trusted-proxy=10.0.0.2,::1",
        "--allowed-origin",
        "https://a.example",
        "--allowed-origin=https://b.example",
    ]);
    let proxies: Vec<IpAddr> = ["10.0.0.1", "10.0.0.2", "::1"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    assert_eq!(config.trusted_proxy, proxies);
    assert_eq!(
        config.allowed_origin,
        ["https://a.example", "https://b.example"]
    );
    assert!(Config::try_parse_from(["x", "--trusted-proxy", "not-an-ip"]).is_err());
}

#[test]
fn max_correspondence_games_takes_1_to_50_and_refuses_more() {
    let config = Config::try_parse_from(["x"]).unwrap();
    assert_eq!(
        config.max_correspondence_games,
        crate::limits::MAX_CORRESPONDENCE_GAMES
    );
    let config = Config::try_parse_from(["x", "--max-correspondence-games", "3"]).unwrap();
    assert_eq!(config.max_correspondence_games, 3);
    for refused in ["0", "51", "-1"] {
        let flag = format!("--max-correspondence-games={refused}");
        let err = Config::try_parse_from(["x", flag.as_str()]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
    }
}
