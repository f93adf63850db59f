// Tessera in the browser: the connection, the login kept across reloads, challenges on
// every page, and the views (the lobby at /, a game at /game/ID, a player's profile at
// /profile/NAME, a game's leaderboard at /leaderboard/GAME).

import { Connection, serverUrl } from "./conn.js";
import { confirmButton, fill, h } from "./dom.js";
import { gameLabel, userText } from "./format.js";
import { timeControlText } from "./timecontrol.js";
import { GameView } from "./game.js";
import { LobbyView } from "./lobby.js";
import { LeaderboardView, ProfileView } from "./ratings.js";
import { Sound } from "./sound.js";

const TOKEN_KEY = "tessera.session";
// who may challenge you (set_challenge_policy, docs/PROTOCOL.md), as the page says it
const CHALLENGE_POLICIES = [
  ["everyone", "Challenges: everyone"],
  ["registered", "Challenges: registered players"],
  ["nobody", "Challenges: nobody"],
];

function stored(value) {
  try {
    if (value === undefined) return localStorage.getItem(TOKEN_KEY);
    if (value === null) localStorage.removeItem(TOKEN_KEY);
    else localStorage.setItem(TOKEN_KEY, value);
  } catch (err) {
    // storage refused (a private window): the login lasts as long as the connection
  }
  return null;
}

/** Who is logged in on this connection, and the games they play. */
class Session {
  constructor(conn, changed) {
    this.conn = conn;
    this.changed = changed;
    this.user = null;
    this.activeGames = new Set();
    this.challengePolicy = "everyone";
  }

  /** Log in again with the stored session token (after a reload or a reconnect). */
  async restore() {
    this.user = null;
    const token = stored();
    if (token) {
      try {
        this._authed(await this.conn.request("auth_token", { token }, { early: true }));
      } catch (err) {
        if (err.code !== "invalid_credentials") throw err;
        stored(null);
      }
    }
    this.changed();
  }

  _authed(reply) {
    this.user = reply.user;
    this.activeGames = new Set(reply.active_games);
    this.challengePolicy = reply.challenge_policy || "everyone";
    stored(reply.session_token);
    this.changed();
  }

  async guest() { this._authed(await this.conn.request("guest")); }
  async login(username, password) { this._authed(await this.conn.request("login", { username, password })); }
  async register(username, password) { this._authed(await this.conn.request("register", { username, password })); }

  /** Choose who may challenge you: kept with your account by the server. */
  async setChallengePolicy(policy) {
    await this.conn.request("set_challenge_policy", { policy });
    this.challengePolicy = policy;
  }

  async logout() {
    await this.conn.request("logout");
    this._loggedOut();
  }

  /** A new password: the account's other logins end, this one stays. */
  async changePassword(oldPassword, newPassword) {
    await this.conn.request("change_password", { old_password: oldPassword, new_password: newPassword });
  }

  /** Delete the account for good (its games stay, under an anonymous name): logged out. */
  async deleteAccount(password) {
    await this.conn.request("delete_account", { password });
    this._loggedOut();
  }

  _loggedOut() {
    stored(null);
    this.user = null;
    this.activeGames = new Set();
    this.changed();
  }

  /** Play as a guest unless logged in already. */
  async ensure() {
    if (!this.user) await this.guest();
  }
}

/** Challenges sent and received, shown on every page. */
class Challenges {
  constructor(app, box) {
    this.app = app;
    this.box = box;
    this.items = new Map(); // id -> {incoming, offer}
  }

  sent(id, offer) {
    this.items.set(id, { incoming: false, offer });
    this.render();
  }

  received(msg) {
    this.items.set(msg.challenge_id, { incoming: true, offer: msg });
    this.render();
  }

  ended(msg) {
    const item = this.items.get(msg.challenge_id);
    this.items.delete(msg.challenge_id);
    if (item && !item.incoming && msg.reason === "declined") {
      this.app.notify(`${item.offer.to} declined your challenge${msg.message ? `: ${msg.message}` : "."}`);
    } else if (item && !item.incoming && msg.reason === "cancelled" && msg.message) {
      this.app.notify(`Your challenge to ${item.offer.to} ended: ${msg.message}`); // it expired
    }
    this.render();
  }

  clear() {
    this.items.clear();
    this.render();
  }

