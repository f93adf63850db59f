// Composing a move by clicking, for any game, from the move forms of its metadata
// (docs/PROTOCOL.md, section 4.11): place a piece on a cell; drop one or more pieces of
// a chosen colour, then confirm; move a piece by clicking it and then where it goes (or by
// dragging it); pass. What is legal is the server's to say: the position's legal_moves
// when it lists them, check_move otherwise. No rule of any game is written here.

import { confirmButton, h } from "./dom.js";

/** What the legal-move list says, read through the move forms. */
function readLegal(list, forms, names) {
  const out = { place: new Set(), jumps: new Map(), drops: [], pass: false, texts: new Set() };
  if (!list) return null;
  for (const text of list) {
    out.texts.add(text);
    for (const form of forms) {
      if (form.kind === "place" && names.has(text)) out.place.add(text);
      else if (form.kind === "pass" && text === form.text) out.pass = true;
      else if (form.kind === "jump") {
        const [from, to, extra] = text.split(form.join);
        if (extra === undefined && names.has(from) && names.has(to)) {
          if (!out.jumps.has(from)) out.jumps.set(from, new Set());
          out.jumps.get(from).add(to);
        }
      } else if (form.kind === "drop") {
        const drops = text.split(form.join).map((part) => ({ piece: part[0], cell: part.slice(1) }));
        if (drops.every((d) => form.pieces.includes(d.piece) && names.has(d.cell))) {
          out.drops.push(drops);
        }
      }
    }
  }
  return out;
}

const key = (drops) => drops.map((d) => d.piece + d.cell).sort().join(" ");

export class MoveInput {
  /**
   * forms: the game's move forms; colours: the seats' colour names; names: the board's
   * cell names in order; send(text) plays a move; check(text) asks the server whether it
   * is legal ({legal, move, reason}).
   */
  constructor({ forms, colours, names, send, check }) {
    this.forms = Object.fromEntries(forms.map((f) => [f.kind, f]));
    this.colours = colours;
    this.names = names;
    this.nameSet = new Set(names);
    this.send = send;
    this.check = check;
    this.onChange = () => {};
    this.position = null;
    this.active = false;
    this.legal = null;
    this.pending = [];
    this.selected = null;
    this.piece = this.forms.drop ? this.forms.drop.pieces[0] : null;
    this.verdict = null; // {text, legal, reason} of the pending drops
    this.checking = 0;
    this.el = h("div", { class: "move-input" });
    this.status = h("p", { class: "input-status", "aria-live": "polite" });
    this._build();
  }

  _build() {
    const drop = this.forms.drop;
    const parts = [];
    if (drop) {
      this.pieceButtons = drop.pieces.map((letter, seat) => h("button", {
        type: "button", class: "piece-choice", dataset: { seat: String(seat), piece: letter },
        "aria-pressed": String(letter === this.piece),
        onclick: () => this.choose(letter),
      }, h("span", { class: "swatch", dataset: { seat: String(seat) } }), this.colours[seat]));
      this.confirm = h("button", { type: "button", class: "primary confirm", disabled: true,
                                   onclick: () => this._confirmDrops() }, "Play");
      this.clear = h("button", { type: "button", class: "clear", onclick: () => this.reset() },
                     "Clear");
      parts.push(h("div", { class: "piece-choices", role: "group", "aria-label": "piece colour" },
                   this.pieceButtons), h("div", { class: "drop-actions" }, this.confirm, this.clear));
    }
    if (this.forms.pass) {
      this.passButton = confirmButton("Pass", () => this._passConfirmLabel(),
                                      () => this.send(this.forms.pass.text), { class: "pass" });
      parts.push(this.passButton);
    }
    this.el.append(...parts, this.status);
  }

  /** A new position (a Position reply); active: the viewer may move in it now; lastMove:
   *  the text of the move that led to it (to say "your opponent passed"). */
  setPosition(position, active, lastMove = null) {
    const samePly = this.position && position && this.position.ply === position.ply;
    this.position = position;
    this.lastMove = lastMove;
    this.active = Boolean(active && position);
    this.legal = position ? readLegal(position.legal_moves, Object.values(this.forms), this.nameSet) : null;
    if (!samePly) {
      this.pending = [];
      this.selected = null;
      this.verdict = null;
    }
    this._refresh();
  }

