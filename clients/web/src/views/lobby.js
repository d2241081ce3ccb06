// The lobby: quick pairing by variant and time control, open seeks, and challenges.

import { fmtGameKind, fmtRating, fmtTimeControl, fmtVariant, h, plural, PRESETS, presetTimeControl, replace } from '../dom.js';
import { challengeItem } from '../shell.js';
import { computerCard } from './computer.js';
import { lobbyCounts } from './counts.js';

export const VARIANTS = [
  { label: 'Classic', number: 5, range: 2, distance: 3 },
  { label: 'Seven', number: 7, range: 3, distance: 4 },
  { label: 'Long seven', number: 7, range: 2, distance: 5 },
  { label: 'Nine', number: 9, range: 4, distance: 5 },
];

const PREFS_KEY = 'elementals.prefs';

function loadPrefs() {
  try {
    return { variant: VARIANTS[0], preset: 'blitz', rated: true, ...JSON.parse(localStorage.getItem(PREFS_KEY)) };
  } catch {
    return { variant: VARIANTS[0], preset: 'blitz', rated: true };
  }
}

function savePrefs(prefs) {
  localStorage.setItem(PREFS_KEY, JSON.stringify(prefs));
}

/** The queue's state in words: who else waits, whom you would meet, for how long. */
function queueWords(s, others, rated, account) {
  const who = others === 0 ? 'No one else waiting' : others === 1 ? '1 other player waiting' : `${others} other players waiting`;
  const parts = [who];
  if (rated && account && !account.guest) {
    const lo = Math.max(1, account.rating - s.rating_window);
    parts.push(`meeting ratings ${fmtRating(lo)}–${fmtRating(account.rating + s.rating_window)} (wider the longer you wait)`);
  }
  parts.push(`${Math.floor(s.waited_ms / 1000)} s`);
  return parts.join(' · ');
}

function variantOf(v) {
  return { number: v.number, range: v.range, distance: v.distance };
}

