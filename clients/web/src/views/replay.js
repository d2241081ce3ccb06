// A finished game's page: who played what, how it ended, the rating changes, and a replay
// that steps through the rounds on the board (first, previous, next, last: buttons, the
// round list, and Home, ←, →, End on the keyboard). Read from the game's signed
// transcript, whose signature and commitments the page checks (signature.js) and which it
// links for `elementals verify`.

import { Board } from '../board.js';
import { fmtDelta, fmtGameKind, fmtRating, h, plural, replace } from '../dom.js';
import { describeResult, describeRound, isGameId, SEATS } from '../game.js';
import { checkCommitments, checkSignature } from '../signature.js';
import { fetchTranscript } from '../transcript.js';

export function replayView(app, route) {
  const id = route.id;
  const el = h('div', { class: 'replay-page' }, h('p', { class: 'loading' }, 'Loading the game…'));
  let step = null;

  const missing = (text) => replace(el, h('div', { class: 'card', id: 'replay-missing' },
    h('h1', {}, 'Game not found'), h('p', {}, text), h('p', {}, h('a', { href: '#/leaderboard' }, 'Leaderboard'))));

  const onKey = (ev) => {
    if (!step || ev.altKey || ev.ctrlKey || ev.metaKey || ev.target.closest?.('input, textarea, select')) return;
    const to = { Home: 0, ArrowLeft: step.at - 1, ArrowRight: step.at + 1, End: step.last }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    step.go(to);
  };
  document.addEventListener('keydown', onKey);

  if (!isGameId(id)) missing('A game address ends in a game id, like the ones in a player\'s list of games.');
  else {
    fetchTranscript(id)
      .then((t) => {
        if (!t) return missing('No finished game with this id was recorded.');
        step = build(el, app, id, t);
      })
      .catch((e) => missing(e.message));
  }
  return {
    el,
    destroy() {
      document.removeEventListener('keydown', onKey);
    },
  };
}

function build(el, app, id, transcript) {
  const record = transcript.game;
  const p = record.players;
  const viewer = app.account?.name;
  const seat = SEATS.find((s) => p[s].name === viewer) ?? null;
  // Enough of the game model for the shared sentences.
  const game = { info: { players: p, variant: record.variant }, seat, result: record.result, committed: { one: true, two: true } };
  const rounds = record.rounds;
  const board = new Board({ variant: record.variant, players: p });
  const name = (s) => (p[s].guest ? h('span', {}, p[s].name) : h('a', { href: `#/player/${encodeURIComponent(p[s].name)}` }, p[s].name));
  const ratings = transcript.ratings
    ? h('ul', { class: 'plain ratings', 'aria-label': 'Rating changes' }, SEATS.map((s) => {
        const r = transcript.ratings[s];
        return h('li', { dataset: { seat: s } }, `${p[s].name}: ${fmtRating(r.before)} → ${fmtRating(r.after)} (${fmtDelta(r.after - r.before)})`);
      }))
    : h('p', { class: 'muted' }, record.rated ? 'No rating changes.' : 'A casual game: no rating changes.');

  const status = h('p', { id: 'replay-status', 'aria-live': 'polite' });
  const said = h('p', { id: 'replay-round' });
  const button = (label, text) => h('button', { type: 'button', 'aria-label': label }, text);
  // Plain text arrows: the media-control symbols are missing from many fonts.
  const first = button('First: the start', '« First');
  const prev = button('Previous round', '‹ Previous');
  const next = button('Next round', 'Next ›');
  const last = button('Last round', 'Last »');
  const items = rounds.map((r, i) => h('li', {},
    h('button', { type: 'button', class: 'link replay-round', dataset: { step: String(i + 1) } }, describeRound(game, r))));
  const state = { at: 0, last: rounds.length, go: null };
  state.go = (to) => {
    state.at = Math.max(0, Math.min(rounds.length, to));
    const r = state.at ? rounds[state.at - 1] : null;
    board.update(r ? r.positions : new Array(record.variant.number).fill(0), r?.outcome?.moved ?? null, state.at);
    board.el.dataset.step = String(state.at);
    status.textContent = state.at ? `Round ${state.at} of ${rounds.length}` : `The start, before round 1 of ${rounds.length}`;
    said.textContent = r ? describeRound(game, r) : 'Every element at the centre.';
    first.disabled = prev.disabled = state.at === 0;
    next.disabled = last.disabled = state.at === rounds.length;
    items.forEach((li, i) => {
      const b = li.firstChild;
      if (i + 1 === state.at) b.setAttribute('aria-current', 'step');
      else b.removeAttribute('aria-current');
    });
  };
  first.addEventListener('click', () => state.go(0));
  prev.addEventListener('click', () => state.go(state.at - 1));
  next.addEventListener('click', () => state.go(state.at + 1));
  last.addEventListener('click', () => state.go(rounds.length));
  items.forEach((li, i) => li.firstChild.addEventListener('click', () => state.go(i + 1)));

  const ended = new Date(record.ended_at).toLocaleString();
  replace(el, h('section', { class: 'card replay', dataset: { gameId: id } },
    h('h1', {}, name('one'), ' against ', name('two')),
    h('p', { class: 'muted' }, `${fmtGameKind(record.variant, record.time_control)} · ${record.rated ? 'rated' : 'casual'} · ${plural(rounds.length, 'round')} · ended ${ended}`),
    h('section', { class: 'result', 'aria-labelledby': 'replay-result' }, h('h2', { id: 'replay-result' }, describeResult(game)), ratings),
    h('h2', {}, 'Replay'),
    board.el,
    h('div', { class: 'row wrap replay-controls', role: 'group', 'aria-label': 'Step through the rounds (also Home, ←, →, End)' }, first, prev, next, last),
    status,
    said,
    rounds.length ? h('ol', { class: 'plain replay-rounds', 'aria-label': 'Rounds' }, items) : null,
    checked(transcript),
    h('p', { class: 'muted transcript-note' },
      'Signed by the server (key ', h('code', {}, transcript.keyId), '): ',
      h('a', { href: `/api/games/${id}/transcript`, download: `elementals-${id}.json` }, 'the transcript'),
      '; anyone can check it with ', h('code', {}, 'elementals verify'), '.'),
  ));
  state.go(rounds.length);
  return state;
}

/** The signature check's line: "Checking…", then verified or why not. */
function checked(transcript) {
  const line = h('p', { class: 'signature-check', id: 'signature-check', role: 'status' }, 'Checking the server\'s signature…');
  (async () => {
    const signature = await checkSignature(transcript.signed);
    const opened = signature.ok ? await checkCommitments(transcript.game) : signature;
    line.dataset.verified = String(opened.ok);
    line.classList.add(opened.ok ? 'verified' : 'failed');
    line.textContent = opened.ok
      ? '✓ Signature verified: this server signed this game, and every commitment opens with its pick.'
      : `✗ Not verified: ${opened.why}. Do not trust this page's account of the game.`;
  })();
  return line;
}
