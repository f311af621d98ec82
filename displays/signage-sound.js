// signage-sound.js — the optional sound cue of a floor screen: a short chime for each draw
// winner revealed, a fanfare for a RAPS jackpot won, a rising tone when a multiplier opens.
// Off unless the screen's URL asks for it (`&sound=on`): with it off, nothing here makes
// an audio context, so a screen never plays anything by surprise. Tones are synthesised
// (Web Audio), no file is fetched. A browser that keeps audio until someone touches the
// screen gets it at the first touch (a kiosk browser: --autoplay-policy=no-user-gesture-required).

const VOLUME = 0.18;
const TUNES = {
  // [frequency Hz, start s, length s]
  winner: [[784, 0, 0.18], [1047, 0.16, 0.35]],
  jackpot: [[523, 0, 0.16], [659, 0.14, 0.16], [784, 0.28, 0.16], [1047, 0.42, 0.6], [784, 0.62, 0.12], [1047, 0.74, 0.7]],
  multiplier: [[440, 0, 0.14], [660, 0.12, 0.14], [880, 0.24, 0.4]],
};

export class SoundCues {
  constructor(enabled) {
    this.enabled = Boolean(enabled);
    this.context = null;
    this.played = 0;
    if (this.enabled) {
      // one listener for the life of the page: a touch unlocks audio where it is held back
      document.addEventListener('pointerdown', () => this.unlock(), { once: true });
    }
  }

  unlock() {
    const context = this.audio();
    if (context && context.state === 'suspended') context.resume().catch(() => {});
  }

  audio() {
    if (!this.enabled) return null;
    if (!this.context) {
      const Context = window.AudioContext || window.webkitAudioContext;
      if (!Context) return null;
      this.context = new Context();
    }
    return this.context;
  }

  /** Play the cue of `kind` ('winner', 'jackpot', 'multiplier') if sound is on. */
  play(kind) {
    const tune = TUNES[kind];
    const context = this.audio();
    if (!tune || !context) return;
    if (context.state === 'suspended') context.resume().catch(() => {});
    const start = context.currentTime + 0.02;
    for (const [frequency, at, length] of tune) {
      const tone = context.createOscillator();
      const gain = context.createGain();
      tone.type = 'triangle';
      tone.frequency.value = frequency;
      gain.gain.setValueAtTime(0, start + at);
      gain.gain.linearRampToValueAtTime(VOLUME, start + at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.001, start + at + length);
      tone.connect(gain).connect(context.destination);
      tone.start(start + at);
      tone.stop(start + at + length + 0.05);
    }
    this.played += 1;
    document.body.dataset.cues = String(this.played);
  }
}