  choose(letter) {
    this.piece = letter;
    for (const b of this.pieceButtons || []) b.setAttribute("aria-pressed", String(b.dataset.piece === letter));
    this._refresh();
  }

  reset() {
    this.pending = [];
    this.selected = null;
    this.verdict = null;
    this.status.textContent = "";
    this._refresh();
  }

  say(text) {
    this.status.textContent = text;
  }

  _cell(name) {
    return this.position.cells[this.names.indexOf(name)];
  }

  /** A click on a board cell. */
  click(name) {
    if (!this.active) return;
    const state = this._cell(name);
    const mine = String(this.position.to_move);
    if (this.forms.drop) {
      const at = this.pending.findIndex((d) => d.cell === name);
      if (at >= 0) this.pending.splice(at, 1);
      else if (state === "." && this.pending.length < this.forms.drop.max) {
        this.pending.push({ piece: this.piece, cell: name });
      } else if (state === ".") {
        this.pending[this.pending.length - 1] = { piece: this.piece, cell: name };
      } else return;
      this._judgeDrops();
      return;
    }
    if (this.forms.jump && state === mine && this._jumpsFrom(name).size) {
      this.selected = this.selected === name ? null : name;
      this._refresh();
      return;
    }
    if (this.selected && this._jumpsFrom(this.selected).has(name)) {
      this._play(`${this.selected}${this.forms.jump.join}${name}`);
      return;
    }
    if (this.selected) {
      this.selected = null;
      this._refresh();
    }
    if (this.forms.place && state === ".") {
      if (this.legal && !this.legal.place.has(name)) this._explain(name);
      else this._play(name);
    }
  }

  /** A piece dragged from one cell to another. */
  drag(from, to) {
    if (!this.active || !this.forms.jump) return;
    if (this._jumpsFrom(from).has(to)) this._play(`${from}${this.forms.jump.join}${to}`);
    else if (this._cell(from) === String(this.position.to_move)) {
      this._explain(`${from}${this.forms.jump.join}${to}`);
    }
  }

  _jumpsFrom(name) {
    return (this.legal && this.legal.jumps.get(name)) || new Set();
  }

  _play(text) {
    this.selected = null;
    this.pending = [];
    this.verdict = null;
    this.say("");
    this._refresh();
    this.send(text);
  }

  async _explain(text) {
    const verdict = await this.check(text);
    if (verdict && !verdict.legal && this.position && verdict.ply === this.position.ply) {
      this.say(verdict.reason);
    }
  }

  _dropText() {
    return this.pending.map((d) => d.piece + d.cell).join(this.forms.drop.join);
  }

  async _judgeDrops() {
    this.verdict = null;
    this._refresh();
    if (!this.pending.length) return;
    const text = this._dropText();
    if (this.legal && this.legal.drops.some((d) => key(d) === key(this.pending))) {
      this.verdict = { text, legal: true };
      this._refresh();
      return;
    }
    const ply = this.position.ply;
    this.checking++;
    const verdict = await this.check(text);
    this.checking--;
    if (!verdict || !this.position || this.position.ply !== ply || this._dropText() !== text) return;
    this.verdict = { text, legal: verdict.legal, reason: verdict.reason };
    this._refresh();
  }

  _confirmDrops() {
    if (this.verdict && this.verdict.legal && this.verdict.text === this._dropText()) {
      this._play(this.verdict.text);
    }
  }

