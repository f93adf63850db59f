// The lobby, /: create a seek or challenge (game, options with the values the server
// allows, clock), accept someone's seek, play the computer (the bots online), and find
// games to watch or replay. Names and every other text from the server go in as text.

import { fill, h } from "./dom.js";
import { ago, gameLabel, ratingsText, resultText, userText } from "./format.js";
import { timeControlText } from "./timecontrol.js";

const REFRESH_GAMES_MS = 10000;
const CLOCK_KINDS = [
  ["fischer", "Minutes + increment"],
  ["per_move", "Seconds a move"],
  ["correspondence", "Days a move"],
  ["unlimited", "No clock"],
];

export class LobbyView {
  constructor(app) {
    this.app = app;
    this.conn = app.conn;
    this.seeks = new Map();
    this.players = new Map();
    this.moreSeeks = 0;
    this.morePlayers = 0;
    this.nextCursor = null;  // where the lobby's next page starts (lobby_page)
    this.timer = null;
  }

  async mount(root) {
    this.root = root;
    document.title = "Tessera";
    this._build();
    await this.subscribe();
    this.refreshGames();
    this.timer = setInterval(() => this.refreshGames(), REFRESH_GAMES_MS);
  }

  unmount() {
    clearInterval(this.timer);
    this.conn.request("lobby_unsubscribe").catch(() => {});
  }

  async onReconnect() {
    await this.subscribe();
    this.refreshGames();
  }

  async subscribe() {
    const lobby = await this.conn.request("lobby_subscribe");
    this.seeks = new Map();
    this.players = new Map();
    this._add(lobby);
  }

  /** The lobby's next page ("More"): added to what is listed. */
  async more() {
    if (!this.nextCursor) return;
    try {
      this._add(await this.conn.request("lobby_page", { cursor: this.nextCursor }));
    } catch (err) {
      this.formStatus.textContent = err.message;  // e.g. rate_limited: try again
    }
  }

  // a busy lobby comes a page at a time: the server counts the seeks and players after it
  _add(page) {
    for (const s of page.seeks) this.seeks.set(s.seek_id, s);
    for (const p of page.players) this.players.set(p.name, p);
    this.moreSeeks = page.more_seeks || 0;
    this.morePlayers = page.more_players || 0;
    this.nextCursor = page.next_cursor || null;
    this.renderSeeks();
    this.renderPlayers();
  }

  _moreButton() {
    return h("button", { type: "button", class: "more", onclick: () => this.more() }, "More");
  }

  onEvent(msg) {
    switch (msg.t) {
      case "seek_added":  // the newest: while pages are left, it comes with the last of them
        if (this.nextCursor) this.moreSeeks += 1; else this.seeks.set(msg.seek.seek_id, msg.seek);
        this.renderSeeks(); return true;
      case "seek_removed":
        if (!this.seeks.delete(msg.seek_id) && this.moreSeeks) this.moreSeeks -= 1;  // one not listed
        this.renderSeeks(); return true;
      case "player_online":
        if (this.nextCursor && !this.players.has(msg.user.name)) this.morePlayers += 1;
        else this.players.set(msg.user.name, msg.user);
        this.renderPlayers(); return true;
      case "player_offline":
        if (!this.players.delete(msg.name) && this.morePlayers) this.morePlayers -= 1;
        this.renderPlayers(); return true;
      case "moved": case "game_over": // one of one's own games: whose move it is now
        if (!this.app.session.activeGames.has(msg.game_id)) return false;
        if (msg.t === "game_over") this.app.session.activeGames.delete(msg.game_id);
        this.renderMine();
        return true;
      default: return false;
    }
  }

  onSession() {
    this.renderSeeks();
    this.renderPlayers();
    this.renderMine();
  }

