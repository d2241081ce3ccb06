// The player's hub of open games: whom against, which round, and whose move it is and until
// when; the games owing the player's move first, then by deadline; below them the escrow
// setting (one visit a round).

import { fmtDeadline, fmtGameKind, h, replace } from '../dom.js';
import { escrowToggle } from '../escrow.js';
import { hubOrder, owes } from '../my-games.js';

function owedText(g) {
  const mine = g.owed.find((o) => o.seat === g.seat);
  const theirs = g.owed.find((o) => o.seat !== g.seat);
  const by = (o) => (o.deadline ? ` by ${fmtDeadline(o.deadline)}` : ' (clocks held)');
  if (mine) return `Your move: ${mine.action}${by(mine)}`;
  if (theirs) return `Waiting for ${g.opponent.name} to ${theirs.action}${by(theirs)}`;
  return 'Waiting for the round to resolve';
}

export function myGamesView(app) {
  const list = h('div', { class: 'my-games-list' });
  const render = () => {
    if (!app.account) return replace(list, h('p', { class: 'muted' }, 'Sign in to see your games.'));
    const games = hubOrder(app.myGames.games);
    if (!games.length) return replace(list, h('p', { class: 'muted', id: 'no-open-games' }, 'You have no game under way.'));
    replace(list, h('ul', { class: 'plain games' }, games.map((g) => {
      const mine = owes(g);
      return h('li', { class: `my-game card${mine ? ' owes' : ''}`, dataset: { gameId: g.game_id, owes: mine ? 'yes' : 'no' } },
        h('div', {}, 'Against ', h('strong', {}, g.opponent.name)),
        h('div', { class: 'muted' }, `${fmtGameKind(g.variant, g.time_control)} · ${g.rated ? 'rated' : 'casual'} · round ${g.round}`),
        h('div', { class: 'owed' }, owedText(g)),
        h('a', { class: 'button primary', href: `#/game/${g.game_id}`, 'aria-label': `Open the game against ${g.opponent.name}` }, 'Open'));
    })));
  };
  const el = h('section', { class: 'my-games' }, h('h1', {}, 'My games'), list, escrowToggle());
  render();
  app.myGames.refresh();
  return { el, update: render };
}
