// The game page, /game/ID: play a game, watch it, or replay it once it is over. The board
// is drawn from the server's geometry and every position is the server's (get_position),
// so this page knows no rule of any game: it shows what the server says and sends moves
// composed from the game's move forms.

import { Board } from "./board.js";
import { Clocks } from "./clock.js";
import { confirmButton, fill, h, revealIn } from "./dom.js";
import { changeText, gameLabel, resultText, startingClocks, tookText, userText } from "./format.js";
import { timeControlText } from "./timecontrol.js";
import { MoveInput } from "./moveinput.js";
import { recordJson, recordText } from "./records.js";

const AUTOPLAY_MS = 1000;
const FINGERTIP_PX = 44; // the smallest cell a finger hits reliably, on touch screens
const boards = new Map(); // "game options" -> geometry, for this page's lifetime

export class GameView {
  constructor(app, gameId) {
    this.app = app;
    this.conn = app.conn;
    this.gameId = gameId;
    this.snap = null;
    this.lastSeq = 0;
    this.positions = new Map(); // ply -> position (positions never change once reached)
    this.shownPly = null;
    this.wantPly = null;
    this.follow = true; // show each new move as it comes
    this.loading = false;
    this.autoplay = null;
    this.claimTimer = null;
    this.onKey = (e) => this._key(e);
    this.onResize = () => this._fit();
  }

  // -- life cycle ------------------------------------------------------------------------
  async mount(root) {
    this.root = root;
    fill(root, h("p", { class: "loading" }, "Loading the game…"));
    document.addEventListener("keydown", this.onKey);
    window.addEventListener("resize", this.onResize);
    await this.load();
  }

  unmount() {
    document.removeEventListener("keydown", this.onKey);
    window.removeEventListener("resize", this.onResize);
    if (this.barWatch) this.barWatch.disconnect();
    this._stopAutoplay();
    clearInterval(this.claimTimer);
    if (this.clocks) this.clocks.destroy();
    if (this.snap && this.seat() < 0 && this.snap.status !== "over") {
      this.conn.request("unwatch", { game_id: this.gameId }).catch(() => {});
    }
  }

  async onReconnect() {
    await this.load(); // the server's snapshot: moves and clocks as they are now
  }

  async load() {
    const session = this.app.session;
    const own = session.user && session.activeGames.has(this.gameId);
    let reply;
    try {
      reply = own
        ? await this.conn.request("resume", { game_id: this.gameId, since_seq: 0 })
        : await this.conn.request("watch", { game_id: this.gameId });
    } catch (err) {
      if (err.code === "not_found") {
        fill(this.root, h("section", { class: "card" }, h("h2", { text: "No such game" }),
          h("p", {}, `There is no game ${this.gameId}. `, h("a", { href: "/", "data-link": "" }, "Back to the lobby"))));
      }
      return;
    }
    if (reply.t === "game_state") await this.applySnapshot(reply.game);
    if (!own && this.seat() >= 0 && this.snap.status !== "over") {
      session.activeGames.add(this.gameId); // ours after all: be counted as present
      this.conn.request("resume", { game_id: this.gameId, since_seq: this.lastSeq }).catch(() => {});
    }
  }

  seat() {
    const me = this.app.session.user;
    if (!me || !this.snap) return -1;
    return this.snap.players.findIndex((p) => p.name.toLowerCase() === me.name.toLowerCase());
  }

  // -- the game as the server tells it -----------------------------------------------------
  async applySnapshot(snap) {
    const first = !this.snap || this.snap.game !== snap.game;
    this.snap = { ...snap, moves: [...snap.moves] };
    this.lastSeq = snap.seq;
    this.info = this.conn.game(snap.game) || { name: snap.game, players: ["Player 1", "Player 2"], moves: [], piece: "stone", options: [] };
    if (first || !this.board) { // events that arrive meanwhile wait for the page (onEvent)
      this.building = this._build();
      try { await this.building; } finally { this.building = null; }
    }
    this._renderPlayers();
    this._renderMoves();
    this._renderStatus();
    this._setClocks(snap.clocks_ms);
    const fromHash = parseInt(location.hash.slice(1), 10);
    if (!Number.isNaN(fromHash) && this.shownPly === null) {
      this.follow = fromHash >= snap.ply;
      this.show(Math.min(Math.max(fromHash, 0), snap.ply));
    } else {
      this.show(this.follow || this.shownPly === null ? snap.ply : Math.min(this.shownPly, snap.ply));
    }
  }