  render() {
    const conn = this.app.conn;
    const rows = [...this.items].map(([id, { incoming, offer }]) => {
      const what = `${gameLabel(conn.game(offer.game), offer.options)}, ${timeControlText(offer.clock)}`;
      const act = (t) => () => conn.request(t, { challenge_id: id }).catch((e) => this.app.notify(e.message));
      return h("div", { class: "challenge", dataset: { challenge: String(id) } },
        incoming
          ? h("span", {}, h("b", { text: userText(offer.from) }), ` challenges you: ${what}`)
          : h("span", {}, `You challenged `, h("b", { text: offer.to }), `: ${what}`),
        incoming ? h("button", { type: "button", class: "primary accept", onclick: act("accept_challenge") }, "Accept") : null,
        incoming ? h("button", { type: "button", class: "decline", onclick: act("decline_challenge") }, "Decline")
          : h("button", { type: "button", class: "cancel", onclick: act("cancel_challenge") }, "Cancel"));
    });
    this.box.replaceChildren(...rows);
  }
}

class App {
  constructor() {
    this.main = document.getElementById("main");
    this.conn = new Connection(serverUrl());
    this.session = new Session(this.conn, () => this.renderAccount());
    this.challenges = new Challenges(this, document.getElementById("challenges"));
    this.view = null;
    this.opened = false;
    this.sound = new Sound();
    document.querySelector(".top-nav").after(this.sound.button);
    history.scrollRestoration = "manual"; // a page opens at its top, a reload too
    this.conn.onOpen = () => this.session.restore();
    this.conn.onEvent = (msg) => this.onEvent(msg);
    this.conn.onState = (state) => this.onState(state);
    document.addEventListener("click", (e) => this.onLink(e));
    window.addEventListener("popstate", () => this.render());
    this.conn.connect();
  }

  onState(state) {
    document.getElementById("net").dataset.state = state;
    document.getElementById("net").title = { open: "connected", connecting: "connecting…", closed: "reconnecting…", idle: "idle: connects again when needed" }[state];
    if (state === "closed") this.challenges.clear(); // challenges end with the connection
    if (state !== "open") return;
    if (!this.opened) {
      this.opened = true;
      this.render();
    } else if (this.view) this.view.onReconnect();
  }

  onEvent(msg) {
    switch (msg.t) {
      case "challenge_received": this.challenges.received(msg); return;
      case "challenge_ended": this.challenges.ended(msg); return;
      case "game_started":
        this.session.activeGames.add(msg.game_id);
        if (!(this.view instanceof GameView && this.view.gameId === msg.game_id)) {
          this.navigate(`/game/${msg.game_id}`);
          return;
        }
        break;
      default: break;
    }
    if (this.view) this.view.onEvent(msg);
  }

