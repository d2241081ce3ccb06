// How to play: the rules of /shared/RULES.md in short, with a round to try on a small
// board (pick for both players, see who beats whom and where the winner moves).

import { Board } from '../board.js';
import { h, replace } from '../dom.js';
import { beats, victims } from '../game.js';

const VARIANT = { number: 5, range: 2, distance: 3 };

function where(p) {
  return p === 0 ? 'the centre' : p > 0 ? `+${p}` : `−${-p}`;
}

/** One round of the example: the sentence, and the move if any. */
export function tryRound(positions, a, b) {
  const d = VARIANT.distance;
  const win = beats(VARIANT, a, b) ? 'one' : beats(VARIANT, b, a) ? 'two' : null;
  if (!win) {
    const why = a === b ? 'Both picked the same element' : `Neither ${a} nor ${b} beats the other`;
    return { text: `${why}: a tie, nothing moves.`, move: null, winner: null };
  }
  const element = win === 'one' ? a : b;
  const loser = win === 'one' ? b : a;
  const from = positions[element - 1];
  const to = from + (win === 'one' ? 1 : -1);
  const side = win === 'one' ? 'right, toward +' : 'left, toward −';
  let text = `${element} beats ${loser}: player ${win}'s ${element} moves one square ${side}${d}, from ${where(from)} to ${where(to)}.`;
  const winner = Math.abs(to) >= d ? win : null;
  if (winner) text += ` It reached the edge: player ${win} wins the game.`;
  return { text, move: { element, by: win, from, to }, winner };
}

export function howView() {
  const board = new Board({ variant: VARIANT, players: { one: { name: 'Player one' }, two: { name: 'Player two' } } });
  let positions = new Array(VARIANT.number).fill(0);
  let rounds = 0;
  let over = false;
  const choice = { one: 3, two: 2 };
  const outcome = h('p', { class: 'try-outcome', id: 'try-outcome', role: 'status' }, 'Pick an element for each player, then play the round.');
  const group = (seat) => {
    const name = `try-${seat}`;
    return h('fieldset', { class: `try-picks seat-${seat}` },
      h('legend', {}, `Player ${seat} picks`),
      Array.from({ length: VARIANT.number }, (_, i) => {
        const e = i + 1;
        const input = h('input', { type: 'radio', name, id: `${name}-${e}`, value: String(e), checked: choice[seat] === e });
        input.addEventListener('change', () => (choice[seat] = e));
        return h('label', { for: `${name}-${e}`, class: 'try-pick' }, input, ` ${e}`);
      }));
  };
  const playButton = h('button', { class: 'primary', id: 'try-play', onclick: () => playRound() }, 'Play the round');
  const reset = h('button', { onclick: () => startOver() }, 'Start over');
  const playRound = () => {
    if (over) return;
    const r = tryRound(positions, choice.one, choice.two);
    rounds += 1;
    if (r.move) positions = positions.map((p, i) => (i === r.move.element - 1 ? r.move.to : p));
    board.update(positions, r.move, String(rounds));
    over = !!r.winner;
    playButton.disabled = over;
    replace(outcome, `Round ${rounds}: ${r.text}`);
  };
  const startOver = () => {
    positions = new Array(VARIANT.number).fill(0);
    rounds = 0;
    over = false;
    playButton.disabled = false;
    board.update(positions, null, null);
    replace(outcome, 'Pick an element for each player, then play the round.');
  };
  board.update(positions, null, null);

  const beatsList = Array.from({ length: VARIANT.number }, (_, i) => h('li', {}, `${i + 1} beats ${victims(VARIANT, i + 1).join(' and ')}`));
  const el = h('article', { class: 'how card' },
    h('h1', {}, 'How to play'),
    h('p', { class: 'lede' }, 'Two players, one track, a handful of numbered elements. Each round both pick an element at the same moment; the winning pick moves one square toward the loser\'s side. The first element to reach an edge wins the game for the player on the other side.'),
    h('h2', {}, 'Who beats whom'),
    h('p', {}, 'A game has three numbers: how many elements there are (N), how far down each one beats (the range R), and how far an element must travel to win (the distance D). The classic game is 5/2/3. An element beats the R elements just below it, counting round from 1 back to N. With 5/2:'),
    h('ul', { class: 'beats-list' }, beatsList),
    h('p', {}, 'If neither pick beats the other (the same element, say), the round is a tie and nothing moves.'),
    h('h2', {}, 'The track'),
    h('p', {}, 'Every element has one place on a shared track from −D to +D; all start in the centre, and they belong to neither player. When player one\'s pick wins, it moves one square right (+1); when player two\'s wins, it moves one square left (−1). An element reaching +D wins the game for player one; one reaching −D, for player two. So any element can win for either player: what counts is who last pushed it.'),
    h('section', { class: 'try', 'aria-labelledby': 'try-title' },
      h('h2', { id: 'try-title' }, 'Try a round'),
      h('div', { class: 'try-choices' }, group('one'), group('two')),
      h('div', { class: 'row wrap' }, playButton, reset),
      outcome,
      board.el),
    h('h2', {}, 'Picking at the same moment'),
    h('p', {}, 'Neither player may see the other\'s pick first. So a pick is first locked in (your browser sends a fingerprint of it, which hides it) and only shown once both are locked in; the server checks that it matches. You just click a number; the page does the rest.'),
    h('h2', {}, 'Time'),
    h('ul', {},
      h('li', {}, 'Each player has a bank of time, which runs only while it is their turn to pick. Every round played adds a few seconds to both banks. A bank that runs out loses the game.'),
      h('li', {}, 'In round 1 no bank runs: instead both players must pick within 30 seconds of the start, or the game is called off and nobody\'s rating changes.'),
      h('li', {}, 'A player whose connection drops keeps the seat. If they stay away while it is their move, the opponent may claim the win after a waiting time (30 s in a blitz game).')),
    h('h2', {}, 'Ratings'),
    h('p', {}, 'Everyone starts at 1.00. A rated game moves both ratings by the same amount: half a point between equals, less when the favourite wins, more when the underdog does; nobody falls below 1.00. Draws, called-off games and games with a guest change no rating.'),
    h('p', {}, h('a', { class: 'button primary', href: '#/lobby' }, 'Play a game'), ' ', h('a', { class: 'button', href: '#/watch' }, 'Watch a game')),
  );
  return { el };
}