  onEvent(msg) {
    if (msg.game_id !== this.gameId && !(msg.t === "game_state" && msg.game.game_id === this.gameId)) return false;
    if (this.building) { // the page is being built: handle it after, in the order received
      this.building.then(() => this.onEvent(msg), () => this.onEvent(msg));
      return true;
    }
    if (msg.t === "game_state") {
      this.applySnapshot(msg.game);
      return true;
    }
    if (msg.t === "rematch_offered" || msg.t === "rematch_ended") {
      if (this.snap) this._rematch(msg);
      return true;
    }
    if (!this.snap || msg.seq === undefined) return true;
    if (msg.seq <= this.lastSeq) return true; // seen already
    if (msg.seq > this.lastSeq + 1) { // missed something: the whole game again
      this.load();
      return true;
    }
    this.lastSeq = msg.seq;
    this.snap.seq = msg.seq;
    switch (msg.t) {
      case "moved": this._moved(msg); break;
      case "game_over": this._over(msg); break;
      case "chat_message": this._chatLine(msg.from, msg.text); break;
      case "opponent_left": this._left(msg); break;
      case "opponent_back": this._back(msg); break;
      default: break;
    }
    return true;
  }

  _moved(msg) {
    const snap = this.snap;
    snap.moves.push({ ply: msg.ply, move: msg.move, by: msg.by, ms_used: msg.ms_used,
                      clock_ms: msg.clocks_ms ? msg.clocks_ms[msg.by] : undefined });
    snap.ply = msg.ply + 1;
    snap.to_move = snap.ply % 2;
    if (snap.status === "waiting" && snap.ply >= 2) snap.status = "playing";
    this._setClocks(msg.clocks_ms);
    this._appendMove(snap.moves[snap.moves.length - 1]);
    this.app.sound.play("move");
    this._renderStatus();
    if (this.follow) this.show(snap.ply);
    else this._renderNav();
  }

  _over(msg) {
    const snap = this.snap;
    snap.status = "over";
    snap.result = msg.winner === undefined ? { reason: msg.reason } : { winner: msg.winner, reason: msg.reason };
    if (msg.ending) snap.result.ending = msg.ending;
    if (msg.rating_changes) snap.rating_changes = msg.rating_changes;
    this.clocks.stop();
    this.app.session.activeGames.delete(this.gameId);
    clearInterval(this.claimTimer);
    this.app.sound.play("end");
    this._renderStatus();
    this._renderPosition();
  }

  _setClocks(clocksMs) {
    const snap = this.snap;
    if (clocksMs) snap.clocks_ms = clocksMs;
    this.clocks.set(snap.clocks_ms || null, snap.status === "playing" ? snap.to_move : null);
  }

