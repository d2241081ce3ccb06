// "Play the computer": a game at once against a computer opponent the server runs
// (`play_bot`), never rated, in the variant chosen for quick pairing.

import { h, PRESETS } from '../dom.js';

const STRENGTHS = [
  { name: 'easy', label: 'Easy', about: 'picks at random' },
  { name: 'medium', label: 'Medium', about: 'goes for the best-looking move' },
  { name: 'hard', label: 'Hard', about: 'mixes its picks so they cannot be read' },
];

/** The section; `readVariant` gives the variant chosen for quick pairing. */
export function computerCard(app, readVariant) {
  const preset = h('select', { id: 'bot-preset', 'aria-label': 'Time control against the computer' },
    PRESETS.map((p) => h('option', { value: p.name }, `${p.label} ${p.initial_ms / 60000}+${p.increment_ms / 1000}`)));
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
