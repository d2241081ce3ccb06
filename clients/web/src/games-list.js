// A player's finished games as a table, newest first, each with a link to its replay.

import { fmtDelta, fmtGameKind, h } from './dom.js';

const REASONS = {
  edge: 'edge', time: 'time', no_reveal: 'no reveal', resignation: 'resignation',
  abandoned: 'left', draw_agreed: 'agreed', aborted: 'aborted', server_aborted: 'server',
  max_rounds: 'round limit',
};

/** "Won", "Lost" or "Drawn", from `game.seat`'s side, with the reason. */
export function outcomeOf(game) {
  const { winner, reason } = game.result;
  if (reason === 'aborted') return 'Aborted';
  const word = !winner ? (reason === 'server_aborted' ? 'Aborted' : 'Drawn') : winner === game.seat ? 'Won' : 'Lost';
  return `${word} (${REASONS[reason] ?? reason})`;
}

export function gamesTable(games, caption) {
  return h('table', { class: 'table games-list' },
    h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'Opponent'), h('th', { scope: 'col' }, 'Game'),
      h('th', { scope: 'col' }, 'Result'), h('th', { scope: 'col', class: 'num' }, 'Rating'), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Replay')))),
    h('tbody', {}, games.map((g) => {
      const when = new Date(g.ended_at).toLocaleString();
      const change = g.rating_change ? g.rating_change.after - g.rating_change.before : null;
      // Each cell is named for the phone layout (app.css), where a row becomes two lines.
      return h('tr', { dataset: { gameId: g.game_id } },
        h('td', { class: 'when' }, when),
        h('td', { class: 'opp' }, g.opponent.guest ? g.opponent.name : h('a', { href: `#/player/${encodeURIComponent(g.opponent.name)}` }, g.opponent.name)),
        h('td', { class: 'kind' }, fmtGameKind(g.variant, g.time_control), g.rated ? '' : ' · casual'),
        h('td', { class: 'res' }, outcomeOf(g)),
        h('td', { class: `num change ${change > 0 ? 'up' : change < 0 ? 'down' : ''}` }, change === null ? '–' : fmtDelta(change)),
        // A game of no rounds has nothing to replay.
        h('td', { class: 'rep' }, g.rounds ? h('a', { href: `#/replay/${g.game_id}`, class: 'replay-link', 'aria-label': `Replay the game against ${g.opponent.name}, ${when}` }, 'Replay') : null));
    })));
}