  // -- the form ----------------------------------------------------------------------------
  _build() {
    const games = this.conn.welcome.games;
    this.gameSelect = h("select", { name: "game", "aria-label": "game", onchange: () => this._renderOptions() },
      games.map((g) => h("option", { value: g.key, text: g.name })));
    this.optionBox = h("div", { class: "options" });
    this.summary = h("p", { class: "game-summary muted" });
    this.clockKind = h("select", { name: "clock", "aria-label": "clock", onchange: () => this._renderClock() },
      CLOCK_KINDS.map(([k, label]) => h("option", { value: k, text: label })));
    this.clockBox = h("div", { class: "clock-fields" });
    this.colour = h("select", { name: "colour", "aria-label": "your colour" });
    this.rated = h("input", { type: "checkbox", name: "rated" });
    this.formStatus = h("p", { class: "form-status", "aria-live": "polite" });
    const form = h("form", { class: "card new-game", onsubmit: (e) => { e.preventDefault(); this.seek(); } },
      h("h2", { text: "New game" }),
      h("label", {}, "Game ", this.gameSelect), this.summary, this.optionBox,
      h("label", {}, "Clock ", this.clockKind), this.clockBox,
      h("label", {}, "Your colour (challenges) ", this.colour),
      h("label", { class: "rated", title: "Rated games change both players' ratings; guests and games without a clock play casual" },
        this.rated, " Rated"),
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Seek an opponent")),
      this.formStatus);
    this.botList = h("ul", { class: "bots" });
    this.seekTable = h("tbody");
    this.playerList = h("ul", { class: "players" });
    this.mine = h("ul", { class: "my-games" });
    this.liveList = h("ul", { class: "game-links" });
    this.doneList = h("ul", { class: "game-links" });
    fill(this.root, h("div", { class: "lobby" },
      h("div", { class: "lobby-main" },
        form,
        h("section", { class: "card computer" }, h("h2", { text: "Play the computer" }),
          h("p", { class: "muted", text: "With the game and clock chosen above." }), this.botList),
        h("section", { class: "card" }, h("h2", { text: "Open seeks" }),
          h("table", { class: "seeks" }, h("thead", {}, h("tr", {},
            ["Player", "Game", "Clock", ""].map((t) => h("th", { text: t })))), this.seekTable))),
      h("div", { class: "lobby-side" },
        h("section", { class: "card" }, h("h2", { text: "Your games" }), this.mine),
        h("section", { class: "card" }, h("h2", { text: "Online" }), this.playerList),
        h("section", { class: "card" }, h("h2", { text: "Games in progress" }), this.liveList),
        h("section", { class: "card" }, h("h2", { text: "Finished games" }), this.doneList))));
    this._renderOptions();
    this._renderClock();
  }

  _info() {
    return this.conn.game(this.gameSelect.value);
  }

  _renderOptions() {
    const info = this._info();
    this.summary.textContent = info.summary;
    this.optionBox.replaceChildren(...info.options.map((o) => {
      const input = o.type === "int"
        ? h("input", { type: "number", name: o.name, min: o.min, max: o.max, value: o.default, required: true })
        : h("select", { name: o.name }, o.choices.map((c) => h("option", { value: c, text: c, selected: c === o.default })));
      input.dataset.option = o.name;
      return h("label", { title: o.doc }, `${o.name} `, input, h("span", { class: "muted", text: ` ${o.doc}` }));
    }));
    this.colour.replaceChildren(h("option", { value: "random", text: "random" }),
      ...info.players.map((name, seat) => h("option", { value: String(seat), text: `${name} (${seat ? "second" : "first"})` })));
  }

  _renderClock() {
    const kind = this.clockKind.value;
    const num = (name, value, min, max, label) => h("label", {}, `${label} `,
      h("input", { type: "number", name, value, min, max, step: "any", required: true }));
    const fields = {
      fischer: [num("minutes", 5, 0.5, 1440, "Minutes"), num("increment", 3, 0, 3600, "Increment (s)")],
      per_move: [num("seconds", 30, 1, 86400, "Seconds a move")],
      correspondence: [num("days", 3, 1, 30, "Days a move")],
      unlimited: [],
    }[kind];
    this.clockBox.replaceChildren(...fields);
  }

