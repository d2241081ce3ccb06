// The page's frame around the views: a link past the top bar to the page's content, the
// top bar (navigation, the alerts switch, who is signed in), the connection banner, the
// challenges received (answered from any page), the toasts and the screen reader's announcer. The
// elements are kept on the app, which fills them (`toast`, `announce`) and redraws the
// frame on every refresh.

import { fmtGameKind, h, replace } from './dom.js';

export function buildShell(app) {
  app.nav = h('nav', { class: 'nav', 'aria-label': 'Main' },
    h('a', { href: '#/lobby' }, 'Play'),
    h('a', { href: '#/games', class: 'my-games-link' }, 'My games', ' ',
      app.gamesBadge = h('span', { class: 'badge', hidden: true })),
    h('a', { href: '#/watch' }, 'Watch'),
    h('a', { href: '#/leaderboard' }, 'Leaderboard'),
    h('a', { href: '#/how' }, 'How to play'),
  );
  app.me = h('div', { class: 'me' });
  const alertsBox = h('input', { type: 'checkbox', id: 'alerts', checked: app.alerts.on, 'aria-describedby': 'alerts-help' });
  alertsBox.addEventListener('change', () => {
    app.alerts.set(alertsBox.checked);
    app.refresh();
  });
  app.alertsToggle = h('label', { class: 'alerts check' }, alertsBox, ' Alerts',
    h('span', { class: 'sr-only', id: 'alerts-help' }, ': a sound, and the tab title, when a round starts for you or your game ends'));
  app.banner = h('div', { class: 'banner', role: 'status', 'aria-live': 'polite' });
  app.toasts = h('div', { class: 'toasts', role: 'alert', 'aria-live': 'assertive' });
  app.announcer = h('div', { class: 'sr-only', 'aria-live': 'polite', id: 'announcer' });
  app.main = h('main', { id: 'view', tabindex: '-1' });
  app.invites = h('section', { class: 'invites', 'aria-label': 'Challenges to you', 'aria-live': 'polite', hidden: true });
  // The skip link moves the focus itself: a fragment link would change the hash route.
  const skip = h('a', {
    class: 'skip-link',
    href: '#view',
    onclick: (ev) => {
      ev.preventDefault();
      const target = app.main.querySelector('.picks button[tabindex="0"]:not([disabled])') ?? app.main;
      target.focus();
    },
  }, 'Skip to the page');
  replace(
    app.root,
    skip,
    h('header', { class: 'topbar' }, h('a', { class: 'brand', href: '#/lobby' }, 'Elementals'), app.nav, app.alertsToggle, app.me),
    app.banner,
    app.invites,
    app.main,
    app.toasts,
    app.announcer,
  );
}

export function renderShell(app) {
  const a = app.account;
  replace(
    app.me,
    a
      ? [
          // A guest has no player page.
          a.guest
            ? h('span', { class: 'me-name' }, a.name)
            : h('a', { href: `#/player/${encodeURIComponent(a.name)}`, class: 'me-name' }, a.name),
          a.guest ? h('span', { class: 'tag' }, 'guest') : h('span', { class: 'rating' }, h('span', { class: 'sr-only' }, 'rating '), a.rating.toFixed(2)),
          h('button', { class: 'link', onclick: () => app.logout() }, 'Log out'),
        ]
      : h('a', { href: '#/login' }, 'Sign in'),
  );
  const text = app.quietReconnect ? '' : {
    connecting: 'Connecting…',
    reconnecting: 'Connection lost. Reconnecting…',
    superseded: 'This account signed in somewhere else.',
    online: '',
  }[app.status];
  replace(
    app.banner,
    text
      ? [text, app.status === 'superseded' ? h('button', { onclick: () => app.connect() }, 'Play here') : null]
      : null,
  );
  app.banner.hidden = !text;
  renderInvites(app);
  // How many games wait for this player's move.
  const owing = app.myGames.owing().length;
  app.gamesBadge.textContent = owing ? String(owing) : '';
  app.gamesBadge.hidden = !owing;
  app.gamesBadge.setAttribute('aria-label', `${owing} waiting for your move`);
  for (const link of app.nav.querySelectorAll('a')) {
    const current = (app.route?.name === 'lobby' && link.hash === '#/lobby') || location.hash === link.hash;
    if (current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/**
 * Challenges to this player, with Accept and Decline, on every page but the lobby (which
 * lists them with the challenges sent). Rebuilt only when the list changes, so that the
 * focus stays on a button.
 */
function renderInvites(app) {
  const list = app.route?.name === 'lobby' ? [] : [...app.challengesIn.values()];
  const key = list.map((c) => c.challenge_id).join(',');
  if (app.invites.dataset.key === key) return;
  app.invites.dataset.key = key;
  app.invites.hidden = !list.length;
  replace(app.invites, list.length ? h('ul', { class: 'plain' }, list.map((c) => challengeItem(app, c))) : null);
}

/** One challenge received: who, which game, and the two answers. */
export function challengeItem(app, c) {
  return h('li', { class: 'challenge incoming', dataset: { challengeId: String(c.challenge_id) } },
    h('span', {}, h('strong', {}, c.from.name), ` challenges you: ${fmtGameKind(c.variant, c.time_control)}, ${c.rated ? 'rated' : 'casual'}`),
    h('span', { class: 'row' },
      h('button', { class: 'primary', onclick: () => app.answerChallenge(c, 'accept_challenge'), 'aria-label': `Accept ${c.from.name}'s challenge` }, 'Accept'),
      h('button', { onclick: () => app.answerChallenge(c, 'decline_challenge'), 'aria-label': `Decline ${c.from.name}'s challenge` }, 'Decline')));
}
