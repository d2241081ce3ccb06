-- The SQLite schema. Append a new V<n>__<name>.sql to change it; never edit one that has
-- shipped (refinery refuses a database whose applied migrations' checksums differ).

CREATE TABLE accounts (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NULL,
    guest         INTEGER NOT NULL DEFAULT 0,
    rating        REAL NOT NULL DEFAULT 1.0,
    wins          INTEGER NOT NULL DEFAULT 0,
    losses        INTEGER NOT NULL DEFAULT 0,
    draws         INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    -- A guest with a game on record (set as the game is recorded): never pruned, since
    -- its games name it.
    played        INTEGER NOT NULL DEFAULT 0
);
-- The leaderboard reads registered accounts best first, ties by name.
CREATE INDEX accounts_leaderboard ON accounts (guest, rating DESC, name);
-- Guests that may be pruned, oldest first.
CREATE INDEX accounts_idle_guests ON accounts (created_at) WHERE guest = 1 AND played = 0;

-- A revoked session is deleted; `revoked` stays 0.
CREATE TABLE sessions (
    token_hash BLOB PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_account ON sessions (account_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- No index by player: no query lists a player's games, and each would cost every batch
-- of records two more pages at random places (BENCHMARKS.md §5).
CREATE TABLE games (
    id         TEXT PRIMARY KEY,
    rated      INTEGER NOT NULL,
    one_id     INTEGER NOT NULL REFERENCES accounts (id),
    two_id     INTEGER NOT NULL REFERENCES accounts (id),
    winner     INTEGER NULL CHECK (winner IN (1, 2)),
    reason     TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER NOT NULL,
    rounds     INTEGER NOT NULL,
    -- `stored.rs`: a format byte, then MessagePack.
    record     BLOB NOT NULL
);

-- Kept in the order it is read, (account, time, game), WITHOUT ROWID: a change is one
-- entry at the account's place. The player page reads it newest first by key; the
-- look-up of a game's changes knows the account, the time (the game's end) and the game.
CREATE TABLE rating_history (
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    at         INTEGER NOT NULL,
    game_id    TEXT NOT NULL REFERENCES games (id),
    "before"   REAL NOT NULL,
    "after"    REAL NOT NULL,
    PRIMARY KEY (account_id, at, game_id)
) WITHOUT ROWID;
