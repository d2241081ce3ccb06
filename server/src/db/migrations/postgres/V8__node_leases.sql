-- Cluster mode: a node renews one row, its own, rather than one row a game
-- (`db/pg/lease.rs`). A game's lease row names its node and the node's epoch when the row
-- was taken; the lease is live while that node's row here has not expired and still has
-- that epoch. A node whose row has expired starts a new epoch at its next renewal, so that
-- the games it held before stay claimable. A game row's own `expires_at` is read no more.
CREATE TABLE node_leases (
    node_id    TEXT PRIMARY KEY,
    epoch      BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
-- Each node that holds games keeps them until the latest expiry of its rows.
INSERT INTO node_leases (node_id, epoch, expires_at)
SELECT node_id, 0, max(expires_at) FROM game_leases WHERE node_id <> '' GROUP BY node_id;
ALTER TABLE game_leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE game_leases ALTER COLUMN expires_at DROP NOT NULL;
-- A claim reads a lapsed node's games, or a live node's from an older epoch, by this index.
CREATE INDEX game_leases_by_node ON game_leases (node_id, epoch);
DROP INDEX game_leases_by_expiry;