  // -- the page ----------------------------------------------------------------------------
  async _build() {
    const snap = this.snap;
    const info = this.info;
    const geometryKey = `${snap.game} ${JSON.stringify(snap.options)}`;
    let geometry = boards.get(geometryKey);
    if (!geometry) {
      geometry = (await this.conn.request("get_board", { game: snap.game, options: snap.options })).geometry;
      boards.set(geometryKey, geometry);
    }
    this.board = new Board(geometry, { colours: info.players, piece: info.piece || "stone" });
    this.board.onClick = (name) => this.input.click(name);
    this.board.onDrag = (from, to) => this.input.drag(from, to);
    this.input = new MoveInput({
      forms: info.moves || [],
      colours: info.players,
      names: geometry.cells.map((c) => c.name),
      send: (text) => this.play(text),
      check: (text) => this.check(text),
    });
    this.input.onChange = () => this._renderMarks();

    this.playerRows = [0, 1].map((seat) => {
      const clock = h("span", { class: "clock", dataset: { seat: String(seat) } }, "–");
      const row = h("div", { class: "player", dataset: { seat: String(seat) } },
        h("span", { class: "swatch", dataset: { seat: String(seat) } }),
        h("span", { class: "colour" }), h("span", { class: "name" }), clock);
      return { row, clock };
    });
    if (this.clocks) this.clocks.destroy();
    this.clocks = new Clocks(this.playerRows.map((r) => r.clock));

    this.title = h("h1", { class: "game-title" });
    this.statusLine = h("p", { class: "game-status", "aria-live": "polite" });
    this.notice = h("div", { class: "game-notice" });
    this.moveList = h("ol", { class: "move-list" });
    this.nav = this._navBar();
    this.facts = h("dl", { class: "facts" });
    this.actions = h("div", { class: "game-actions" });
    this.notation = this._notationForm();
    this.chat = this._chatBox();
    this.downloads = h("div", { class: "downloads" },
      h("button", { type: "button", onclick: () => this._download("txt") }, "Download .txt"),
      h("button", { type: "button", onclick: () => this._download("json") }, "Download .json"));

    this.boardBox = h("div", { class: "board-box" }, this.board.el);
    this.zoomButton = h("button", { type: "button", class: "zoom", hidden: true,
                                    onclick: () => this._toggleZoom() }, "Whole board");
    // the result and the buttons to move sit in one panel: beside the board on a wide
    // screen, in a bar along the bottom of a narrow one (always in view)
    this.playPanel = h("section", { class: "card play-panel" }, this.notice, this.input.el, this.notation, this.actions);
    fill(this.root, h("div", { class: "game-page",
                               dataset: { c0: info.players[0].toLowerCase(), c1: info.players[1].toLowerCase() } },
      h("div", { class: "game-head" }, this.title, this.statusLine, this.zoomButton),
      h("div", { class: "board-column" },
        this.playerRows[1].row, this.boardBox, this.playerRows[0].row),
      h("aside", { class: "side" },
        this.playPanel,
        h("section", { class: "card moves-panel" }, h("h2", { text: "Moves" }), this.nav, this.moveList,
          this.facts, this.downloads),
        this.chat.el)));
    this.boardColumn = this.root.querySelector(".board-column");
    this.page = this.root.querySelector(".game-page");
    this.zoomed = true; // on a touch screen, cells a fingertip wide (see _fit)
    if (this.barWatch) this.barWatch.disconnect();
    this.barWatch = new ResizeObserver(() => this._fit());
    this.barWatch.observe(this.playPanel);
    this._fit();
  }

  /** Size the board to the window: its height, with both players' rows and the bottom bar
   *  (on a narrow screen) in view. Where a finger plays (a narrow or touch screen) and the
   *  board would leave its cells narrower than a fingertip, it keeps them that wide and
   *  scrolls in its box instead ("Whole board" shows it all at once). */
  _fit() {
    const page = this.page;
    if (!page || !page.isConnected) return;
    const bar = getComputedStyle(this.playPanel).position === "fixed" && !this.playPanel.hidden
      ? this.playPanel.offsetHeight : 0;
    page.style.setProperty("--bar", `${bar}px`);
    const bottomRow = this.boardColumn.lastElementChild;
    const top = this.boardBox.getBoundingClientRect().top + window.scrollY;
    const below = bottomRow.offsetHeight + 8 + 16 + bar; // a gap, main's padding, the bar
    const height = Math.max(160, window.innerHeight - top - below);
    page.style.setProperty("--board-h", `${Math.floor(height)}px`);
    page.style.setProperty("--board-w", `${Math.floor(height * this.board.aspect)}px`);
    const column = this.boardColumn;
    const was = column.classList.contains("zoomed");
    // the board's width when it fits: the column's (which is the whole width when zoomed)
    const fits = was ? Math.min(column.clientWidth, height * this.board.aspect) : column.clientWidth;
    const touch = matchMedia("(max-width: 860px), (pointer: coarse)").matches;
    const wide = this.board.widthFor(FINGERTIP_PX);
    const zoomable = touch && wide > fits;
    const zoom = zoomable && this.zoomed;
    this.zoomButton.hidden = !zoomable;
    this.zoomButton.textContent = zoom ? "Whole board" : "Zoom in";
    column.classList.toggle("zoomed", zoom);
    this.board.el.style.minWidth = zoom ? `${wide}px` : "";
    if (zoom && !was) this._centreBoard();
  }

  _toggleZoom() {
    this.zoomed = !this.zoomed;
    this._fit();
  }

  /** On a zoomed board, bring the last move into view if it is out of it. */
  _revealLast() {
    if (!this.boardColumn.classList.contains("zoomed")) return;
    const position = this.positions.get(this.shownPly);
    const last = position && position.last_move_cells && position.last_move_cells[0];
    const cell = last ? this.board.cells.get(last) : null;
    if (!cell) return;
    const r = cell.getBoundingClientRect();
    const outer = this.boardBox.getBoundingClientRect();
    if (r.left < outer.left || r.right > outer.right || r.top < outer.top || r.bottom > outer.bottom) {
      this._centreBoard();
    }
  }

