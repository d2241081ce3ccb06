//! SECURITY.md's limits, pinned to the code: every row of the tables under "Limits and
//! their defaults" must be one this file knows, with the value (and flag) that the code's
//! constant or `Config` default renders to. A limit changed in the code without its row,
//! a row changed without the code, or a new row without its pin fails the build's tests.

use std::time::Duration;

use clap::CommandFactory;
use elementals_protocol::rules::MAX_ROUNDS;
use elementals_protocol::time_control::TimeControl;
use elementals_protocol::wire::{MAX_CLIENT_MESSAGE_BYTES, MAX_DEPTH, MAX_SERVER_MESSAGE_BYTES};

use crate::bus::MAX_RESYNC_ATTEMPTS;
use crate::config::Config;
use crate::game::{GameSettings, GAME_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY};
use crate::outbox::OUTBOX_CAPACITY;

const SECURITY_MD: &str = include_str!("../../SECURITY.md");

/// One known row: its first cell, its value cell, and the flag its flag cell names.
struct Pin {
    what: &'static str,
    value: String,
    flag: Option<&'static str>,
}

fn pin(what: &'static str, value: impl Into<String>) -> Pin {
    Pin {
        what,
        value: value.into(),
        flag: None,
    }
}

fn flagged(what: &'static str, value: impl Into<String>, flag: &'static str) -> Pin {
    Pin {
        flag: Some(flag),
        ..pin(what, value)
    }
}

fn secs(d: Duration) -> String {
    assert_eq!(d.subsec_nanos(), 0, "{d:?} in whole seconds");
    format!("{} s", d.as_secs())
}

/// "a minute" for the login window, as the rows say it.
fn per_window() -> &'static str {
    assert_eq!(crate::limits::LOGIN_WINDOW, Duration::from_secs(60));
    "a minute"
}

