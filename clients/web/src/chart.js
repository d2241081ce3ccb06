// A rating-history line chart drawn as SVG: one point per rated game, the first at the
// rating before it.

import { fmtRating, h, plural } from './dom.js';

const W = 640;
const H = 240;
const PAD = { left: 58, right: 14, top: 14, bottom: 34 };

export function ratingChart(history) {
  const values = [history[0].before, ...history.map((r) => r.after)];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (hi - lo < 0.5) {
    const mid = (hi + lo) / 2;
    lo = mid - 0.25;
    hi = mid + 0.25;
  }
  const pad = (hi - lo) * 0.08;
  lo = Math.max(0, lo - pad);
  hi += pad;
  const x = (i) => PAD.left + (values.length === 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (values.length - 1));
  const y = (v) => PAD.top + ((hi - v) * (H - PAD.top - PAD.bottom)) / (hi - lo);

  const ticks = [];
  for (let i = 0; i <= 4; i++) {
    const v = lo + ((hi - lo) * i) / 4;
    ticks.push(
      h('svg:line', { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: 'grid' }),
      h('svg:text', { x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' }, fmtRating(v)),
    );
  }
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const dots = values.map((v, i) =>
    h('svg:circle', { cx: x(i), cy: y(v), r: 3.5, class: 'dot' },
      h('svg:title', {}, i === 0 ? `start: ${fmtRating(v)}` : `game ${i}: ${fmtRating(v)} (${new Date(history[i - 1].at).toLocaleDateString()})`)),
  );
  const first = new Date(history[0].at).toLocaleDateString();
  const last = new Date(history[history.length - 1].at).toLocaleDateString();
  const lastValue = values[values.length - 1];
  return h(
    'figure',
    { class: 'chart' },
    h(
      'svg:svg',
      { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Rating over ${plural(history.length, 'rated game')}, from ${fmtRating(values[0])} to ${fmtRating(lastValue)}`, class: 'rating-chart' },
      ticks,
      h('svg:polyline', { points, class: 'line', fill: 'none' }),
      dots,
      h('svg:text', { x: PAD.left, y: H - 8, class: 'axis' }, first),
      h('svg:text', { x: W - PAD.right, y: H - 8, class: 'axis', 'text-anchor': 'end' }, last),
    ),
    h('figcaption', { class: 'muted' }, history.length === 1 ? 'Rating after the one rated game' : `Rating after each of ${history.length} rated games`),
  );
}