  /** Scroll a zoomed board to the last move (to its middle before any). */
  _centreBoard() {
    const box = this.boardBox;
    const position = this.positions.get(this.shownPly);
    const last = position && position.last_move_cells && position.last_move_cells[0];
    const cell = last ? this.board.cells.get(last) : null;
    const outer = box.getBoundingClientRect();
    let x = box.scrollWidth / 2;
    let y = box.scrollHeight / 2;
    if (cell) {
      const r = cell.getBoundingClientRect();
      x = r.left - outer.left + box.scrollLeft + r.width / 2;
      y = r.top - outer.top + box.scrollTop + r.height / 2;
    }
    box.scrollLeft = x - box.clientWidth / 2;
    box.scrollTop = y - box.clientHeight / 2;
  }

  _orient() {
    // the viewer's own seat at the bottom, as on a real table
    const bottom = this.seat() === 1 ? 1 : 0;
    const column = this.boardColumn;
    column.prepend(this.playerRows[1 - bottom].row);
    column.append(this.playerRows[bottom].row);
  }

  _renderPlayers() {
    const snap = this.snap;
    this.title.textContent = `${gameLabel(this.info, snap.options)} · ${timeControlText(snap.clock)}`;
    document.title = `${this.info.name}: ${snap.players[0].name} – ${snap.players[1].name} · Tessera`;
    for (const seat of [0, 1]) {
      const row = this.playerRows[seat].row;
      row.querySelector(".colour").textContent = this.info.players[seat];
      row.querySelector(".name").textContent = userText(snap.players[seat]);
      row.classList.toggle("me", seat === this.seat());
    }
    this._orient();
  }

  _renderStatus() {
    const snap = this.snap;
    const seat = this.seat();
    const colours = this.info.players;
    let text;
    if (snap.status === "over") text = "Game over"; // the result itself: in the play panel
    else if (seat === snap.to_move) text = "Your move";
    else text = `${colours[snap.to_move]} to move (${snap.players[snap.to_move].name})`;
    if (snap.status === "waiting" && snap.status !== "over") text += " · the clocks start after both first moves";
    this.statusLine.textContent = text;
    this.root.querySelector(".game-page").dataset.status = snap.status;
    for (const s of [0, 1]) {
      this.playerRows[s].row.classList.toggle("to-move", snap.status !== "over" && snap.to_move === s);
    }
    const over = snap.status === "over";
    const playing = seat >= 0 && !over;
    this.notation.hidden = !playing;
    this.input.el.hidden = !playing;
    this.playPanel.hidden = !playing && !over && !this.notice.childElementCount;
    this.chat.form.hidden = seat < 0;
    this.chat.note.hidden = seat >= 0;
    this._renderActions();
    if (over) {
      const changes = snap.rating_changes
        ? h("ul", { class: "rating-changes" }, snap.rating_changes.map((c, i) => h("li", { dataset: { seat: String(i) } },
          h("span", { text: `${snap.players[i].name}: ` }), h("span", { class: "change", text: changeText(c) }))))
        : null;
      this.rematchBox = h("div", { class: "result-actions" });
      this.notice.replaceChildren(h("div", { class: "result" }, h("strong", { text: resultText(snap.result, snap.players, colours) }),
        snap.rated ? h("span", { class: "muted", text: " · rated" }) : null, changes, this.rematchBox));
      this._renderRematch();
    } else if (!this.notice.querySelector(".left")) this.notice.replaceChildren();
    document.title = (playing && seat === snap.to_move ? "● " : "") + document.title.replace(/^● /, "");
    this._fit();
  }

  _renderActions() {
    const snap = this.snap;
    const seat = this.seat();
    const actions = [];
    if (seat >= 0 && snap.status !== "over") {
      if (snap.status === "waiting") {
        actions.push(confirmButton("Abort", "Confirm abort", () => this._act("abort"), { class: "abort" }));
      }
      actions.push(confirmButton("Resign", "Confirm resign", () => this._act("resign"), { class: "resign" }));
    }
    this.actions.replaceChildren(...actions);
    if (this.claimButton && seat >= 0 && snap.status !== "over") this.actions.append(this.claimButton);
  }

