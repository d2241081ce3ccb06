// How many are online and wait in each pool (`lobby_counts`), asked every few seconds
// while the lobby is open: the server counts at most once a second and never counts the
// asker in a pool.

import { h, replace } from '../dom.js';

const EVERY_MS = 5000;

function sameVariant(a, b) {
  return a.number === b.number && a.range === b.range && a.distance === b.distance;
}

/** { el, waitingIn(variant, preset, rated), destroy }; `onChange` runs after each answer. */
export function lobbyCounts(app, onChange) {
  let counts = null;
  // Not a live region: a count changing every few seconds is no news to announce.
  const el = h('p', { class: 'muted counts', id: 'lobby-counts' });
  const render = () => {
    if (!counts) return replace(el);
    const online = counts.online === 1 ? '1 player online (you)' : `${counts.online} players online`;
    const waiting = counts.pools.reduce((n, p) => n + p.waiting, 0);
    replace(el, `${online} · ${waiting === 0 ? 'no one else waiting in a pool' : waiting === 1 ? '1 other player waiting in a pool' : `${waiting} other players waiting in pools`}`);
  };
  const ask = async () => {
    if (!app.conn?.isOpen || !app.account) return;
    try {
      counts = await app.request({ type: 'lobby_counts' });
    } catch {
      return;
    }
    render();
    onChange();
  };
  ask();
  const timer = setInterval(ask, EVERY_MS);
  return {
    el,
    /** How many others wait in the pool of `variant`, `preset` and `rated`. */
    waitingIn(variant, preset, rated) {
      const pool = counts?.pools.find((p) => p.time_control === preset && p.rated === rated && sameVariant(p.variant, variant));
      return pool?.waiting ?? 0;
    },
    destroy: () => clearInterval(timer),
  };
}