fn count(n: u32, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// Every row SECURITY.md's limits tables may have, with what the code says it is.
fn pins() -> Vec<Pin> {
    let d = Config::with_database("unused.db".into());
    let settings = GameSettings::default();
    let grace = |initial_ms| {
        settings.grace(&TimeControl {
            initial_ms,
            increment_ms: 0,
            reveal_ms: 2_000,
        })
    };
    // The grace period is a tenth of the bank, within its bounds.
    let (floor, ceiling) = (grace(0), grace(u64::MAX / 2));
    let divisor = 600_000 / grace(600_000).as_millis() as u64;
    let (name_min, name_max) = (crate::auth::NAME_MIN, crate::auth::NAME_MAX);
    let (password_min, password_max) = (crate::auth::PASSWORD_MIN, crate::auth::PASSWORD_MAX);
    let token_bits = crate::auth::new_token().0.len() * 4;
    vec![
        // Sizes
        pin(
            "a client message (one frame, or all fragments of one message together)",
            format!("{MAX_CLIENT_MESSAGE_BYTES} bytes"),
        ),
        pin(
            "a server message (what clients should accept)",
            format!("{} MiB", MAX_SERVER_MESSAGE_BYTES >> 20),
        ),
        pin("MessagePack nesting", format!("{MAX_DEPTH} levels")),
        pin(
            "declared lengths of strings, bins, arrays, maps",
            "at most the bytes left in the frame",
        ),
        pin("trailing bytes after the message", "none"),
        pin(
            "an HTTP request head",
            format!("{} KiB", crate::accept::MAX_HEAD_BYTES >> 10),
        ),
        pin(
            "a step in the game log",
            format!("{} KiB", crate::db::GAME_LOG_MAX_STEP >> 10),
        ),
        pin(
            "the WebSocket read buffer",
            format!("{} KiB per connection", crate::http::READ_BUFFER >> 10),
        ),
        pin(
            "bytes waiting to be sent to one connection",
            format!(
                "what its outbox holds ({OUTBOX_CAPACITY} items, below), and what the socket \
                 did not take of one write"
            ),
        ),
        // Connections
        flagged(
            "open WebSocket connections",
            d.max_connections.to_string(),
            "--max-connections",
        ),
        flagged(
            "open WebSocket connections per client address",
            format!(
                "{} (an IPv6 address counts with its /64)",
                d.max_connections_per_ip
            ),
            "--max-connections-per-ip",
        ),
        flagged(
            "TCP connections not yet upgraded per client address",
            d.max_connections_per_ip.to_string(),
            "--max-connections-per-ip",
        ),
        flagged(
            "TCP connections still in their HTTP handshake",
            d.max_handshakes.to_string(),
            "--max-handshakes",
        ),
        flagged(
            "accepted TCP connections waiting for a handshake slot",
            d.accept_queue.to_string(),
            "--accept-queue",
        ),
        // One registry entry per account (`Registry::set_online`): a constant of design.
        pin("connections per account", "1"),
        flagged(
            "browser origins",
            "the request's own `Host` (scheme ignored, ports compared)",
            "--allowed-origin",
        ),
        pin(
            "requests without `Origin` (native clients, bots)",
            "allowed",
        ),
        flagged("`X-Forwarded-For`", "ignored", "--trusted-proxy"),
        // Time
        flagged(
            "complete HTTP request head after connecting (or after the previous response)",
            secs(d.handshake_timeout()),
            "--handshake-timeout-secs",
        ),
        flagged(
            "`hello` and sign-in (or a `watch`) after the upgrade",
            secs(d.auth_timeout()),
            "--auth-timeout-secs",
        ),
        flagged(
            "WebSocket ping interval",
            secs(d.heartbeat()),
            "--heartbeat-secs",
        ),
        flagged(
            "silence (no frame, no pong)",
            secs(d.idle_timeout()),
            "--idle-timeout-secs",
        ),
        pin(
            "a closing connection's writer to flush",
            secs(crate::connection::WRITER_FLUSH),
        ),
        pin(
            "graceful shutdown: connections to say goodbye",
            secs(crate::server::SHUTDOWN_GRACE),
        ),
        flagged(
            "round 1: both players to commit",
            secs(Duration::from_secs(d.first_commit_secs)),
            "--first-commit-secs",
        ),
        pin(
            "a disconnected player's seat",
            format!(
                "`clamp(initial_ms / {divisor}, {}, {})`",
                secs(floor),
                secs(ceiling)
            ),
        ),
        flagged(
            "a game's length",
            format!(
                "{} resolved rounds (at most {MAX_ROUNDS}: a larger value is refused at startup)",
                d.max_rounds
            ),
            "--max-rounds",
        ),
        // Rates
        flagged(
            "messages per connection",
            format!(
                "{} a second, bursts of {}",
                d.message_rate,
                2 * d.message_rate
            ),
            "--message-rate",
        ),
        flagged(
            "failed logins per account name",
            format!(
                "{} {} (sliding)",
                d.login_failures_per_account,
                per_window()
            ),
            "--login-failures-per-account",
        ),
        flagged(
            "failed logins per client address",
            format!("{} {} (sliding)", d.login_failures_per_ip, per_window()),
            "--login-failures-per-ip",
        ),
        pin(
            "password hashes at once",
            crate::auth::HASH_CONCURRENCY.to_string(),
        ),
        flagged(
            "a password check's wait for its turn",
            format!(
                "{} (judged by how long recent hashes took)",
                secs(d.sign_in_wait())
            ),
            "--sign-in-wait-secs",
        ),
        pin(
            "open seeks, open challenges",
            format!("{} each per account", crate::lobby::MAX_OPEN_PER_ACCOUNT),
        ),
        pin(
            "games watched per connection",
            crate::session::MAX_WATCHED.to_string(),
        ),
        flagged(
            "games against the computer (`play_bot`)",
            format!(
                "{} on the server; one per account (a player sits in one game at a time)",
                d.max_bot_games
            ),
            "--max-bot-games",
        ),
        // Queues
        pin(
            "frames to one connection (outbox)",
            OUTBOX_CAPACITY.to_string(),
        ),
        pin("a spectator's events", "its connection's outbox"),
        pin(
            "players' commands to one game",
            GAME_CHANNEL_CAPACITY.to_string(),
        ),
        pin(
            "spectators' commands to one game (read only when no player's command waits)",
            SPECTATOR_CHANNEL_CAPACITY.to_string(),
        ),
        pin(
            "commands to the lobby",
            crate::lobby::LOBBY_CHANNEL_CAPACITY.to_string(),
        ),
        pin(
            "requests to the database writer",
            crate::db::DB_REQUEST_QUEUE.to_string(),
        ),
        pin(
            "appends to the game log",
            crate::db::GAME_LOG_QUEUE.to_string(),
        ),
        // Accounts and sessions
        pin(
            "names",
            format!(
                "{name_min}-{name_max} characters of `A-Z a-z 0-9 _ -`, unique ignoring case, \
                 `guest-…` and `{}…` reserved (the computer's accounts, which no password \
                 opens)",
                crate::bots::BOT_PREFIX
            ),
        ),
        pin("passwords", format!("{password_min}-{password_max} bytes")),
        flagged(
            "password hashing",
            format!(
                "argon2id v0x13, memory {} KiB, {}, {} (OWASP's recommendation)",
                d.argon2_memory_kib,
                count(crate::auth::ARGON2_PASSES, "pass", "passes"),
                count(crate::auth::ARGON2_LANES, "lane", "lanes"),
            ),
            "--argon2-memory-kib",
        ),
        pin(
            "session tokens",
            format!("{token_bits} random bits, hex; stored as SHA-256 only"),
        ),
        flagged(
            "token lifetime",
            format!("{} days", d.token_ttl().as_secs() / 86_400),
            "--token-days",
        ),
        pin("revocation", "`logout` deletes the session's token"),
        flagged(
            "sessions per account",
            d.max_sessions_per_account.to_string(),
            "--max-sessions-per-account",
        ),
        flagged(
            "the transcript key",
            format!(
                "Ed25519, from the CSPRNG at the first start, kept in a file readable by its \
                 owner only (mode {:04o}), beside a SQLite database (`<database>{}`) unless a \
                 file is named; never replaced once written; only its public half is served \
                 (`GET /api/transcript-key`). With PostgreSQL and no file named, it is kept in \
                 the database (table `transcript_key`), made by the first process to start and \
                 used by every node on it",
                crate::transcript::KEY_FILE_MODE,
                crate::transcript::KEY_FILE_SUFFIX
            ),
            "--transcript-key",
        ),
        pin(
            "guest names",
            format!(
                "`guest-` and {} characters of Crockford's base32 in lower case: {} bits from \
                 the thread's CSPRNG, drawn again if taken",
                crate::db::GUEST_SYMBOLS,
                5 * crate::db::GUEST_SYMBOLS
            ),
        ),
        flagged(
            "pruning",
            format!(
                "at start and every {} s, in batches of {}: sessions expired over {} s ago; \
                 guests created over {} days ago with no valid token (nobody can sign in as \
                 them), unless online, seated, just out of a game, or named by a stored game \
                 (kept). Registered accounts are never pruned",
                d.prune_interval().as_secs(),
                crate::pruning::PRUNE_BATCH,
                crate::pruning::SESSION_GRACE.as_secs(),
                d.guest_retention_days
            ),
            "--prune-interval-secs",
        ),
        flagged(
            "the leaderboard's first page",
            format!("read at most once every {} ms", d.leaderboard_cache_ms),
            "--leaderboard-cache-ms",
        ),
        // Sizes
        pin(
            "a page of the leaderboard or of the live games (`?limit=`)",
            format!("{} entries", crate::http::MAX_LIST),
        ),
        pin(
            "a page of a player's rating history (`?limit=`)",
            format!("{} entries", crate::http::MAX_HISTORY),
        ),
        pin(
            "a page of a player's games (`?limit=`)",
            format!("{} entries", crate::http::MAX_GAMES),
        ),
        pin("`?offset=` of a page", crate::api::MAX_OFFSET.to_string()),
        pin(
            "a step in the game log",
            format!("{} KiB", crate::db::GAME_LOG_MAX_STEP >> 10),
        ),
        // Rates
        flagged(
            "accounts created per client address (`register` and `guest` together)",
            format!(
                "{} an hour, all at once at most (a token bucket)",
                d.new_accounts_per_ip
            ),
            "--new-accounts-per-ip",
        ),
        flagged(
            "JSON API requests (`/api/…`) per client address",
            format!(
                "{} a second, bursts of {}",
                d.http_requests_per_ip,
                2 * d.http_requests_per_ip
            ),
            "--http-requests-per-ip",
        ),
        pin(
            "PostgreSQL: a lost connection made again (each of the writer's, the step log's, \
             the readers')",
            format!(
                "at its next request, then after {} ms, doubling to {} s, between attempts",
                crate::db::PG_FIRST_BACKOFF.as_millis(),
                crate::db::PG_MAX_BACKOFF.as_secs()
            ),
        ),
        // Queues
        pin(
            "reads for the database readers (threads with read-only connections of their own)",
            crate::db::DB_READ_QUEUE.to_string(),
        ),
    ]
}

/// The cells of one table row, trimmed (`|` inside backticks does not occur here).
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// Every problem with the limits tables of `doc` against `pins`, as messages saying what to
/// change; empty when they agree.
fn check(doc: &str, pins: &[Pin]) -> Vec<String> {
    let Some(start) = doc.find("## Limits and their defaults") else {
        return vec!["SECURITY.md has no section \"## Limits and their defaults\"".into()];
    };
    let section = &doc[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |i| i + 2)];
    let flags: Vec<String> = Config::command()
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    let mut lines = section.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') || !lines.peek().is_some_and(|l| l.starts_with("|---")) {
            continue;
        }
        let header = cells(line);
        let flag_column = header.iter().position(|h| *h == "flag");
        lines.next();
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            let row = cells(row);
            let (what, value) = (row[0], row.get(1).copied().unwrap_or(""));
            let flag_cell = flag_column.and_then(|i| row.get(i)).copied().unwrap_or("");
            seen.push(what.to_owned());
            let Some(pin) = pins.iter().find(|p| p.what == what) else {
                problems.push(format!(
                    "SECURITY.md's limits have a row `{what}` that no test pins: add \
                     `pin(\"{what}\", <its value, rendered from the constant or Config \
                     default it documents>)` (or `flagged(…, \"--its-flag\")`) to `pins()` \
                     in server/src/security_md.rs"
                ));
                continue;
            };
            if value != pin.value {
                problems.push(format!(
                    "SECURITY.md says `{what}` is `{value}`; the code says `{}`",
                    pin.value
                ));
            }
            for word in flag_cell.split(['`', ' ', '(', ')', ',', ';', ':']) {
                if word.starts_with("--") && !flags.iter().any(|f| f == word) {
                    problems.push(format!("`{what}` names {word}, which is no flag"));
                }
            }
            match pin.flag {
                Some(flag) if !flag_cell.contains(&format!("`{flag}")) => problems.push(format!(
                    "`{what}` is set by {flag}: SECURITY.md's flag cell should say so"
                )),
                None if flag_cell.contains("--") => problems.push(format!(
                    "`{what}` is a constant, but SECURITY.md names a flag for it"
                )),
                _ => {}
            }
        }
    }
    for pin in pins {
        if !seen.iter().any(|w| w == pin.what) {
            problems.push(format!(
                "`{}` is pinned in server/src/security_md.rs but is no row of SECURITY.md",
                pin.what
            ));
        }
    }
    problems
}

