-- A player's games, newest first (`GET /api/players/{name}/games`): one index per seat, of
-- (account, end) and the row's rowid, so that a page's rows are found from the indexes
-- alone and only the page's records are read from the table. Each finished game adds an
-- entry to each; without the game's id (36 characters) in them, an entry is a few bytes.
CREATE INDEX games_by_one ON games (one_id, ended_at);
CREATE INDEX games_by_two ON games (two_id, ended_at);
