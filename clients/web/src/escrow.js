// The escrow setting: whether this browser sends each pick and its nonce with the
// commitment (PROTOCOL.md section 8), so that a round needs one visit, not two. Off unless
// the player turns it on; kept in localStorage. The switch says the price in plain words.

import { h } from './dom.js';

const KEY = 'elementals.escrow';

export const escrow = {
  on: localStorage.getItem(KEY) === 'on',

  set(on) {
    escrow.on = on;
    localStorage.setItem(KEY, on ? 'on' : 'off');
  },
};

/** The switch, with what it costs; `changed` runs after each change. */
export function escrowToggle(changed = () => {}) {
  const box = h('input', { type: 'checkbox', id: 'escrow', checked: escrow.on, 'aria-describedby': 'escrow-help' });
  box.addEventListener('change', () => {
    escrow.set(box.checked);
    changed();
  });
  return h('div', { class: 'escrow-setting' },
    h('label', { class: 'check' }, box, ' Reveal for me (escrow)'),
    h('p', { class: 'hint muted', id: 'escrow-help' },
      'Your pick and its secret go to the server with your commitment, and the server reveals it when both ',
      'have committed: one visit a round. The price: the server sees your pick as soon as you commit, ',
      'and you trust it to keep it from your opponent until the round\'s result. Off, your pick stays in ',
      'this browser until you reveal it. From your next pick on.'));
}
