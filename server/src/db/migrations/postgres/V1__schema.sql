-- The PostgreSQL schema: the same tables as SQLite's, in PostgreSQL's types. Append a new
-- V<n>__<name>.sql to change it; never edit one that has shipped.

CREATE TABLE accounts (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          TEXT NOT NULL,
    password_hash TEXT NULL,
    guest         BOOLEAN NOT NULL DEFAULT FALSE,
    rating        DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    wins          BIGINT NOT NULL DEFAULT 0,
    losses        BIGINT NOT NULL DEFAULT 0,
    draws         BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    -- A guest with a game on record: never pruned, since its games name it.
    played        BOOLEAN NOT NULL DEFAULT FALSE
);
-- Names are one account whatever their case, as SQLite's COLLATE NOCASE makes them.
CREATE UNIQUE INDEX accounts_name ON accounts (lower(name));
CREATE INDEX accounts_leaderboard ON accounts (guest, rating DESC, name);
CREATE INDEX accounts_idle_guests ON accounts (created_at, id) WHERE guest AND NOT played;

CREATE TABLE sessions (
    token_hash BYTEA PRIMARY KEY,
    -- Orders sessions made in the same millisecond (SQLite's rowid does there).
    seq        BIGINT GENERATED ALWAYS AS IDENTITY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

CREATE TABLE games (
    id         TEXT PRIMARY KEY,
    rated      BOOLEAN NOT NULL,
    one_id     BIGINT NOT NULL REFERENCES accounts (id),
    two_id     BIGINT NOT NULL REFERENCES accounts (id),
    winner     SMALLINT NULL CHECK (winner IN (1, 2)),
    reason     TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at   BIGINT NOT NULL,
    rounds     BIGINT NOT NULL,
    -- `stored.rs`: a format byte, then MessagePack.
    record     BYTEA NOT NULL
);

CREATE TABLE rating_history (
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    at         BIGINT NOT NULL,
    game_id    TEXT NOT NULL REFERENCES games (id),
    "before"   DOUBLE PRECISION NOT NULL,
    "after"    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, at, game_id)
);

-- The live games' step log: a step is acknowledged once its row is committed; a game's
-- rows are deleted in the transaction that records it. The key refuses a step twice.
CREATE TABLE game_log (
    game_id TEXT NOT NULL,
    step    BIGINT NOT NULL,
    entry   BYTEA NOT NULL,
    PRIMARY KEY (game_id, step)
);
