// Ratings in the browser: a player's profile (/profile/NAME) with the rating history of
// each pool drawn in SVG, and a game's leaderboard (/leaderboard/GAME). Names and every
// other text from the server go in as text.

import { fill, h, s } from "./dom.js";
import { ago, gameLabel, ratingText, resultText, userText } from "./format.js";

const CHART_W = 600;
const CHART_H = 180;
const PAD = { left: 48, right: 12, top: 12, bottom: 24 };

/** The record's column: "Won / lost", with "/ drawn" only where a draw was recorded (no
 *  game here can be drawn: a result has a winner unless the game was aborted). */
function recordColumn(ratings) {
  const draws = ratings.some((r) => r.draws);
  return {
    head: draws ? "Won / lost / drawn" : "Won / lost",
    cell: (r) => `${r.wins || 0} / ${r.losses || 0}${draws ? ` / ${r.draws || 0}` : ""}`,
  };
}

/** How a game went for `name`: "won", "lost", "aborted" or "in progress". */
function outcomeFor(game, name) {
  if (game.status !== "over") return "in progress";
  const winner = game.result && game.result.winner;
  if (winner === undefined || winner === null) return "aborted";
  return game.players[winner].name.toLowerCase() === name.toLowerCase() ? "won" : "lost";
}

/** The rating history of one pool as an SVG line chart: one point a rated game, oldest
 *  left; the band around the line is the deviation (the rating's uncertainty). */
