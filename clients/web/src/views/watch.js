// Live games anyone may watch.

import { fmtGameKind, fmtRating, h, replace } from '../dom.js';

/** Which element stands closest to an edge, in words. */
function leader(g) {
  let best = null;
  g.positions.forEach((p, i) => {
    if (p !== 0 && (!best || Math.abs(p) > Math.abs(best.p))) best = { e: i + 1, p };
  });
  if (!best) return 'all at the centre';
  return `element ${best.e} at ${best.p > 0 ? '+' : '−'}${Math.abs(best.p)} (edges ±${g.variant.distance})`;
}

/**
 * The live games with a Watch link each, kept fresh while shown; `heading` is the title's
 * element (an h1 on its own page, an h2 on the welcome page).
 */
export function liveGames(app, heading = 'h1') {
  const list = h('div', { class: 'live-list' }, h('p', { class: 'muted' }, 'Loading…'));
  const refresh = async () => {
    if (!app.conn?.isOpen) return;
    let games;
    try {
      games = (await app.request({ type: 'list_games' })).games;
    } catch (e) {
      replace(list, h('p', { class: 'form-error' }, e.message));
      return;
    }
    if (!games.length) return replace(list, h('p', { class: 'muted', id: 'no-live-games' }, 'No games are being played right now.'));
    replace(
      list,
      h('ul', { class: 'plain games' },
        games.map((g) =>
          h('li', { class: 'live-game card', dataset: { gameId: g.game_id } },
            h('div', { class: 'live-players' },
              h('span', { class: 'seat-one' }, g.players.one.name, ' ', h('span', { class: 'muted' }, g.players.one.guest ? 'guest' : fmtRating(g.players.one.rating))),
              h('span', { class: 'vs' }, 'vs'),
              h('span', { class: 'seat-two' }, g.players.two.name, ' ', h('span', { class: 'muted' }, g.players.two.guest ? 'guest' : fmtRating(g.players.two.rating)))),
            h('div', { class: 'muted' }, `${fmtGameKind(g.variant, g.time_control)} · ${g.rated ? 'rated' : 'casual'} · round ${g.round} · ${leader(g)} · ${g.spectators} watching`),
            h('a', { class: 'button primary', href: `#/game/${g.game_id}`, 'aria-label': `Watch ${g.players.one.name} against ${g.players.two.name}` }, 'Watch'),
          ),
        ),
      ),
    );
  };
  const el = h('section', { class: 'watch' },
    h('div', { class: 'row spread' }, h(heading, {}, 'Live games'), h('button', { class: 'link', onclick: refresh }, 'Refresh')),
    list);
  refresh();
  const timer = setInterval(refresh, 5000);
  let wasOpen = false;
  return {
    el,
    // Fetch as soon as the connection is up (the view may be built before it is).
    update() {
      const open = !!app.conn?.isOpen;
      if (open && !wasOpen) refresh();
      wasOpen = open;
    },
    destroy: () => clearInterval(timer),
  };
}

export function watchView(app) {
  return liveGames(app);
}
