-- The Ed25519 secret key that signs finished games' transcripts, one row: made by the first
-- server process to start and read by every later one, so that every node on the database
-- signs with one key across restarts.
CREATE TABLE transcript_key (
    id     SMALLINT PRIMARY KEY CHECK (id = 1),
    secret BYTEA    NOT NULL CHECK (length(secret) = 32)
);