  /** The game, options and clock the form describes. */
  offer() {
    const info = this._info();
    const options = {};
    for (const input of this.optionBox.querySelectorAll("[data-option]")) {
      const spec = info.options.find((o) => o.name === input.dataset.option);
      options[spec.name] = spec.type === "int" ? Number(input.value) : input.value;
    }
    const value = (name) => Number(this.clockBox.querySelector(`[name=${name}]`).value);
    const clock = { kind: this.clockKind.value };
    if (clock.kind === "fischer") {
      clock.base_ms = Math.round(value("minutes") * 60000);
      clock.increment_ms = Math.round(value("increment") * 1000);
    } else if (clock.kind === "per_move") clock.per_move_ms = Math.round(value("seconds") * 1000);
    else if (clock.kind === "correspondence") clock.days_per_move = Math.round(value("days"));
    const offer = { game: info.key, options, clock };
    if (this.rated.checked) offer.rated = true;
    return offer;
  }

  async seek() {
    try {
      await this.app.session.ensure();
      await this.conn.request("seek", this.offer());
      this.formStatus.textContent = "Seek open: waiting for an opponent.";
    } catch (err) {
      this.formStatus.textContent = err.message;
    }
  }

  async challenge(name) {
    try {
      await this.app.session.ensure();
      const colour = this.colour.value === "random" ? "random" : Number(this.colour.value);
      const offer = { to: name, ...this.offer(), color: colour };
      const reply = await this.conn.request("challenge", offer);
      this.app.challenges.sent(reply.challenge_id, offer);
      this.formStatus.textContent = `Challenge sent to ${name}.`;
    } catch (err) {
      this.formStatus.textContent = err.message;
    }
  }