  // -- rematch: offered after the game, to the same opponent, colours swapped --------------------
  _rematch(msg) {
    if (msg.game_id !== this.gameId) return;
    if (msg.t === "rematch_offered") this.rematchOffer = msg.by;
    else {
      this.rematchOffer = null;
      if (msg.reason === "lapsed") this.rematchNote = "The rematch offer lapsed: a player left.";
      else if (msg.reason !== "accepted") {
        this.rematchNote = msg.message ? `The rematch was declined: ${msg.message}` : "The rematch was declined.";
      }
    }
    this._renderRematch();
  }

  _renderRematch() {
    const box = this.rematchBox;
    const seat = this.seat();
    if (!box || seat < 0 || this.snap.status !== "over") return;
    const ask = (t) => () => this.conn.request(t, { game_id: this.gameId }).catch((e) => this.app.notify(e.message));
    const offer = this.rematchOffer;
    const other = this.snap.players[1 - seat].name;
    if (offer === undefined || offer === null) {
      fill(box, h("button", { type: "button", class: "primary rematch", onclick: ask("offer_rematch") }, "Rematch"),
        this.rematchNote ? h("span", { class: "muted", text: ` ${this.rematchNote}` }) : null);
    } else if (offer === seat) {
      box.replaceChildren(h("span", { class: "rematch-status", text: `Rematch offered to ${other}… ` }),
        h("button", { type: "button", class: "cancel-rematch", onclick: ask("decline_rematch") }, "Withdraw"));
    } else {
      box.replaceChildren(h("span", { class: "rematch-status", text: `${other} offers a rematch (colours swapped). ` }),
        h("button", { type: "button", class: "primary accept-rematch", onclick: ask("accept_rematch") }, "Accept"),
        h("button", { type: "button", class: "decline-rematch", onclick: ask("decline_rematch") }, "Decline"));
    }
  }

  async _act(what) {
    try {
      await this.conn.request(what, { game_id: this.gameId });
    } catch (err) {
      this.input.say(err.message);
    }
  }

  _left(msg) {
    if (msg.player === this.seat()) return;
    const until = performance.now() + msg.claim_after_ms;
    const who = this.snap.players[msg.player].name;
    const text = h("span", {});
    this.claimButton = confirmButton("Claim the win", "Confirm claim", () => this._act("claim_win"), { class: "claim", disabled: true });
    const update = () => {
      const left = Math.ceil((until - performance.now()) / 1000);
      if (left > 0) text.textContent = `${who} left the game. You may claim the win in ${left} s if they do not come back.`;
      else {
        text.textContent = `${who} left the game.`;
        this.claimButton.disabled = false;
        clearInterval(this.claimTimer);
      }
    };
    clearInterval(this.claimTimer);
    this.claimTimer = setInterval(update, 500);
    update();
    this.notice.replaceChildren(h("div", { class: "left" }, text));
    this._renderActions();
  }

  _back(msg) {
    clearInterval(this.claimTimer);
    this.claimButton = null;
    this.notice.replaceChildren();
    this._renderActions();
  }

  // -- moves and positions -----------------------------------------------------------------
  async play(text) {
    const ply = this.snap.ply;
    try {
      await this.conn.request("move", { game_id: this.gameId, ply, move: text });
    } catch (err) {
      if (err.code === "not_stored") return this._playAgain(text, ply, err.reply.retry_after_ms || 1000);
      if (err.code === "stale_ply") this.load();
      this.input.say(err.message);
    }
  }

  /** The server could not store the move (its database was busy): nothing happened, so it
   * is sent again after the wait the server asks for, while the game still waits for it. */
  _playAgain(text, ply, waitMs) {
    this.input.say(`The server could not store ${text} (its database is busy): sending it again in ${Math.ceil(waitMs / 1000)} s.`);
    setTimeout(() => {
      const snap = this.snap;
      if (snap && snap.status !== "over" && snap.ply === ply && snap.to_move === this.seat()) this.play(text);
    }, waitMs);
  }

  async check(text) {
    const ply = this.shownPly;
    try {
      return await this.conn.request("check_move", { game_id: this.gameId, ply, move: text });
    } catch (err) {
      return { legal: false, reason: err.message, ply };
    }
  }

