-- A stored record is MessagePack made mostly of random bytes (each round's commitments and
-- nonces), which no compression shrinks: a record past TOAST's threshold goes out of line
-- as it is, without first being offered to the compressor.
ALTER TABLE games ALTER COLUMN record SET STORAGE EXTERNAL;
