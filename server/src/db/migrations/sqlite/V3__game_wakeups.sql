-- Hibernated games (`game/hibernate.rs`): a row while a game sleeps, with when its next
-- deadline falls (Unix milliseconds) and its players (seated again at startup without
-- loading the game). The sweeper reads the due rows by the index on `due_ms`.
CREATE TABLE game_wakeups (
    game_id TEXT PRIMARY KEY,
    due_ms  INTEGER NOT NULL,
    one_id  INTEGER NOT NULL,
    two_id  INTEGER NOT NULL
);
CREATE INDEX game_wakeups_by_due ON game_wakeups (due_ms);