  /** Show the position after `ply` moves (loads it; one request at a time). */
  show(ply) {
    this.wantPly = ply;
    this.follow = ply >= this.snap.ply;
    this._renderNav();
    this._highlightMove(ply);
    if (this.snap.status === "over" || !this.follow) {
      history.replaceState(null, "", `#${ply}`);
    } else if (location.hash) history.replaceState(null, "", location.pathname);
    if (!this.loading) this._loadPositions();
  }

  async _loadPositions() {
    this.loading = true;
    try {
      while (this.wantPly !== null && this.wantPly !== this.shownPly) {
        const ply = this.wantPly;
        let position = this.positions.get(ply);
        if (!position) {
          position = await this.conn.request("get_position", { game_id: this.gameId, ply });
          this.positions.set(ply, position);
        }
        this.shownPly = ply;
        this._renderPosition();
      }
    } catch (err) {
      this.shownPly = null;
    } finally {
      this.loading = false;
    }
  }

  _renderPosition() {
    const position = this.positions.get(this.shownPly);
    if (!position) return;
    const snap = this.snap;
    this.board.setPosition(position.cells);
    this.board.el.dataset.ply = String(position.ply);
    const active = this.seat() === snap.to_move && snap.status !== "over" && position.ply === snap.ply;
    const led = position.ply > 0 ? snap.moves[position.ply - 1] : null;
    this.input.setPosition(position, active, led ? led.move : null);
    this.board.interactive = active;
    this._renderFacts(position.summary);
    this._renderMarks();
    this._renderClocksAt(position.ply);
    this._revealLast();
  }

  /** The clocks as they stood at `ply`: from the moves' recorded clocks, for a past position
   *  (the live clocks for the current one). */
  _renderClocksAt(ply) {
    const snap = this.snap;
    if (ply >= snap.ply) {
      this.clocks.release();
      return;
    }
    const left = startingClocks(snap.clock) || [null, null];
    for (const m of snap.moves.slice(0, ply)) {
      if (m.clock_ms !== undefined && m.clock_ms !== null) left[m.by] = m.clock_ms;
    }
    this.clocks.hold(left);
  }

  _renderMarks() {
    const position = this.positions.get(this.shownPly);
    if (!position) return;
    this.board.mark({ last: position.last_move_cells, ...this.input.marks() });
  }

  _renderFacts(summary) {
    const colours = this.info.players;
    const rows = [];
    for (const [key, value] of Object.entries(summary || {})) {
      let text = null;
      const pair = Array.isArray(value) && value.length === 2;
      if (pair && value.every((v) => typeof v === "number")) {
        text = `${colours[0]} ${value[0]} · ${colours[1]} ${value[1]}`;
      } else if (pair && value.every((v) => Array.isArray(v) && v.every((n) => typeof n === "number"))) {
        const sizes = (list) => (list.length > 4 ? `${list.slice(0, 4).join("+")}+… (${list.length})` : list.join("+") || "0");
        text = `${colours[0]} ${sizes(value[0])} · ${colours[1]} ${sizes(value[1])}`;
      } else if (typeof value === "number" || typeof value === "string") text = String(value);
      if (text !== null) rows.push(h("dt", { text: key.replace(/_/g, " ") }), h("dd", { text }));
    }
    this.facts.replaceChildren(...rows);
  }

  _renderMoves() {
    this.moveList.replaceChildren();
    for (const m of this.snap.moves) this._appendMove(m);
  }

  _appendMove(m) {
    const li = h("li", { dataset: { ply: String(m.ply + 1), seat: String(m.by) } },
      h("button", { type: "button", onclick: () => this.show(m.ply + 1) },
        h("span", { class: "num", text: `${m.ply + 1}.` }),
        h("span", { class: "swatch", dataset: { seat: String(m.by) } }),
        h("span", { class: "mv", text: m.move }),
        m.ms_used === undefined || m.ms_used === null ? null
          : h("span", { class: "took", dataset: { ms: String(m.ms_used) }, title: "time taken", text: tookText(m.ms_used) })));
    this.moveList.append(li);
    if (this.follow) revealIn(this.moveList, li);
  }

  _highlightMove(ply) {
    for (const li of this.moveList.children) {
      li.classList.toggle("current", Number(li.dataset.ply) === ply);
    }
    const current = this.moveList.querySelector(".current");
    if (current) revealIn(this.moveList, current);
  }

