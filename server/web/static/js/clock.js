// Both players' clocks, counting down from the server's figures: the time left when the
// last snapshot or move arrived, minus the time since, for the player to move only. The
// server is the judge of time; this only shows it smoothly between its figures.

import { clockText } from "./format.js";

export class Clocks {
  /** displays: the two elements to write seat 0's and seat 1's time into. */
  constructor(displays) {
    this.displays = displays;
    this.left = null; // [ms, ms] at `since`, or null without a clock
    this.since = 0;
    this.running = null; // the seat whose clock runs, or null
    this.shown = ["", ""];
    this.frame = null;
    this.held = null; // readings shown instead of the live ones (a past position's)
  }

  /** Show fixed readings ([ms, ms], or null: no clock) until release(): the clocks as they
   *  were at a past position. The live clocks keep counting meanwhile. */
  hold(readings) {
    this.held = readings ? [readings[0], readings[1]] : [null, null];
    this._draw();
  }

  release() {
    if (this.held === null) return;
    this.held = null;
    this._draw();
  }

  /** The server's figures: times left (or null: no clock) and whose clock runs now. */
  set(left, running) {
    this.left = left ? [left[0], left[1]] : null;
    this.since = performance.now();
    this.running = left ? running : null;
    this._draw();
    if (this.running !== null && this.frame === null) this._tick();
  }

  stop() {
    if (this.left && this.running !== null) {
      this.left[this.running] = this.now(this.running);
    }
    this.running = null;
    this._draw();
  }

  /** Seat's time left at this moment. */
  now(seat) {
    if (!this.left) return null;
    const spent = seat === this.running ? performance.now() - this.since : 0;
    return Math.max(0, this.left[seat] - spent);
  }

  _tick() {
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this._draw(false);
      if (this.running !== null) this._tick();
    });
  }

  _draw(force = true) {
    for (const seat of [0, 1]) {
      const el = this.displays[seat];
      const ms = this.held ? this.held[seat] : this.now(seat);
      const text = ms === null ? "–" : clockText(ms);
      if (text === this.shown[seat] && !force) continue;
      el.textContent = text;
      this.shown[seat] = text;
      el.classList.toggle("running", !this.held && seat === this.running);
      el.classList.toggle("low", ms !== null && ms < 10000);
      if (ms === null) delete el.dataset.ms;
      else el.dataset.ms = String(Math.floor(ms));
    }
  }

  destroy() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.running = null;
  }
}