  // -- lists -------------------------------------------------------------------------------
  renderSeeks() {
    const me = this.app.session.user;
    const rows = [...this.seeks.values()].map((seek) => {
      const own = me && seek.user.name === me.name;
      const button = own
        ? h("button", { type: "button", onclick: () => this.conn.request("cancel_seek", { seek_id: seek.seek_id }).catch(() => {}) }, "Cancel")
        : h("button", { type: "button", class: "primary", onclick: () => this.accept(seek) }, "Play");
      return h("tr", { dataset: { seek: String(seek.seek_id) } },
        h("td", { class: "who", text: userText(seek.user, seek.game) }),
        h("td", { text: gameLabel(this.conn.game(seek.game), seek.options) }),
        h("td", { text: timeControlText(seek.clock) + (seek.rated ? " · rated" : "") }), h("td", {}, button));
    });
    if (this.moreSeeks) {
      rows.push(h("tr", {}, h("td", { colspan: "4", class: "muted" },
        `and ${this.moreSeeks} more not listed: seek a game to be paired with any of them `,
        this.nextCursor ? this._moreButton() : null)));
    }
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: "4", class: "muted", text: "No open seeks: create one." })));
    this.seekTable.replaceChildren(...rows);
  }

  async accept(seek) {
    try {
      await this.app.session.ensure();
      await this.conn.request("accept_seek", { seek_id: seek.seek_id });
    } catch (err) {
      this.formStatus.textContent = err.message;
    }
  }

  renderPlayers() {
    const me = this.app.session.user;
    const people = [...this.players.values()].filter((p) => p.kind !== "bot");
    const bots = [...this.players.values()].filter((p) => p.kind === "bot");
    const gameName = (key) => (this.conn.game(key) || { name: key }).name;
    const row = (user) => h("li", { dataset: { user: user.name } },
      h("a", { class: `who kind-${user.kind}`, href: `/profile/${user.name}`, "data-link": "", text: userText(user) }),
      user.ratings ? h("span", { class: "muted ratings", text: ` ${ratingsText(user.ratings, gameName)}` }) : null,
      me && me.name === user.name ? h("span", { class: "muted", text: " (you)" })
        : h("button", { type: "button", onclick: () => this.challenge(user.name) }, user.kind === "bot" ? "Play" : "Challenge"));
    this.playerList.replaceChildren(...people.map(row));
    if (this.morePlayers) {
      this.playerList.append(h("li", { class: "muted" }, `and ${this.morePlayers} more online `,
        this.nextCursor ? this._moreButton() : null));
    }
    if (!people.length && !this.morePlayers) this.playerList.append(h("li", { class: "muted", text: "Nobody yet." }));
    this.botList.replaceChildren(...bots.map(row));
    if (!bots.length) {
      this.botList.append(h("li", { class: "muted", text: "No bot is online (the server starts some with --house-bots)." }));
    }
  }

  /** One's games in progress: the opponent, the game, its clock and whose move it is, from
   *  the server's list of one's games (list_games by player). */
  async renderMine() {
    const me = this.app.session.user;
    const ids = this.app.session.activeGames;
    const asked = (this.mineAsked = (this.mineAsked || 0) + 1);
    let games = [];
    if (me && ids.size) {
      try {
        const reply = await this.conn.request("list_games", { player: me.name, status: "playing", limit: 100 });
        games = reply.games.filter((g) => ids.has(g.game_id));
      } catch (err) {
        return; // the next change or refresh will try again
      }
    }
    if (asked !== this.mineAsked) return; // a later answer is on its way
    const listed = new Set(games.map((g) => g.game_id));
    const rows = games.map((g) => this._myGame(g, me));
    // a game the list does not hold (another node's, in a cluster): its link at least
    for (const id of ids) {
      if (!listed.has(id)) rows.push(h("li", { dataset: { game: id } }, h("a", { href: `/game/${id}`, "data-link": "" }, "A game in progress")));
    }
    this.mine.replaceChildren(...rows);
    if (!rows.length) this.mine.append(h("li", { class: "muted", text: "None in progress." }));
  }

  _myGame(g, me) {
    const info = this.conn.game(g.game) || { name: g.game, players: ["first", "second"] };
    const seat = g.players.findIndex((u) => u.name.toLowerCase() === me.name.toLowerCase());
    const opponent = g.players[1 - seat];
    const mine = g.ply % 2 === seat;
    return h("li", { dataset: { game: g.game_id } },
      h("a", { href: `/game/${g.game_id}`, "data-link": "" },
        h("span", { class: "players", text: `vs ${userText(opponent)}` }),
        h("span", { class: "turn", dataset: { mine: String(mine) }, text: mine ? "Your move" : "Their move" }),
        h("br"),
        h("span", { class: "muted", text: `${gameLabel(info, g.options)} · ${timeControlText(g.clock)} · you play ${info.players[seat]} · ${g.ply} move${g.ply === 1 ? "" : "s"}` })));
  }

  async refreshGames() {
    this.renderMine();
    try {
      const [live, done] = await Promise.all([
        this.conn.request("list_games", { status: "playing", limit: 20 }),
        this.conn.request("list_games", { status: "over", limit: 15 }),
      ]);
      this.liveList.replaceChildren(...live.games.map((g) => this._gameLink(g)));
      if (!live.games.length) this.liveList.append(h("li", { class: "muted", text: "None right now." }));
      this.doneList.replaceChildren(...done.games.map((g) => this._gameLink(g)));
      if (!done.games.length) this.doneList.append(h("li", { class: "muted", text: "None yet." }));
    } catch (err) {
      // the next refresh will try again
    }
  }

  _gameLink(g) {
    const info = this.conn.game(g.game) || { name: g.game, players: ["first", "second"] };
    const line = g.status === "over" ? resultText(g.result, g.players, info.players)
      : `${g.ply} move${g.ply === 1 ? "" : "s"}`;
    return h("li", { dataset: { game: g.game_id } },
      h("a", { href: `/game/${g.game_id}`, "data-link": "" },
        h("span", { class: "players", text: `${userText(g.players[0])} – ${userText(g.players[1])}` }),
        h("span", { class: "muted", text: ` ${gameLabel(info, g.options)} · ${line} · ${ago(g.created_ms)}` })));
  }
}
