// A tiny helper for building DOM: h('button', { class: 'x', onclick }, 'text', child).

export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith('svg:');
  const el = svg
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'style' && typeof value === 'object') {
      for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, v);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (!svg && (key === 'value' || key === 'checked' || key === 'disabled')) {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** "1 round", "2 rounds". */
export function plural(n, word, words = `${word}s`) {
  return `${n} ${n === 1 ? word : words}`;
}

/** "1.50" */
export function fmtRating(r) {
  return Number(r).toFixed(2);
}

/** "+0.50" / "-0.27" / "±0.00" */
export function fmtDelta(d) {
  if (Math.abs(d) < 0.005) return '±0.00';
  return `${d > 0 ? '+' : '−'}${Math.abs(d).toFixed(2)}`;
}

/**
 * A deadline (Unix ms) in words: the time alone when it is 12 h away or less, else with its
 * day and date too ("Fri, Dec 4, 8:19 AM"), since a time alone reads as today's.
 */
export function fmtDeadline(ms, now = Date.now()) {
  const at = new Date(ms);
  if (ms - now <= 12 * 3_600_000) return at.toLocaleTimeString();
  return at.toLocaleString(undefined, { weekday: 'short', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
}

export function fmtVariant(v) {
  return `${v.number}/${v.range}/${v.distance}`;
}

export function fmtTimeControl(tc) {
  // Correspondence: the time for each commit and each reveal, in days (or hours).
  if (tc.per_phase_ms) {
    const hours = tc.per_phase_ms / 3_600_000;
    if (hours % 24 === 0) return `${hours / 24} ${hours === 24 ? 'day' : 'days'}`;
    return `${Number.isInteger(hours) ? hours : hours.toFixed(1)} h`;
  }
  const min = tc.initial_ms / 60000;
  const inc = tc.increment_ms / 1000;
  return `${Number.isInteger(min) ? min : min.toFixed(1)}+${inc}`;
}

/** The name of a preset for a time control, if it is one. */
export const PRESETS = [
  { name: 'blitz', label: 'Blitz', initial_ms: 180000, increment_ms: 2000, reveal_ms: 15000 },
  { name: 'rapid', label: 'Rapid', initial_ms: 600000, increment_ms: 5000, reveal_ms: 30000 },
  { name: 'live', label: 'Live', initial_ms: 1200000, increment_ms: 10000, reveal_ms: 60000 },
  { name: 'corr-1d', label: 'Correspondence', initial_ms: 0, increment_ms: 0, reveal_ms: 0, per_phase_ms: 86400000 },
  { name: 'corr-3d', label: 'Correspondence', initial_ms: 0, increment_ms: 0, reveal_ms: 0, per_phase_ms: 259200000 },
  { name: 'corr-7d', label: 'Correspondence', initial_ms: 0, increment_ms: 0, reveal_ms: 0, per_phase_ms: 604800000 },
];

/** The time control of a preset, as the wire carries it (`per_phase_ms` only if it has one). */
export function presetTimeControl(p) {
  const { initial_ms, increment_ms, reveal_ms, per_phase_ms } = p;
  return per_phase_ms ? { initial_ms, increment_ms, reveal_ms, per_phase_ms } : { initial_ms, increment_ms, reveal_ms };
}

export function presetOf(tc) {
  return PRESETS.find(
    (p) => p.initial_ms === tc.initial_ms && p.increment_ms === tc.increment_ms && p.reveal_ms === tc.reveal_ms
      && (p.per_phase_ms ?? null) === (tc.per_phase_ms ?? null),
  );
}

export function fmtGameKind(variant, tc) {
  const preset = presetOf(tc);
  return `${fmtVariant(variant)} · ${preset ? preset.label + ' ' : ''}${fmtTimeControl(tc)}`;
}