export function ratingChart(points, game) {
  const lows = points.map((p) => p.rating - p.deviation);
  const highs = points.map((p) => p.rating + p.deviation);
  let min = Math.min(...points.map((p) => p.rating), ...lows);
  let max = Math.max(...points.map((p) => p.rating), ...highs);
  if (max - min < 50) { min -= 25; max += 25; }
  const innerW = CHART_W - PAD.left - PAD.right;
  const innerH = CHART_H - PAD.top - PAD.bottom;
  const x = (i) => PAD.left + (points.length === 1 ? innerW / 2 : (i * innerW) / (points.length - 1));
  const y = (r) => PAD.top + ((max - r) * innerH) / (max - min);
  const line = points.map((p, i) => `${x(i).toFixed(1)},${y(p.rating).toFixed(1)}`).join(" ");
  const band = [...points.map((p, i) => `${x(i).toFixed(1)},${y(p.rating + p.deviation).toFixed(1)}`),
    ...points.map((p, i) => `${x(i).toFixed(1)},${y(p.rating - p.deviation).toFixed(1)}`).reverse()].join(" ");
  const ticks = [Math.round(max), Math.round((max + min) / 2), Math.round(min)];
  return s("svg", { class: "rating-chart", viewBox: `0 0 ${CHART_W} ${CHART_H}`, role: "img",
                    "aria-label": `${game} rating history`, dataset: { game, points: String(points.length) } },
    ticks.map((t) => s("g", {},
      s("line", { x1: PAD.left, x2: CHART_W - PAD.right, y1: y(t), y2: y(t), class: "grid" }),
      s("text", { x: PAD.left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick", text: String(t) }))),
    s("polygon", { points: band, class: "deviation" }),
    s("polyline", { points: line, class: "rating-line" }),
    points.map((p, i) => s("circle", { cx: x(i), cy: y(p.rating), r: 3.5, class: "point", dataset: { game: p.game_id, rating: String(p.rating) } },
      s("title", { text: `${p.rating} ± ${p.deviation} after game ${p.game_id} (${ago(p.at_ms)})` }))),
    s("text", { x: PAD.left, y: CHART_H - 6, class: "tick", text: points.length === 1 ? "1 game" : `${points.length} games` }));
}

/** /profile/NAME */
export class ProfileView {
  constructor(app, name) {
    this.app = app;
    this.conn = app.conn;
    this.name = name;
  }

  async mount(root) {
    this.root = root;
    fill(root, h("p", { class: "loading" }, "Loading the profile…"));
    await this.load();
  }

  unmount() {}

  async onReconnect() { await this.load(); }

  onEvent() { return false; }

  async load() {
    let info;
    try {
      info = await this.conn.request("profile", { name: this.name });
    } catch (err) {
      fill(this.root, h("section", { class: "card" }, h("h2", { text: "No such player" }),
        h("p", {}, err.message, " ", h("a", { href: "/", "data-link": "" }, "Back to the lobby"))));
      return;
    }
    const user = info.user;
    document.title = `${user.name} · Tessera`;
    const pools = user.ratings || [];
    const record = recordColumn(pools);
    const rows = pools.map((r) => h("tr", { dataset: { game: r.game } },
      h("td", {}, h("a", { href: `/leaderboard/${r.game}`, "data-link": "" }, this._gameName(r.game))),
      h("td", { class: "rating", text: ratingText(r) }),
      h("td", { text: `±${r.deviation}` }), h("td", { text: String(r.games || 0) }),
      h("td", { text: record.cell(r) })));
    const charts = pools.map((r) => {
      const points = info.history.filter((p) => p.game === r.game);
      return points.length ? h("figure", { class: "chart" }, h("figcaption", { text: `${this._gameName(r.game)}: ${ratingText(r)}` }),
        ratingChart(points, r.game)) : null;
    });
    const recent = info.recent.map((g) => {
      const game = this.conn.game(g.game) || { name: g.game, players: ["first", "second"] };
      const line = g.status === "over" ? resultText(g.result, g.players, game.players) : "in progress";
      const outcome = outcomeFor(g, user.name);
      return h("li", { dataset: { game: g.game_id } },
        h("span", { class: "outcome", dataset: { outcome }, text: outcome[0].toUpperCase() + outcome.slice(1) }), " ",
        h("a", { href: `/game/${g.game_id}`, "data-link": "" },
        `${userText(g.players[0])} – ${userText(g.players[1])}`),
        h("span", { class: "muted", text: ` ${gameLabel(game, g.options)}${g.rated ? " · rated" : ""} · ${line} · ${ago(g.created_ms)}` }));
    });
    fill(this.root, h("div", { class: "profile" },
      h("section", { class: "card" },
        h("h2", { class: "who", dataset: { kind: user.kind }, text: userText(user) }),
        pools.length
          ? h("table", { class: "pools" }, h("thead", {}, h("tr", {}, ["Game", "Rating", "Deviation", "Games", record.head].map((t) => h("th", { text: t })))),
            h("tbody", {}, rows))
          : h("p", { class: "muted", text: "No rated games yet." }),
        h("p", { class: "muted", text: "A rating shown with ? is provisional: its deviation is above 110." })),
      charts.length ? h("section", { class: "card charts" }, h("h2", { text: "Rating history" }), charts) : null,
      h("section", { class: "card" }, h("h2", { text: "Latest games" }),
        recent.length ? h("ul", { class: "game-links" }, recent) : h("p", { class: "muted", text: "None yet." }))));
  }

  _gameName(key) {
    const info = this.conn.game(key);
    return info ? info.name : key;
  }
}

/** /leaderboard/GAME */
export class LeaderboardView {
  constructor(app, game) {
    this.app = app;
    this.conn = app.conn;
    this.gameKey = game;
    this.humansOnly = false;
  }

  async mount(root) {
    this.root = root;
    await this.load();
  }

  unmount() {}

  async onReconnect() { await this.load(); }

  onEvent() { return false; }

  async load(cursor = null) {
    const games = this.conn.welcome.games;
    const key = this.gameKey || games[0].key;
    const info = this.conn.game(key) || { name: key };
    document.title = `${info.name} leaderboard · Tessera`;
    const fields = { game: key };
    if (this.humansOnly) fields.bots = false;
    if (cursor) fields.cursor = cursor;
    const page = await this.conn.request("leaderboard", fields);
    const record = recordColumn(page.standings.map((st) => st.user.rating));
    const rows = page.standings.map((st) => h("tr", { dataset: { user: st.user.name } },
      h("td", { class: "rank", text: String(st.rank) }),
      h("td", {}, h("a", { href: `/profile/${st.user.name}`, "data-link": "" }, userText({ ...st.user, rating: undefined }))),
      h("td", { class: "rating", text: ratingText(st.user.rating) }),
      h("td", { text: String(st.user.rating.games || 0) }),
      h("td", { text: record.cell(st.user.rating) })));
    const humans = h("input", { type: "checkbox", name: "humans", checked: this.humansOnly,
                                onchange: () => { this.humansOnly = humans.checked; this.load(); } });
    fill(this.root, h("section", { class: "card leaderboard" },
      h("h2", { text: `${info.name} leaderboard` }),
      h("nav", { class: "pools-nav" }, games.map((g) => h("a", { href: `/leaderboard/${g.key}`, "data-link": "",
        class: g.key === key ? "current" : null, text: g.name }))),
      h("label", {}, humans, " people only (no bots)"),
      rows.length
        ? h("table", { class: "standings" }, h("thead", {}, h("tr", {}, ["#", "Player", "Rating", "Games", record.head].map((t) => h("th", { text: t })))),
          h("tbody", {}, rows))
        : h("p", { class: "muted empty", text: "No established ratings yet: a rating joins the leaderboard once its deviation is 110 or less." }),
      page.next_cursor ? h("button", { type: "button", onclick: () => this.load(page.next_cursor) }, "Next page") : null));
  }
}
