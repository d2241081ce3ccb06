// Sign up, log in, or play as a guest.

import { h } from '../dom.js';

export function authView(app) {
  const error = h('p', { class: 'form-error', role: 'alert', id: 'auth-error' });
  const name = h('input', {
    id: 'name', name: 'username', autocomplete: 'username', required: true,
    minlength: '3', maxlength: '20', pattern: '[A-Za-z0-9_\\-]{3,20}', 'aria-describedby': 'name-help auth-error',
  });
  const password = h('input', {
    id: 'password', name: 'password', type: 'password', autocomplete: 'current-password',
    required: true, minlength: '8', maxlength: '128', 'aria-describedby': 'password-help auth-error',
  });
  const buttons = [];
  let busy = false;
  // The buttons wait for a connection (the banner says why) and for the request in flight.
  const update = () => buttons.forEach((b) => (b.disabled = busy || app.status !== 'online'));
  const submit = async (msg) => {
    error.textContent = '';
    busy = true;
    update();
    try {
      await app.authenticate(msg);
    } catch (e) {
      error.textContent = e.message;
    } finally {
      busy = false;
      update();
    }
  };
  const withCredentials = (type) => (ev) => {
    ev.preventDefault();
    const form = ev.target.closest('form');
    if (!form.reportValidity()) return;
    if (type === 'register') password.setAttribute('autocomplete', 'new-password');
    submit({ type, name: name.value.trim(), password: password.value });
  };
  const login = h('button', { type: 'submit', class: 'primary', onclick: withCredentials('login') }, 'Log in');
  const register = h('button', { type: 'submit', onclick: withCredentials('register') }, 'Sign up');
  const guest = h('button', { type: 'button', class: 'ghost', onclick: () => submit({ type: 'guest' }) }, 'Play as guest');
  buttons.push(login, register, guest);
  update();
  const el = h(
    'section',
    { class: 'auth card', 'aria-labelledby': 'auth-title' },
    h('h1', { id: 'auth-title' }, 'Elementals'),
    h('p', { class: 'lede' }, 'Pick an element at the same moment as your opponent. The winner pushes it one square toward the other side. First to the edge wins.'),
    h(
      'form',
      { onsubmit: (ev) => ev.preventDefault() },
      h('label', { for: 'name' }, 'Name'),
      name,
      h('small', { id: 'name-help' }, '3–20 letters, digits, _ or -'),
      h('label', { for: 'password' }, 'Password'),
      password,
      h('small', { id: 'password-help' }, 'At least 8 characters'),
      error,
      h('div', { class: 'row' }, login, register),
    ),
    h('div', { class: 'or' }, h('span', {}, 'or')),
    guest,
    h('p', { class: 'muted' }, 'Guests play unrated games.'),
  );
  return { el, update };
}