  _navBar() {
    const go = (f) => () => { this._stopAutoplay(); this.show(f()); };
    this.autoplayButton = h("button", { type: "button", class: "autoplay", title: "Autoplay",
                                        onclick: () => this._toggleAutoplay() }, "Autoplay");
    this.navButtons = {
      first: h("button", { type: "button", title: "First (Home)", onclick: go(() => 0) }, "«"),
      prev: h("button", { type: "button", title: "Previous (←)", onclick: go(() => Math.max(0, this.wantPly - 1)) }, "‹"),
      next: h("button", { type: "button", title: "Next (→)", onclick: go(() => Math.min(this.snap.ply, this.wantPly + 1)) }, "›"),
      last: h("button", { type: "button", title: "Last (End)", onclick: go(() => this.snap.ply) }, "»"),
    };
    this.plyLabel = h("span", { class: "ply-label" });
    return h("div", { class: "nav" }, this.navButtons.first, this.navButtons.prev, this.plyLabel,
             this.navButtons.next, this.navButtons.last, this.autoplayButton);
  }

  _renderNav() {
    const ply = this.wantPly ?? 0;
    const end = this.snap.ply;
    this.plyLabel.textContent = `${ply} / ${end}`;
    this.navButtons.first.disabled = this.navButtons.prev.disabled = ply <= 0;
    this.navButtons.next.disabled = this.navButtons.last.disabled = ply >= end;
  }

  _key(e) {
    if (e.target.closest && e.target.closest("input, textarea, select")) return;
    const keys = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in keys) this.show(Math.min(this.snap.ply, Math.max(0, (this.wantPly ?? 0) + keys[e.key])));
    else if (e.key === "Home") this.show(0);
    else if (e.key === "End") this.show(this.snap.ply);
    else if (this.input.forms.drop) {
      const letter = this.input.forms.drop.pieces.find((p) => p.toLowerCase() === e.key.toLowerCase());
      if (letter) this.input.choose(letter);
      else return;
    } else return;
    e.preventDefault();
  }

  _toggleAutoplay() {
    if (this.autoplay) return this._stopAutoplay();
    if (this.wantPly >= this.snap.ply) this.show(0);
    this.autoplayButton.textContent = "Stop";
    this.autoplay = setInterval(() => {
      if (this.wantPly >= this.snap.ply) this._stopAutoplay();
      else this.show(this.wantPly + 1);
    }, AUTOPLAY_MS);
  }

  _stopAutoplay() {
    clearInterval(this.autoplay);
    this.autoplay = null;
    if (this.autoplayButton) this.autoplayButton.textContent = "Autoplay";
  }

  _notationForm() {
    const input = h("input", { type: "text", name: "move", autocomplete: "off", spellcheck: "false",
                               maxlength: "32", "aria-label": "move in notation",
                               placeholder: (this.info.moves || []).map((f) => f.example || f.text).filter(Boolean).join(", ") });
    const form = h("form", { class: "notation", onsubmit: (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      this.play(text);
    } }, input, h("button", { type: "submit" }, "Send"));
    return form;
  }

  _chatBox() {
    const list = h("ul", { class: "chat-lines", "aria-live": "polite" });
    const input = h("input", { type: "text", name: "chat", maxlength: "500", autocomplete: "off",
                               "aria-label": "chat message", placeholder: "Say something" });
    const form = h("form", { class: "chat-form", onsubmit: async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      try {
        await this.conn.request("chat", { game_id: this.gameId, text });
        input.value = "";
      } catch (err) {
        this._chatLine(null, err.message);
      }
    } }, input, h("button", { type: "submit" }, "Send"));
    const note = h("p", { class: "muted", text: "Only the players can chat here." });
    return { el: h("section", { class: "card chat" }, h("h2", { text: "Chat" }), list, form, note), list, form, note };
  }

  _chatLine(from, text) {
    const line = h("li", {}, from ? h("b", { class: "who", text: from }) : null, h("span", { class: "said", text }));
    if (!from) line.classList.add("system");
    this.chat.list.append(line);
    revealIn(this.chat.list, line);
  }

  async _download(kind) {
    const { record } = await this.conn.request("get_game", { game_id: this.gameId });
    const body = kind === "txt" ? recordText(record, this.info) : recordJson(record, this.info);
    const type = kind === "txt" ? "text/plain" : "application/json";
    const url = URL.createObjectURL(new Blob([body], { type }));
    const link = h("a", { href: url, download: `${this.gameId}.${kind}` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}
