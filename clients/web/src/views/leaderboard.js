// The leaderboard, from the JSON API: each row links the player's page (their games) and
// the replay of their latest rated game; below it, the leader's latest games with replays.

import { fmtRating, h, replace } from '../dom.js';
import { gamesTable } from '../games-list.js';
import { fetchGames } from '../transcript.js';

const LEADER_GAMES = 5;

export function leaderboardView() {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const games = h('section', { class: 'leader-games', 'aria-labelledby': 'leader-games-title' });
  const el = h('section', { class: 'card leaderboard' }, h('h1', {}, 'Leaderboard'), body, games);
  fetch('/api/leaderboard')
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
    .then((rows) => {
      if (!rows.length) return replace(body, h('p', { class: 'muted' }, 'No rated games yet.'));
      replace(body, h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Player'), h('th', { scope: 'col', class: 'num' }, 'Rating'),
          h('th', { scope: 'col', class: 'num' }, 'W'), h('th', { scope: 'col', class: 'num' }, 'L'), h('th', { scope: 'col', class: 'num' }, 'D'),
          h('th', { scope: 'col' }, 'Last game'))),
        h('tbody', {}, rows.map((row, i) => h('tr', { dataset: { player: row.name } },
          h('td', {}, String(i + 1)),
          h('td', {}, h('a', { href: `#/player/${encodeURIComponent(row.name)}` }, row.name)),
          h('td', { class: 'num rating' }, fmtRating(row.rating)),
          h('td', { class: 'num' }, String(row.wins)),
          h('td', { class: 'num' }, String(row.losses)),
          h('td', { class: 'num' }, String(row.draws)),
          h('td', {}, row.last_game
            ? h('a', { href: `#/replay/${row.last_game}`, class: 'last-game', 'aria-label': `Replay ${row.name}'s last rated game` }, 'Replay')
            : '–'))))));
      const leader = rows[0].name;
      return fetchGames(leader, LEADER_GAMES).then((list) => list.length && replace(games,
        h('h2', { id: 'leader-games-title' }, `${leader}'s latest games`),
        gamesTable(list, `${leader}'s latest games, newest first`)));
    })
    .catch((e) => replace(body, h('p', { class: 'form-error' }, `Could not load the leaderboard: ${e.message}`)));
  return { el };
}
