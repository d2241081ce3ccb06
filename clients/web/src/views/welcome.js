// The first page of a visitor who has not signed in: play at once (as a guest, or against
// the computer, one click each), the games being played now, and the way to an account.

import { h } from '../dom.js';
import { plainMessage } from '../errors.js';
import { VARIANTS } from './lobby.js';
import { liveGames } from './watch.js';

export function welcomeView(app) {
  const error = h('p', { class: 'form-error', role: 'alert', id: 'welcome-error' });
  const buttons = [];
  // A guest account first; then, for the computer, a game at once (its `game_start` opens it).
  const start = async (computer) => {
    error.textContent = '';
    buttons.forEach((b) => (b.disabled = true));
    try {
      await app.authenticate({ type: 'guest' });
      if (computer) {
        const v = VARIANTS[0];
        await app.act({ type: 'play_bot', strength: 'medium', variant: { number: v.number, range: v.range, distance: v.distance }, time_control: 'blitz' });
      }
    } catch (e) {
      error.textContent = plainMessage(e);
      update();
    }
  };
  const guest = h('button', { class: 'primary', id: 'welcome-guest', onclick: () => start(false) }, 'Play as a guest');
  const computer = h('button', { id: 'welcome-computer', onclick: () => start(true) }, 'Play the computer');
  buttons.push(guest, computer);
  const live = liveGames(app, 'h2');
  const update = () => {
    buttons.forEach((b) => (b.disabled = app.status !== 'online'));
    live.update();
  };
  const el = h('div', { class: 'welcome' },
    h('section', { class: 'card', 'aria-labelledby': 'welcome-title' },
      h('h1', { id: 'welcome-title' }, 'Elementals'),
      h('p', { class: 'lede' }, 'Pick an element at the same moment as your opponent. The winner pushes it one square toward the other side. First to the edge wins. ',
        h('a', { href: '#/how' }, 'How to play')),
      h('div', { class: 'row wrap' }, guest, computer),
      error,
      h('p', { class: 'muted' }, 'A guest plays casual games at once, no sign-up. ',
        h('a', { href: '#/login' }, 'Log in or create an account'), ' to play rated games and keep a rating.')),
    live.el);
  update();
  return { el, update, destroy: () => live.destroy() };
}
