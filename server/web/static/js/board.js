// A board drawn in SVG from the geometry the server sends (docs/PROTOCOL.md, section
// 4.12): every cell is its outline around its centre, so squares and hexagons, square,
// hexhex and limping boards are all drawn by the same code, with no game named here.
// Each cell's state is in its data attributes (data-cell, data-state), which is also
// what the tests read.

import { s } from "./dom.js";

const U = 100; // SVG units per unit of the geometry
const LABEL_OUT = 0.8; // labels sit this far beyond the edge cell, in cell steps
const SAME_SPOT = 0.1; // label spots closer than this (in units) are one spot

/** Where labels go: one step beyond the first and last cell of every row and column. */
function labelSpots(cells) {
  const rows = new Map();
  const cols = new Map();
  for (const c of cells) {
    if (!rows.has(c.row)) rows.set(c.row, []);
    if (!cols.has(c.col)) cols.set(c.col, []);
    rows.get(c.row).push(c);
    cols.get(c.col).push(c);
  }
  const beyond = (edge, next, fallback) => {
    const dx = next ? edge.x - next.x : fallback[0];
    const dy = next ? edge.y - next.y : fallback[1];
    return { x: edge.x + dx * LABEL_OUT, y: edge.y + dy * LABEL_OUT, fx: edge.x + dx, fy: edge.y + dy };
  };
  const spots = [];
  for (const line of cols.values()) {
    line.sort((a, b) => a.row - b.row);
    const text = line[0].name.replace(/[0-9]+$/, "");
    const n = line.length;
    spots.push({ ...beyond(line[0], line[1], [0, -1]), text, kind: "col" });
    spots.push({ ...beyond(line[n - 1], line[n - 2], [0, 1]), text, kind: "col" });
  }
  const taken = spots.slice();
  for (const line of rows.values()) {
    line.sort((a, b) => a.col - b.col);
    const text = line[0].name.replace(/^[a-z]+/, "");
    const n = line.length;
    for (const spot of [beyond(line[0], line[1], [-1, 0]), beyond(line[n - 1], line[n - 2], [1, 0])]) {
      // where a column's label would stand on a row's spot (the slanted sides of a hex
      // board), the column keeps it: that row is labelled at its other end
      if (taken.some((t) => Math.hypot(t.fx - spot.fx, t.fy - spot.fy) < SAME_SPOT)) continue;
      spots.push({ ...spot, text, kind: "row" });
    }
  }
  return spots;
}

/** The radius of the largest circle about the centre inside a cell's outline. */
function inscribed(points) {
  let best = Infinity;
  for (let i = 0; i < points.length; i++) {
    const [ax, ay] = points[i];
    const [bx, by] = points[(i + 1) % points.length];
    best = Math.min(best, Math.abs(ax * by - ay * bx) / Math.hypot(bx - ax, by - ay));
  }
  return best;
}

export class Board {
  /**
   * geometry: the server's; colours: the seats' colour names (["Black", "White"]);
   * piece: "stone" or "tile".
   */
  constructor(geometry, { colours, piece }) {
    this.geometry = geometry;
    this.cells = new Map();
    this.onClick = () => {};
    this.onDrag = () => {};
    this.pressed = null;
    const scale = geometry.y_scale || 1;
    const point = (x, y) => [x * U, -y * scale * U];
    const outline = geometry.outline.map(([x, y]) => point(x, y).map((v) => v.toFixed(2)).join(",")).join(" ");
    const radius = inscribed(geometry.outline.map(([x, y]) => [x, y * scale])) * U;
    const xs = geometry.outline.map(([x]) => x * U);
    const ys = geometry.outline.map(([, y]) => y * scale * U);
    this.cellSpan = Math.min(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys));

