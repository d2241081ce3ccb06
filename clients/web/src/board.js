// The track from -D to +D, one lane per element, each element's token at its position.
// The DOM is built once per game and then only updated, so a moving token slides (CSS
// transition) and the lane of the element that moved last is highlighted.

import { h } from './dom.js';

export function elementHue(element, number) {
  return Math.round(((element - 1) * 360) / number + 200) % 360;
}

export class Board {
  constructor(info) {
    this.variant = info.variant;
    const { number, distance } = this.variant;
    const cols = 2 * distance + 1;
    this.lanes = [];
    const scale = [];
    for (let p = -distance; p <= distance; p++) {
      scale.push(h('span', { class: `cell-label${p === 0 ? ' centre' : ''}` }, p > 0 ? `+${p}` : `${p}`));
    }
    const lanes = [];
    for (let e = 1; e <= number; e++) {
      const token = h('span', { class: 'token', 'aria-hidden': 'true' }, String(e));
      const trail = h('span', { class: 'trail', 'aria-hidden': 'true' });
      const cells = [];
      for (let p = -distance; p <= distance; p++) {
        const edge = p === -distance ? ' edge-two' : p === distance ? ' edge-one' : '';
        cells.push(h('span', { class: `cell${edge}${p === 0 ? ' centre' : ''}` }));
      }
      const lane = h(
        'li',
        { class: 'lane', dataset: { element: String(e) }, style: { '--hue': String(elementHue(e, number)) } },
        h('span', { class: 'lane-label', 'aria-hidden': 'true' }, String(e)),
        h('div', { class: 'track' }, h('div', { class: 'cells', 'aria-hidden': 'true' }, cells), trail, token),
      );
      this.lanes.push({ lane, token, trail });
      lanes.push(lane);
    }
    const p = info.players;
    this.el = h(
      'section',
      { class: 'board', style: { '--cols': String(cols), '--lanes': String(number) }, 'aria-label': 'The track' },
      h(
        'div',
        { class: 'board-ends' },
        h('span', { class: 'end end-two' }, `← ${p.two.name} wins at −${distance}`),
        h('span', { class: 'end end-one' }, `${p.one.name} wins at +${distance} →`),
      ),
      h('div', { class: 'scale', 'aria-hidden': 'true' }, h('span', { class: 'lane-label' }), h('div', { class: 'cells' }, scale)),
      h('ol', { class: 'lanes' }, lanes),
    );
    this.lastMoveKey = null;
  }

  /** Show `positions`, highlighting `move` ({element, by, from, to}) when given. */
  update(positions, move, moveKey) {
    const d = this.variant.distance;
    this.el.dataset.positions = positions.join(',');
    positions.forEach((pos, i) => {
      const { lane, token, trail } = this.lanes[i];
      token.style.setProperty('--pos', String(pos + d));
      const where = pos === 0 ? 'the centre' : pos > 0 ? `+${pos}` : `−${-pos}`;
      lane.setAttribute('aria-label', `Element ${i + 1} at ${where}`);
      lane.dataset.position = String(pos);
      lane.classList.toggle('at-edge', Math.abs(pos) >= d);
      const moved = move && move.element === i + 1;
      lane.classList.toggle('moved', !!moved);
      lane.classList.toggle('by-one', !!moved && move.by === 'one');
      lane.classList.toggle('by-two', !!moved && move.by === 'two');
      if (moved) {
        trail.style.setProperty('--from', String(Math.min(move.from, move.to) + d));
        trail.style.setProperty('--len', String(Math.abs(move.to - move.from) + 1));
      }
    });
    // Replay the highlight animation only for a move not shown before.
    if (move && moveKey !== this.lastMoveKey) {
      const { token } = this.lanes[move.element - 1];
      token.classList.remove('bump');
      void token.offsetWidth;
      token.classList.add('bump');
    }
    this.lastMoveKey = moveKey;
  }
}
