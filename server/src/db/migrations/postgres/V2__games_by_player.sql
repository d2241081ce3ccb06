-- A player's games, newest first (`GET /api/players/{name}/games`): one index per seat, of
-- (account, end), read backwards; only the page's records are then read.
CREATE INDEX games_by_one ON games (one_id, ended_at);
CREATE INDEX games_by_two ON games (two_id, ended_at);