  /** What the board should mark for the move being composed. */
  marks() {
    if (!this.active || !this.position) return {};
    const legal = [];
    const movable = [];
    let targets = [];
    if (this.legal) {
      if (this.forms.place) legal.push(...this.legal.place);
      if (this.forms.jump) {
        movable.push(...this.legal.jumps.keys());
        if (this.selected) targets = [...this._jumpsFrom(this.selected)];
      }
      if (this.forms.drop && this.pending.length < this.forms.drop.max) {
        const have = key(this.pending);
        for (const drops of this.legal.drops) {
          if (drops.length !== this.pending.length + 1) continue;
          const extra = drops.find((d) => !this.pending.some((p) => p.cell === d.cell));
          if (extra && extra.piece === this.piece &&
              key(drops.filter((d) => d !== extra)) === have) legal.push(extra.cell);
        }
      }
    }
    const pieces = this.forms.drop ? this.forms.drop.pieces : [];
    const pending = this.pending.map((d) => ({ cell: d.cell, seat: pieces.indexOf(d.piece) }));
    return { legal, movable, selected: this.selected, targets, pending };
  }

  /** Is passing the only legal move (the server listed the legal moves: just the pass)? */
  _onlyPass() {
    return Boolean(this.forms.pass && this.legal && this.legal.pass && this.legal.texts.size === 1);
  }

  /** What a pass now would do, from the server's after_pass (the engine's result of the
   *  state after the pass): "Your opponent passed: passing now ends the game, and you lose
   *  (both passed: ...)."; "" when a pass would not end the game. */
  passConsequence() {
    const after = this.active && this.position && this.position.after_pass;
    if (!after || !this.forms.pass) return "";
    const outcome = after.winner === this.position.to_move ? "win" : "lose";
    const lead = this.lastMove === this.forms.pass.text ? "Your opponent passed: passing" : "Passing";
    const why = after.ending ? ` (${after.ending.text})` : "";
    return `${lead} now ends the game, and you ${outcome}${why}.`;
  }

  _passConfirmLabel() {
    const after = this.active && this.position && this.position.after_pass;
    if (!after) return "Confirm pass";
    return `Confirm pass: you ${after.winner === this.position.to_move ? "win" : "lose"}`;
  }

  _refresh() {
    this.el.classList.toggle("inactive", !this.active);
    const onlyPass = this.active && this._onlyPass();
    const consequence = this.passConsequence();
    if (this.passButton) {
      this.passButton.disabled = !this.active || Boolean(this.legal && !this.legal.pass);
      this.passButton.classList.toggle("only-move", onlyPass);
      this.passButton.classList.toggle("ends-game", Boolean(consequence));
    }
    if (!this.forms.drop && this.active && !this.status.textContent) {
      const how = [];
      // what the legal moves allow, when the server listed them; every form otherwise
      const canPlace = this.forms.place && (!this.legal || this.legal.place.size > 0);
      const canJump = this.forms.jump && (!this.legal || this.legal.jumps.size > 0);
      if (canPlace) how.push("pick a cell marked with a dot");
      if (canJump) how.push("move a ringed piece: pick it, then where it lands (or drag it)");
      const notes = [];
      if (onlyPass) notes.push("Your only legal move is to pass.");
      else if (how.length) notes.push(`Your move: ${how.join(", or ")}.`);
      if (consequence) notes.push(consequence);
      if (notes.length) this.say(notes.join(" "));
    } else if (!this.forms.drop && !this.active) this.say("");
    if (this.forms.drop) {
      const ready = this.verdict && this.verdict.legal && this.verdict.text === this._dropText();
      this.confirm.disabled = !this.active || !ready;
      this.confirm.textContent = this.pending.length ? `Play ${this._dropText()}` : "Play";
      this.clear.disabled = !this.pending.length;
      for (const b of this.pieceButtons) b.disabled = !this.active;
      if (!this.active) this.say("");
      else if (!this.pending.length && onlyPass) {
        this.say(["Your only legal move is to pass.", consequence].filter(Boolean).join(" "));
      } else if (!this.pending.length) {
        this.say([`Choose a colour, then one or ${this.forms.drop.max} empty cells.`, consequence]
          .filter(Boolean).join(" "));
      } else if (!this.verdict) this.say(`${this._dropText()}: checking…`);
      else if (this.verdict.legal) this.say(`${this.verdict.text} is legal: play it, or add a stone.`);
      else this.say(this.verdict.reason || `${this.verdict.text} is not legal`);
    }
    this.onChange();
  }
}
