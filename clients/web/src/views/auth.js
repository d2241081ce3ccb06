// Sign in: log in, create an account, or play as a guest. The form does one thing at a
// time, chosen above it, so that Enter does what the button says.

import { h } from '../dom.js';
import { plainMessage } from '../errors.js';

export function authView(app) {
  const error = h('p', { class: 'form-error', role: 'alert', id: 'auth-error' });
  const name = h('input', {
    id: 'name', name: 'username', autocomplete: 'username', required: true,
    minlength: '3', maxlength: '20', pattern: '[A-Za-z0-9_\\-]{3,20}', 'aria-describedby': 'name-help auth-error',
  });
  const password = h('input', {
    id: 'password', name: 'password', type: 'password', required: true, minlength: '8', maxlength: '128',
    'aria-describedby': 'password-help auth-error',
  });
  // Someone who has signed in with an account in this browser most likely wants to log in.
  let mode = localStorage.getItem('elementals.has-account') ? 'login' : 'register';
  const modeInput = (value, label) => {
    const input = h('input', { type: 'radio', name: 'auth-mode', id: `mode-${value}`, value, checked: mode === value });
    input.addEventListener('change', () => setMode(value));
    return { input, label: h('label', { for: `mode-${value}`, class: 'mode' }, input, ' ', label) };
  };
  const modes = { login: modeInput('login', 'Log in'), register: modeInput('register', 'New account') };
  const submit = h('button', { type: 'submit', class: 'primary', id: 'auth-submit' });
  const passwordHelp = h('small', { id: 'password-help' });
  const switchTo = h('button', { type: 'button', class: 'link', hidden: true });
  const setMode = (value) => {
    mode = value;
    modes[value].input.checked = true;
    submit.textContent = mode === 'login' ? 'Log in' : 'Create account';
    password.setAttribute('autocomplete', mode === 'login' ? 'current-password' : 'new-password');
    passwordHelp.textContent = mode === 'login' ? 'Your password' : 'At least 8 characters';
    error.textContent = '';
    switchTo.hidden = true;
  };
  setMode(mode);

  let busy = false;
  const guest = h('button', { type: 'button', class: 'ghost', onclick: () => send({ type: 'guest' }) }, 'Play as guest');
  // The buttons wait for a connection (the banner says why) and for the request in flight.
  const update = () => [submit, guest].forEach((b) => (b.disabled = busy || app.status !== 'online'));
  const send = async (msg) => {
    error.textContent = '';
    switchTo.hidden = true;
    busy = true;
    update();
    try {
      await app.authenticate(msg);
    } catch (e) {
      error.textContent = plainMessage(e);
      // The likely mix-up: logging in with an account never made, or making one that exists.
      const other = e.code === 'bad_credentials' ? 'register' : e.code === 'name_taken' ? 'login' : null;
      if (other) {
        switchTo.textContent = other === 'register' ? 'New here? Create this account' : 'Log in instead';
        switchTo.onclick = () => {
          setMode(other);
          password.focus();
        };
        switchTo.hidden = false;
      }
    } finally {
      busy = false;
      update();
    }
  };
  const form = h(
    'form',
    {
      onsubmit: (ev) => {
        ev.preventDefault();
        if (!form.reportValidity()) return;
        send({ type: mode, name: name.value.trim(), password: password.value });
      },
    },
    h('fieldset', { class: 'modes' }, h('legend', { class: 'sr-only' }, 'Log in or create an account'), modes.login.label, modes.register.label),
    h('label', { for: 'name' }, 'Name'),
    name,
    h('small', { id: 'name-help' }, '3–20 letters, digits, _ or -'),
    h('label', { for: 'password' }, 'Password'),
    password,
    passwordHelp,
    error,
    switchTo,
    submit,
  );
  update();
  const el = h(
    'section',
    { class: 'auth card', 'aria-labelledby': 'auth-title' },
    h('h1', { id: 'auth-title' }, 'Elementals'),
    h('p', { class: 'lede' }, 'Pick an element at the same moment as your opponent. The winner pushes it one square toward the other side. First to the edge wins. ', h('a', { href: '#/how' }, 'How to play')),
    form,
    h('div', { class: 'or' }, h('span', {}, 'or')),
    guest,
    h('p', { class: 'muted' }, 'Guests play unrated games. Anyone can watch live games without signing in.'),
  );
  return { el, update };
}
