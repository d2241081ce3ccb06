//! The pins: each row SECURITY.md's limits tables may have, and the code's value for it.

use super::*;

/// Every row SECURITY.md's limits tables may have, with what the code says it is.
pub(super) fn pins() -> Vec<Pin> {
    let d = Config::with_database("unused.db".into());
    let settings = GameSettings::default();
    let grace = |initial_ms| {
        settings.grace(&TimeControl {
            initial_ms,
            increment_ms: 0,
            reveal_ms: 2_000,
            per_phase_ms: None,
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
            "unfinished correspondence games",
            format!(
                "{} per account, beside one live game",
                d.max_correspondence_games
            ),
            "--max-correspondence-games",
        ),
        flagged(
            "games against the computer (`play_bot`)",
            format!(
                "{} on the server (a cluster: all its nodes, counted by the lobby); one live game \
                 per account (beside its correspondence games)",
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
            format!(
                "{} days after its last use (sign-in, `resume`, or a bearer request), its stored \
                 expiry moved at most once every {} h",
                d.token_ttl().as_secs() / 86_400,
                crate::auth::TOKEN_SLIDE_EVERY_MS / 3_600_000,
            ),
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
            format!("{} entries", crate::api::MAX_LIST),
        ),
        pin(
            "a page of a player's rating history (`?limit=`)",
            format!("{} entries", crate::api::MAX_HISTORY),
        ),
        pin(
            "a page of a player's games (`?limit=`)",
            format!("{} entries", crate::api::MAX_GAMES),
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
