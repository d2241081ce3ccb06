// A player's page: record, rating history as a chart, and their latest games with replays.

import { ratingChart } from '../chart.js';
import { fmtDelta, fmtRating, h, replace } from '../dom.js';
import { gamesTable } from '../games-list.js';
import { fetchGames } from '../transcript.js';

// Games listed on the page (the API's page size).
const GAMES_SHOWN = 50;

export function playerView(app, route) {
  const name = route.player ?? '';
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const games = h('section', { class: 'player-games', 'aria-labelledby': 'player-games-title' });
  const el = h('section', { class: 'card player-page' }, h('h1', {}, name), body, games);
  // The games are listed once the player is found: nobody has no games to list.
  const listGames = () => fetchGames(name, GAMES_SHOWN)
    .then((list) => replace(games, h('h2', { id: 'player-games-title' }, 'Games'),
      list.length ? gamesTable(list, `${name}'s games, newest first`) : h('p', { class: 'muted' }, 'No finished games yet.')))
    .catch((e) => replace(games, h('p', { class: 'form-error' }, `Could not load the games: ${e.message}`)));
  fetch(`/api/players/${encodeURIComponent(name)}`)
    .then((r) => {
      if (r.status === 404) throw new Error('No such player (guests have no page).');
      return r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`));
    })
    .then((page) => {
      listGames();
      // Oldest first, whatever order the API lists them in.
      const history = [...(page.history ?? [])].sort((a, b) => a.at - b.at);
      replace(
        body,
        h('p', { class: 'stats' },
          h('span', {}, 'Rating ', h('strong', { class: 'rating', id: 'player-rating' }, fmtRating(page.rating))),
          h('span', {}, `${page.wins} won`), h('span', {}, `${page.losses} lost`), h('span', {}, `${page.draws} drawn`)),
        history.length ? ratingChart(history) : h('p', { class: 'muted' }, 'No rated games yet.'),
        history.length
          ? h('table', { class: 'table' },
              h('caption', { class: 'sr-only' }, 'Rating history'),
              h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col', class: 'num' }, 'Before'), h('th', { scope: 'col', class: 'num' }, 'After'), h('th', { scope: 'col', class: 'num' }, 'Change'))),
              h('tbody', {}, [...history].reverse().map((row) => h('tr', {},
                h('td', {}, new Date(row.at).toLocaleString()),
                h('td', { class: 'num' }, fmtRating(row.before)),
                h('td', { class: 'num' }, fmtRating(row.after)),
                h('td', { class: `num ${row.after > row.before ? 'up' : row.after < row.before ? 'down' : ''}` }, fmtDelta(row.after - row.before))))))
          : null,
      );
    })
    .catch((e) => replace(body, h('p', { class: 'form-error' }, e.message)));
  return { el };
}
