// Alerts for a player whose attention is elsewhere: a short beep (WebAudio, no sound files)
// and the tab's title when a round starts for them or their game ends. One setting turns
// both off; it is kept in localStorage.

const KEY = 'elementals.alerts';
const TITLE = 'Elementals';

// [frequency Hz, start s, length s] of each sound.
const SOUNDS = {
  round: [[660, 0, 0.12]],
  result: [[523, 0, 0.14], [784, 0.16, 0.22]],
};

export class Alerts {
  constructor() {
    this.on = localStorage.getItem(KEY) !== 'off';
    this.ctx = null;
    // The sounds asked for, for the tests (headless browsers play nothing audible).
    this.played = [];
    // Browsers let a page make sound only after the person has interacted with it.
    const unlock = () => this.unlock();
    document.addEventListener('pointerdown', unlock, { capture: true });
    document.addEventListener('keydown', unlock, { capture: true });
  }

  set(on) {
    this.on = on;
    localStorage.setItem(KEY, on ? 'on' : 'off');
  }

  unlock() {
    if (!this.ctx && typeof AudioContext === 'function') {
      try {
        this.ctx = new AudioContext();
      } catch {
        return;
      }
    }
    if (this.ctx?.state === 'suspended') this.ctx.resume().catch(() => {});
  }

  beep(kind) {
    if (!this.on) return;
    this.played.push(kind);
    const ctx = this.ctx;
    if (!ctx || ctx.state !== 'running') return;
    for (const [freq, at, len] of SOUNDS[kind]) {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      const t = ctx.currentTime + at;
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, t);
      gain.gain.exponentialRampToValueAtTime(0.15, t + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, t + len);
      osc.connect(gain).connect(ctx.destination);
      osc.start(t);
      osc.stop(t + len + 0.02);
    }
  }

  /**
   * The tab's title: `text` before the name while alerts are on, else the name alone; with
   * `(n) ` before it while `owing` games wait for this player's move.
   */
  title(text, owing = 0) {
    const count = owing > 0 && this.on ? `(${owing}) ` : '';
    const want = count + (text && this.on ? `${text} · ${TITLE}` : TITLE);
    if (document.title !== want) document.title = want;
  }
}