export function lobbyView(app) {
  const prefs = loadPrefs();
  const guest = () => app.account?.guest;
  const presetTc = (name) => presetTimeControl(PRESETS.find((p) => p.name === name));
  const rated = () => !guest() && prefs.rated;

  // --- the variant chooser, shared by pools, seeks and challenges ---
  const numberIn = h('input', { id: 'v-number', type: 'number', min: '3', max: '99', value: String(prefs.variant.number) });
  const rangeIn = h('input', { id: 'v-range', type: 'number', min: '1', max: '49', value: String(prefs.variant.range) });
  const distanceIn = h('input', { id: 'v-distance', type: 'number', min: '1', max: '20', value: String(prefs.variant.distance) });
  // The limits (PROTOCOL.md section 11), beside the numbers they bound: the range's
  // follows the number of elements.
  const limits = h('p', { class: 'muted variant-limits', id: 'variant-limits' });
  const renderLimits = () => {
    const n = Number(numberIn.value);
    const most = n >= 3 && n <= 99 ? Math.floor((n - 1) / 2) : null;
    rangeIn.max = String(most ?? 49);
    limits.textContent = `Elements 3–99; range 1–${most ?? 'half of one less than the elements'}; distance 1–20.`;
  };
  for (const input of [numberIn, rangeIn, distanceIn]) input.setAttribute('aria-describedby', 'variant-limits');
  const custom = h(
    'div',
    { class: 'custom-variant' },
    h('label', {}, 'Elements ', numberIn),
    h('label', {}, 'Range ', rangeIn),
    h('label', {}, 'Distance ', distanceIn),
    limits,
  );
  renderLimits();
  const variantKey = (v) => fmtVariant(v);
  const select = h(
    'select',
    { id: 'variant', 'aria-label': 'Variant' },
    VARIANTS.map((v) => h('option', { value: variantKey(v) }, `${v.label} ${fmtVariant(v)}`)),
    h('option', { value: 'custom' }, 'Custom…'),
  );
  const known = VARIANTS.find((v) => variantKey(v) === variantKey(prefs.variant));
  select.value = known ? variantKey(known) : 'custom';
  custom.hidden = select.value !== 'custom';
  const readVariant = () => {
    if (select.value !== 'custom') return variantOf(VARIANTS.find((v) => variantKey(v) === select.value));
    return { number: Number(numberIn.value), range: Number(rangeIn.value), distance: Number(distanceIn.value) };
  };
  const onVariant = () => {
    renderLimits();
    custom.hidden = select.value !== 'custom';
    prefs.variant = readVariant();
    savePrefs(prefs);
    renderPools();
  };
  select.addEventListener('change', onVariant);
  // Saved as typed, not only on leaving the field: a reconnection rebuilds this view.
  for (const input of [numberIn, rangeIn, distanceIn]) input.addEventListener('input', onVariant);
  const ratedBox = h('input', { id: 'rated', type: 'checkbox', checked: rated() });
  ratedBox.addEventListener('change', () => {
    prefs.rated = ratedBox.checked;
    savePrefs(prefs);
    renderWaiting();
  });
  const ratedLabel = h('label', { class: 'check' }, ratedBox, ' Rated');

  // --- quick pairing ---
  const pools = h('div', { class: 'pools', role: 'group', 'aria-label': 'Time controls' });
  const renderPools = () => {
    const v = readVariant();
    replace(
      pools,
      PRESETS.map((p) =>
        h(
          'button',
          {
            class: 'pool',
            dataset: { preset: p.name },
            onclick: () => joinPool(p.name),
          },
          // The name read out is the visible text, then the variant.
          h('span', { class: 'pool-tc' }, fmtTimeControl(p)),
          h('span', { class: 'pool-name' }, p.label),
          h('span', { class: 'sr-only' }, `, variant ${fmtVariant(v)}`),
          h('span', { class: 'pool-waiting', hidden: true }),
        ),
      ),
    );
    renderWaiting();
  };
  // Only the counts change as they come: the buttons (and the focus on one) stay.
  const renderWaiting = () => {
    const v = readVariant();
    for (const span of pools.querySelectorAll('.pool-waiting')) {
      const preset = span.closest('.pool').dataset.preset;
      const waiting = counts ? counts.waitingIn(v, preset, rated()) : 0;
      const text = waiting ? `${waiting} waiting` : '';
      if (span.textContent !== text) span.textContent = text;
      span.hidden = !waiting;
    }
  };
  let counts = null;
  const joinPool = async (preset) => {
    const variant = readVariant();
    const reply = await app.act({ type: 'join_pool', variant, time_control: preset, rated: rated() });
    if (reply) {
      app.queue = { variant: reply.variant, time_control: reply.time_control, rated: reply.rated, preset, status: null };
      app.refresh();
    }
  };
  const queuePanel = h('div', { class: 'queue', role: 'status', 'aria-live': 'polite' });
  const renderQueue = () => {
    const q = app.queue;
    queuePanel.hidden = !q;
    if (!q) return replace(queuePanel);
    const s = q.status;
    // `players_waiting` counts this player too.
    const others = s ? Math.max(0, s.players_waiting - 1) : null;
    const key = s ? `${others}|${s.rating_window.toFixed(2)}|${Math.floor(s.waited_ms / 1000)}` : '';
    if (queuePanel.dataset.key === key && queuePanel.childElementCount) return;
    queuePanel.dataset.key = key;
    replace(
      queuePanel,
      h('div', { class: 'spinner', 'aria-hidden': 'true' }),
      h(
        'div',
        {},
        h('strong', {}, 'Looking for an opponent'),
        h('div', { class: 'muted' }, `${fmtGameKind(q.variant, q.time_control)} · ${q.rated ? 'rated' : 'casual'}`),
        s ? h('div', { class: 'muted', id: 'queue-status' }, queueWords(s, others, q.rated, app.account)) : null,
        others === 0
          ? h('p', { class: 'queue-alone', id: 'queue-alone' },
              `Or post this game as a seek: it stays listed for everyone who opens the lobby${q.rated ? '' : ', and anyone can take a casual seek'}.`,
              ' ', h('button', { class: 'link', onclick: seekInstead }, 'Post a seek instead'),
              ' Or play this game against the computer at once, unrated: ',
              h('button', { class: 'link', id: 'bot-instead', onclick: () => botInstead(q) }, 'Play the computer instead'))
          : null,
      ),
      h('button', { onclick: leavePool }, 'Cancel'),
    );
  };
  // The pool is quiet: wait in the open seeks instead, with the same game.
  const seekInstead = async () => {
    const q = app.queue;
    if (!q) return;
    await app.act({ type: 'leave_pool' });
    app.queue = null;
    const reply = await app.act({ type: 'create_seek', variant: q.variant, time_control: q.time_control, rated: q.rated });
    if (reply) app.mySeeks.set(reply.seek.seek_id, reply.seek);
    refreshSeeks();
    app.refresh();
  };
  // Starting the game takes the player out of the pool (the server withdraws them).
  const botInstead = (q) => app.act({ type: 'play_bot', strength: 'medium', variant: q.variant, time_control: q.preset });
  const leavePool = async () => {
    await app.act({ type: 'leave_pool' });
    app.queue = null;
    app.refresh();
  };

  // --- seeks ---
  const seekPreset = h('select', { id: 'seek-preset', 'aria-label': 'Time control' }, PRESETS.map((p) => h('option', { value: p.name }, `${p.label} ${fmtTimeControl(p)}`)));
  seekPreset.value = prefs.preset;
  seekPreset.addEventListener('change', () => {
    prefs.preset = seekPreset.value;
    savePrefs(prefs);
  });
  let seeks = [];
  const seekList = h('div', { class: 'seeks' });
  const refreshSeeks = async () => {
    if (!app.conn?.isOpen || !app.account) return;
    try {
      seeks = (await app.request({ type: 'list_seeks' })).seeks;
    } catch {
      return;
    }
    renderSeeks();
  };
  const renderSeeks = () => {
    if (!seeks.length) return replace(seekList, h('p', { class: 'muted' }, 'No open seeks.'));
    replace(
      seekList,
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', {}, 'Player'), h('th', {}, 'Game'), h('th', {}, ''), h('th', {}, h('span', { class: 'sr-only' }, 'Action')))),
        h(
          'tbody',
          {},
          seeks.map((s) => {
            const mine = s.by.name === app.account?.name;
            return h(
              'tr',
              {},
              h('td', { class: 'seek-by' }, s.by.name, ' ', h('span', { class: 'muted' }, s.by.guest ? 'guest' : fmtRating(s.by.rating))),
              h('td', { class: 'seek-kind' }, fmtGameKind(s.variant, s.time_control)),
              h('td', { class: 'seek-rated' }, s.rated ? 'rated' : 'casual'),
              h(
                'td',
                { class: 'seek-act' },
                mine
                  ? h('button', { onclick: () => cancelSeek(s.seek_id), 'aria-label': 'Cancel your seek' }, 'Cancel')
                  : h('button', { class: 'primary', onclick: () => acceptSeek(s.seek_id), 'aria-label': `Accept ${s.by.name}'s seek` }, 'Accept'),
              ),
            );
          }),
        ),
      ),
    );
  };
  const createSeek = async () => {
    const reply = await app.act({ type: 'create_seek', variant: readVariant(), time_control: presetTc(seekPreset.value), rated: rated() });
    if (reply) {
      app.mySeeks.set(reply.seek.seek_id, reply.seek);
      refreshSeeks();
    }
  };
  const cancelSeek = async (id) => {
    await app.act({ type: 'cancel_seek', seek_id: id });
    app.mySeeks.delete(id);
    refreshSeeks();
  };
  const acceptSeek = async (id) => {
    await app.act({ type: 'accept_seek', seek_id: id });
    refreshSeeks();
  };

  // --- challenges ---
  // The name being typed outlives this view (a reconnection rebuilds it).
  const opponent = h('input', { id: 'opponent', autocomplete: 'off', placeholder: 'name', 'aria-label': 'Opponent name', value: app.drafts.opponent ?? '' });
  opponent.addEventListener('input', () => (app.drafts.opponent = opponent.value));
  const challenge = async (ev) => {
    ev.preventDefault();
    const name = opponent.value.trim();
    if (!name) return;
    const reply = await app.act({ type: 'challenge', opponent: name, variant: readVariant(), time_control: presetTc(seekPreset.value), rated: rated() });
    if (reply) {
      app.challengesOut.set(reply.challenge.challenge_id, reply.challenge);
      opponent.value = '';
      app.drafts.opponent = '';
      app.refresh();
    }
  };
  const challenges = h('div', { class: 'challenges', 'aria-live': 'polite' });
  const renderChallenges = () => {
    const incoming = [...app.challengesIn.values()].map((c) => challengeItem(app, c));
    const outgoing = [...app.challengesOut.values()].map((c) =>
      h(
        'li',
        { class: 'challenge' },
        h('span', {}, `You challenged ${c.to}: ${fmtGameKind(c.variant, c.time_control)} — waiting…`),
        h('button', { onclick: () => app.answerChallenge(c, 'cancel_challenge'), 'aria-label': `Cancel your challenge to ${c.to}` }, 'Cancel'),
      ),
    );
    replace(challenges, incoming.length || outgoing.length ? h('ul', { class: 'plain' }, incoming, outgoing) : null);
  };

  const inGame = h('div', { class: 'in-game' });
  // A live game under way is one click away; correspondence games wait on My games, and
  // a live game may start beside them.
  const renderInGame = () => {
    const g = app.myGameId && app.games.get(app.myGameId);
    const live = g && g.phase !== 'over' && !g.info.time_control?.per_phase_ms;
    const corr = app.myGames.games.filter((x) => x.time_control?.per_phase_ms).length;
    inGame.hidden = !live && !corr;
    replace(inGame,
      live ? h('a', { class: 'button primary', href: `#/game/${g.id}` }, 'You are in a game — return to it') : null,
      !live && corr
        ? h('p', { id: 'corr-waiting' }, `${plural(corr, 'correspondence game')} under way, on `, h('a', { href: '#/games' }, 'My games'),
            '. A live game may start beside them.')
        : null);
  };

  counts = lobbyCounts(app, () => renderWaiting());
  const el = h(
    'div',
    { class: 'lobby' },
    h('h1', { class: 'sr-only' }, 'Play'),
    inGame,
    challenges,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'pair-title' },
      h('h2', { id: 'pair-title' }, 'Quick pairing'),
      counts.el,
      h('div', { class: 'row wrap' }, select, ratedLabel),
      custom,
      pools,
      queuePanel,
    ),
    computerCard(app, readVariant),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'seeks-title' },
      h('div', { class: 'row spread' }, h('h2', { id: 'seeks-title' }, 'Open seeks'), h('button', { class: 'link', onclick: refreshSeeks }, 'Refresh')),
      seekList,
      h('div', { class: 'row wrap' }, seekPreset, h('button', { onclick: createSeek }, 'Create a seek')),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'challenge-title' },
      h('h2', { id: 'challenge-title' }, 'Challenge a player'),
      h('form', { class: 'row wrap', onsubmit: challenge }, opponent, h('button', { type: 'submit' }, 'Challenge')),
      h('p', { class: 'muted' }, 'Uses the variant above and the seek time control.'),
    ),
  );

  const update = () => {
    ratedBox.disabled = !!guest();
    ratedBox.checked = rated();
    renderQueue();
    renderChallenges();
    renderInGame();
  };
  renderPools();
  renderSeeks();
  update();
  refreshSeeks();
  // Seeks are not pushed to everyone: poll while the lobby is open.
  const timer = setInterval(refreshSeeks, 4000);
  return {
    el,
    update,
    destroy: () => {
      clearInterval(timer);
      counts.destroy();
    },
  };
}