#[test]
fn every_limit_in_security_md_is_the_one_in_the_code() {
    let problems = check(SECURITY_MD, &pins());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn a_row_without_a_pin_or_with_another_value_is_refused_with_what_to_do() {
    let pins = vec![
        pin("known", "7"),
        flagged("tunable", "3", "--max-connections"),
    ];
    let doc = "## Limits and their defaults\n\n\
        | what | default | flag | beyond it |\n|---|---|---|---|\n\
        | known | 8 | | |\n\
        | tunable | 3 | `--no-such-flag` | |\n\
        | brand new | 1 | | |\n\n## Next\n| known | 9 | | |\n";
    let problems = check(doc, &pins);
    let expect = [
        "SECURITY.md says `known` is `8`; the code says `7`",
        "`tunable` names --no-such-flag, which is no flag",
        "`tunable` is set by --max-connections: SECURITY.md's flag cell should say so",
        "add `pin(\"brand new\"",
    ];
    for text in expect {
        assert!(
            problems.iter().any(|p| p.contains(text)),
            "{text} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expect.len(), "{problems:#?}");
}

/// The counts in the prose of "beyond it" cells are the code's too.
#[test]
fn the_counts_in_what_happens_beyond_a_limit_are_the_code_s() {
    let row = |start: &str| {
        SECURITY_MD
            .lines()
            .find(|l| l.starts_with(&format!("| {start} |")))
            .unwrap_or_else(|| panic!("SECURITY.md has the row `{start}`"))
    };
    let expect = [
        (
            "a spectator's events",
            format!("after {MAX_RESYNC_ATTEMPTS} in a row"),
        ),
        (
            "messages per connection",
            format!(
                "{} refusals in a row",
                crate::connection::RATE_STRIKES_BEFORE_CLOSE
            ),
        ),
        (
            "accepted TCP connections waiting for a handshake slot",
            format!("({} deep", crate::accept::LISTEN_BACKLOG),
        ),
    ];
    for (what, text) in expect {
        assert!(row(what).contains(&text), "`{what}` should say {text}");
    }
}
