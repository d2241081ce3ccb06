-- A player's games, newest first (`GET /api/players/{name}/games`): one index per seat,
-- each holding the game's id, so that a page's ids are read from the indexes alone and
-- only the page's records are read from the table.
CREATE INDEX games_by_one ON games (one_id, ended_at DESC, id DESC);
CREATE INDEX games_by_two ON games (two_id, ended_at DESC, id DESC);