  onLink(e) {
    const link = e.target.closest && e.target.closest("a[data-link]");
    if (!link || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    this.navigate(link.getAttribute("href"));
  }

  navigate(path) {
    if (path !== location.pathname + location.hash) history.pushState(null, "", path);
    this.render();
    window.scrollTo(0, 0);
  }

  render() {
    if (this.view) this.view.unmount();
    const path = location.pathname;
    const game = path.match(/^\/game\/([0-9A-Za-z_-]{1,32})$/);
    const profile = path.match(/^\/profile\/([A-Za-z][A-Za-z0-9_-]{1,19})$/);
    const board = path.match(/^\/leaderboard(?:\/([a-z][a-z0-9_]{0,31}))?$/);
    if (game) this.view = new GameView(this, game[1]);
    else if (profile) this.view = new ProfileView(this, profile[1]);
    else if (board) this.view = new LeaderboardView(this, board[1] || null);
    else this.view = new LobbyView(this);
    this.view.mount(this.main).catch((err) => this.notify(err.message));
  }

  notify(text) {
    const note = h("div", { class: "toast", role: "status", text });
    document.getElementById("notices").append(note);
    setTimeout(() => note.remove(), 6000);
  }

  renderAccount() {
    const box = document.getElementById("account");
    const user = this.session.user;
    if (user) {
      fill(box, h("a", { class: "me", href: `/profile/${user.name}`, "data-link": "", dataset: { kind: user.kind } }, userText(user)),
        this.challengePolicyControl(),
        user.kind === "human" ? h("button", { type: "button", class: "account-open", onclick: () => this.accountForm() }, "Account") : null,
        h("button", { type: "button", class: "logout", onclick: () => this.session.logout().catch((e) => this.notify(e.message)) }, "Log out"));
    } else {
      fill(box, h("button", { type: "button", class: "login-open", onclick: () => this.loginForm() }, "Log in"),
        h("button", { type: "button", class: "guest", onclick: () => this.session.guest().catch((e) => this.notify(e.message)) }, "Play as guest"));
    }
    if (this.view && this.view.onSession) this.view.onSession();
  }

  /** The setting of who may challenge you: everyone, registered players, nobody. */
  challengePolicyControl() {
    const select = h("select", { name: "challenge-policy", class: "challenge-policy", "aria-label": "who may challenge you",
                                 title: "Who may challenge you (registered players: no guests). Kept with your account." },
      CHALLENGE_POLICIES.map(([value, text]) => h("option", { value, text, selected: value === this.session.challengePolicy })));
    select.addEventListener("change", () => {
      const chosen = select.value;
      select.disabled = true;
      this.session.setChallengePolicy(chosen)
        .then(() => { select.dataset.policy = chosen; })
        .catch((e) => { select.value = this.session.challengePolicy; this.notify(e.message); })
        .finally(() => { select.disabled = false; });
    });
    select.dataset.policy = this.session.challengePolicy;
    return select;
  }

  /** Change your password, or delete your account (registered players: they have one). */
  accountForm() {
    const input = (name, autocomplete, label, extra = {}) => h("input", {
      type: "password", name, autocomplete, required: true, maxlength: "128", "aria-label": label, placeholder: label, ...extra });
    const current = input("old-password", "current-password", "current password");
    const fresh = input("new-password", "new-password", "new password (at least 8)", { minlength: "8" });
    const again = input("again", "new-password", "new password again", { minlength: "8" });
    const changed = h("p", { class: "form-status", "aria-live": "polite" });
    const password = input("password", "current-password", "password");
    const deleted = h("p", { class: "form-status", "aria-live": "polite" });
    const dialog = h("dialog", { class: "login account-settings" });
    const close = () => { dialog.close(); dialog.remove(); };
    const change = async (e) => {
      e.preventDefault();
      if (![current, fresh, again].every((field) => field.reportValidity())) return;
      if (fresh.value !== again.value) {
        changed.textContent = "The new passwords differ.";
        return;
      }
      try {
        await this.session.changePassword(current.value, fresh.value);
        changed.dataset.ok = "";
        changed.textContent = "Password changed: your other logins have ended.";
        for (const field of [current, fresh, again]) field.value = "";
      } catch (err) {
        delete changed.dataset.ok;
        changed.textContent = err.message;
      }
    };
    const remove = async () => {
      if (!password.reportValidity()) return;
      try {
        await this.session.deleteAccount(password.value);
        close();
        this.notify("Your account is deleted; your games stay, under an anonymous name.");
      } catch (err) {
        deleted.textContent = err.message;
      }
    };
    fill(dialog,
      h("form", { class: "change-password", onsubmit: change },
        h("h2", { text: "Change password" }), current, fresh, again,
        h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Change password")),
        changed),
      h("form", { class: "delete-account", onsubmit: (e) => e.preventDefault() },
        h("h2", { text: "Delete account" }),
        h("p", { text: "For good: nobody can log in under your name again, your games stay under an anonymous " +
                       "name, and after a while someone else may register the name. Not while you play a game." }),
        password,
        h("div", { class: "buttons" }, confirmButton("Delete account", "Delete for good", remove, { class: "delete" })),
        deleted),
      h("div", { class: "buttons" }, h("button", { type: "button", class: "close", onclick: close }, "Close")));
    document.body.append(dialog);
    dialog.showModal();
  }

  loginForm() {
    const name = h("input", { type: "text", name: "username", autocomplete: "username", required: true,
                              "aria-label": "user name", placeholder: "name" });
    const pass = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true,
                              maxlength: "128", "aria-label": "password", placeholder: "password" });
    const status = h("p", { class: "form-status", "aria-live": "polite" });
    const dialog = h("dialog", { class: "login" });
    const go = (how) => async (e) => {
      e.preventDefault();
      if (!name.reportValidity() || !pass.reportValidity()) return;
      try {
        await this.session[how](name.value.trim(), pass.value);
        dialog.close();
        dialog.remove();
      } catch (err) {
        status.textContent = err.message;
      }
    };
    fill(dialog, h("form", { method: "dialog", onsubmit: go("login") },
      h("h2", { text: "Log in or register" }), name, pass,
      h("div", { class: "buttons" },
        h("button", { type: "submit", class: "primary" }, "Log in"),
        h("button", { type: "button", onclick: go("register") }, "Register"),
        h("button", { type: "button", onclick: () => { dialog.close(); dialog.remove(); } }, "Cancel")),
      status));
    document.body.append(dialog);
    dialog.showModal();
  }
}

window.tessera = new App();