    const svg = s("svg", {
      class: `board piece-${piece}`,
      role: "img",
      "aria-label": `${geometry.label} board`,
      dataset: { c0: colours[0].toLowerCase(), c1: colours[1].toLowerCase(), kind: geometry.kind },
    });
    const grid = s("g", { class: "cells" });
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    const grow = (x, y, pad) => {
      minX = Math.min(minX, x - pad); maxX = Math.max(maxX, x + pad);
      minY = Math.min(minY, y - pad); maxY = Math.max(maxY, y + pad);
    };
    const piece0 = piece === "tile"
      ? () => s("rect", { class: "piece", x: -radius * 0.8, y: -radius * 0.8, width: radius * 1.6,
                          height: radius * 1.6, rx: radius * 0.18 })
      : () => s("circle", { class: "piece", r: radius * 0.88 });
    for (const cell of geometry.cells) {
      const [x, y] = point(cell.x, cell.y);
      grow(x, y, radius * 1.2);
      const g = s("g", {
        class: "cell",
        transform: `translate(${x.toFixed(2)},${y.toFixed(2)})`,
        dataset: { cell: cell.name, state: "." },
      },
      s("polygon", { class: "bg", points: outline }),
      s("circle", { class: "hint", r: radius * 0.24 }),
      piece0(),
      s("circle", { class: "shine", r: radius * 0.32, cx: -radius * 0.3, cy: -radius * 0.32 }),
      s("circle", { class: "ring", r: radius * 0.72 }),
      s("circle", { class: "halo", r: radius * 0.94 }),
      s("circle", { class: "dot", r: radius * 0.26 }),
      s("title", { text: cell.name }));
      this.cells.set(cell.name, g);
      grid.append(g);
    }
    const labels = s("g", { class: "coords", "aria-hidden": "true" });
    for (const spot of labelSpots(geometry.cells)) {
      const [x, y] = point(spot.x, spot.y);
      grow(x, y, U * 0.3);
      labels.append(s("text", { x: x.toFixed(1), y: y.toFixed(1), class: spot.kind, text: spot.text }));
    }
    const w = maxX - minX;
    const h = maxY - minY;
    svg.setAttribute("viewBox", `${minX.toFixed(1)} ${minY.toFixed(1)} ${w.toFixed(1)} ${h.toFixed(1)}`);
    this.aspect = w / h; // the page sizes the board to fit the screen with it
    this.viewWidth = w;
    svg.append(s("rect", { class: "frame", x: minX, y: minY, width: w, height: h, rx: U * 0.12 }), grid, labels);
    this.el = svg;

    svg.addEventListener("click", (e) => {
      const name = this._cellAt(e.target);
      if (name && this.interactive) this.onClick(name);
    });
    svg.addEventListener("pointerdown", (e) => {
      this.pressed = this.interactive ? this._cellAt(e.target) : null;
    });
    svg.addEventListener("pointerup", (e) => {
      const from = this.pressed;
      this.pressed = null;
      const to = this._cellAt(document.elementFromPoint(e.clientX, e.clientY));
      if (from && to && from !== to && this.interactive) {
        this.dragged = true;
        this.onDrag(from, to);
      }
    });
    svg.addEventListener("click", (e) => {
      if (this.dragged) { // the click that ends a drag is not a click on a cell
        this.dragged = false;
        e.stopImmediatePropagation();
      }
    }, true);
  }

  /** The board's width in CSS pixels at which its cells are `px` wide and high. */
  widthFor(px) {
    return Math.ceil((px * this.viewWidth) / this.cellSpan) + 1;
  }

  _cellAt(node) {
    const g = node && node.closest ? node.closest("[data-cell]") : null;
    return g ? g.dataset.cell : null;
  }

  set interactive(value) {
    this._interactive = Boolean(value);
    this.el.classList.toggle("interactive", this._interactive);
  }

  get interactive() {
    return this._interactive;
  }

  /** cells: one character per cell in the geometry's order: ".", "0" or "1". */
  setPosition(cells) {
    const names = this.geometry.cells;
    for (let i = 0; i < names.length; i++) {
      this.cells.get(names[i].name).dataset.state = cells[i] || ".";
    }
  }

  /** Marks: last (cells of the last move), legal (where a move can go), movable (pieces
   *  that can move), selected (a piece about to move), targets (where it can go),
   *  pending ([{cell, seat}] pieces chosen but not yet played). */
  mark({ last = [], legal = [], movable = [], selected = null, targets = [], pending = [] } = {}) {
    const lastSet = new Set(last);
    const legalSet = new Set(legal);
    const movableSet = new Set(movable);
    const targetSet = new Set(targets);
    const pendingBy = new Map(pending.map((p) => [p.cell, p.seat]));
    for (const [name, g] of this.cells) {
      g.classList.toggle("last", lastSet.has(name));
      g.classList.toggle("legal", legalSet.has(name));
      g.classList.toggle("movable", movableSet.has(name));
      g.classList.toggle("selected", name === selected);
      g.classList.toggle("target", targetSet.has(name));
      if (pendingBy.has(name)) g.dataset.pending = String(pendingBy.get(name));
      else delete g.dataset.pending;
    }
  }
}
