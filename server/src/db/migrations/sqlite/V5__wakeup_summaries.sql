-- A sleeping game's summary (a MessagePack `LiveGame`, as it went to sleep), so that the
-- live-games listings show it after a restart too. Rows written before have none.
ALTER TABLE game_wakeups ADD COLUMN summary BLOB;
