-- Cluster mode: each node's number (the high bits of its connection ids, the name of its
-- Redis channel) is taken with its row here, not from a counter in Redis, so that a Redis
-- restarted empty cannot give a live node's number to a node starting then. A row keeps
-- its number until the row goes (its node silent for an hour, `claim.rs`); a node that
-- finds its row without its number stops (`lease/renewal.rs`).
ALTER TABLE node_leases ADD COLUMN number INTEGER;
CREATE UNIQUE INDEX node_leases_number ON node_leases (number);
