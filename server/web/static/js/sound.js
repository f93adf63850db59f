// Sounds for a move and for the end of a game, synthesised with the Web Audio API (no
// file to fetch), and the header's switch that turns them off; the choice is kept in the
// browser's storage.

import { h, s } from "./dom.js";

const KEY = "tessera.sound";
const TONES = {
  // [frequency (Hz), start (s), length (s)]: a short knock, and a rising chime
  move: [[520, 0, 0.07]],
  end: [[523, 0, 0.16], [659, 0.14, 0.16], [784, 0.28, 0.32]],
};

function remembered() {
  try {
    return localStorage.getItem(KEY) !== "off";
  } catch (err) {
    return true; // storage refused (a private window): on, for this page's life
  }
}

export class Sound {
  constructor() {
    this.on = remembered();
    this.context = null;
    this.button = h("button", { type: "button", class: "sound", onclick: () => this.toggle() });
    this._label();
    // browsers start audio only after a gesture: make the context with the first one
    const unlock = () => this._context();
    document.addEventListener("pointerdown", unlock, { once: true });
    document.addEventListener("keydown", unlock, { once: true });
  }

  toggle() {
    this.on = !this.on;
    try {
      localStorage.setItem(KEY, this.on ? "on" : "off");
    } catch (err) {
      // not kept: the switch still holds for this page
    }
    this._label();
  }

  /** Play "move" or "end" (if the sound is on and the browser can). */
  play(name) {
    if (!this.on) return;
    const context = this._context();
    if (!context) return;
    const now = context.currentTime;
    for (const [frequency, start, length] of TONES[name]) {
      const osc = context.createOscillator();
      const gain = context.createGain();
      osc.type = "sine";
      osc.frequency.value = frequency;
      gain.gain.setValueAtTime(0.0001, now + start);
      gain.gain.exponentialRampToValueAtTime(0.25, now + start + 0.01);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + start + length);
      osc.connect(gain).connect(context.destination);
      osc.start(now + start);
      osc.stop(now + start + length + 0.02);
    }
  }

  _context() {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return null;
    if (!this.context) this.context = new Context();
    if (this.context.state === "suspended") this.context.resume().catch(() => {});
    return this.context;
  }

  _label() {
    const lines = this.on ? "M15.5 8.5a5 5 0 0 1 0 7M18.5 5.5a9 9 0 0 1 0 13" : "M16 9l6 6M22 9l-6 6";
    this.button.replaceChildren(s("svg", { viewBox: "0 0 24 24", width: "20", height: "20", "aria-hidden": "true" },
      s("path", { d: "M3 9h4l5-4v14l-5-4H3z", fill: "currentColor" }),
      s("path", { d: lines, fill: "none", stroke: "currentColor", "stroke-width": "2", "stroke-linecap": "round" })));
    this.button.setAttribute("aria-pressed", String(this.on));
    this.button.setAttribute("aria-label", this.on ? "Sound on (click to turn off)" : "Sound off (click to turn on)");
    this.button.title = this.on ? "Sound on" : "Sound off";
  }
}
