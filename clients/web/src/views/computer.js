// "Play the computer": a game at once against a computer opponent the server runs
// (`play_bot`), never rated, in the variant chosen for quick pairing.

import { fmtTimeControl, h, presetOf, PRESETS } from '../dom.js';

const STRENGTHS = [
  { name: 'easy', label: 'Easy', about: 'picks at random' },
  { name: 'medium', label: 'Medium', about: 'goes for the best-looking move' },
  { name: 'hard', label: 'Hard', about: 'mixes its picks so they cannot be read' },
];

/** The section; `readVariant` gives the variant chosen for quick pairing. */
export function computerCard(app, readVariant) {
  const preset = h('select', { id: 'bot-preset', 'aria-label': 'Time control against the computer' },
    PRESETS.map((p) => h('option', { value: p.name }, `${p.label} ${fmtTimeControl(p)}`)));
  const play = (strength) => app.act({ type: 'play_bot', strength, variant: readVariant(), time_control: preset.value });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'computer-title' },
    h('h2', { id: 'computer-title' }, 'Play the computer'),
    h('p', { class: 'muted' }, 'Starts at once, in the variant chosen for quick pairing. Never rated.'),
    h('div', { class: 'row wrap' },
      preset,
      STRENGTHS.map((s) =>
        h('button', { class: 'bot', dataset: { strength: s.name }, title: `The computer ${s.about}`, onclick: () => play(s.name) },
          `Play ${s.label}`))),
  );
}

/**
 * After a game against the computer, a button for another at once (the computer takes
 * no rematch): the same strength, variant and time control. Null for any other game.
 */
export function playAgainButton(app, game) {
  const bot = Object.values(game.info.players).find((p) => p.bot);
  const strength = bot && STRENGTHS.find((s) => bot.name === `bot-${s.name}`);
  const preset = presetOf(game.info.time_control);
  if (!strength || !preset) return null;
  return h('button', {
    class: 'primary',
    id: 'play-again',
    onclick: () => app.act({ type: 'play_bot', strength: strength.name, variant: game.info.variant, time_control: preset.name }),
  }, 'Play again');
}
