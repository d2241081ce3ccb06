-- The logs of hibernated games (`db/hibernation.rs`): moved out of the step-log file when
-- a game goes to sleep, in the transaction that writes its `game_wakeups` row, so that a
-- wake reads one row by key; deleted with that row when the game wakes. `steps` is the
-- game's steps in order, one MessagePack array.
CREATE TABLE sleeping_logs (
    game_id TEXT PRIMARY KEY,
    steps   BLOB NOT NULL
);
