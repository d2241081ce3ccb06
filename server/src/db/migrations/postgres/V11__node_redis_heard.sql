-- Cluster mode: when each node last heard the cluster's Redis, on the database's clock,
-- written with every renewal of its row. A node cut off from Redis gives its games to the
-- others only if one of them has heard Redis since it last did (Redis is up, its own link
-- is not), and keeps them if Redis is down for every node (`lease/renewal.rs`).
ALTER TABLE node_leases ADD COLUMN redis_at TIMESTAMPTZ;
