-- Cluster mode: which node runs each live game. A game's steps and its record are written
-- only by the node that holds its row with its token (`db/pg/lease.rs`); a node renews its
-- rows before they expire, and another claims a row once it has expired, adding one to
-- its token. The row goes in the transaction that records the game. The expiry is the
-- database's clock, so the nodes' clocks need not agree.
CREATE TABLE game_leases (
    game_id    TEXT PRIMARY KEY,
    node_id    TEXT NOT NULL,
    token      BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX game_leases_by_expiry ON game_leases (expires_at);
