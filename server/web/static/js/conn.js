// The websocket connection: msgpack frames, requests matched to replies by id, events to
// a listener, and reconnecting by itself (docs/PROTOCOL.md, sections 1 to 3).

import { decode } from "../vendor/msgpack/decode.mjs";
import { encode } from "../vendor/msgpack/encode.mjs";

export const PROTOCOL_VERSION = 1;
const CLIENT_NAME = "tessera-web/1";
const MAX_BACKOFF_MS = 30000;
const CLOSE_TOO_SLOW_TO_START = 4408; // no login in time (docs/PROTOCOL.md, section 1)

/** A request the server refused: its error code and message. */
export class ServerError extends Error {
  constructor(reply) {
    super(reply.message);
    this.code = reply.code;
    this.reply = reply;
  }
}

export class Connection {
  constructor(url) {
    this.url = url;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject}
    this.welcome = null;
    this.state = "connecting"; // connecting | open | closed
    this.backoff = 1000;
    this.stopped = false;
    this.idle = false; // closed for idling before a login (4408)
    this.onEvent = () => {};
    this.onState = () => {};
    this.onOpen = async () => {}; // runs after hello, before waiting requests go out
    this.ready = null;
    this._readyResolve = null;
    this._newReady();
  }

  _newReady() {
    this.ready = new Promise((resolve) => { this._readyResolve = resolve; });
  }

  _setState(state) {
    this.state = state;
    this.onState(state);
  }

  connect() {
    this._setState("connecting");
    const ws = new WebSocket(this.url);
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => this._greet(ws);
    ws.onmessage = (e) => this._receive(e.data);
    ws.onclose = (e) => this._closed(ws, e);
  }

  async _greet(ws) {
    try {
      this.welcome = await this.request("hello", { version: PROTOCOL_VERSION, client: CLIENT_NAME },
                                        { early: true });
      await this.onOpen();
    } catch (err) {
      if (ws === this.ws) ws.close();
      return;
    }
    if (ws !== this.ws) return;
    this.backoff = 1000;
    this._setState("open");
    this._readyResolve();
  }

  _closed(ws, event) {
    if (ws !== this.ws) return;
    for (const { reject } of this.pending.values()) {
      reject(new ServerError({ code: "disconnected", message: "the connection was lost" }));
    }
    this.pending.clear();
    if (this.state === "open") this._newReady();
    this._setState("closed");
    if (this.stopped) return;
    if (event.code === 1008 && !/token revoked/.test(event.reason || "")) {
      this.stopped = true; // policy: reconnecting unchanged would be refused again
      return;
    }
    if (event.code === CLOSE_TOO_SLOW_TO_START) {
      // not logged in and watching nothing: connect again when a request needs it
      this.idle = true;
      this._setState("idle");
      return;
    }
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    setTimeout(() => this.connect(), wait);
  }

  _receive(data) {
    if (!(data instanceof ArrayBuffer)) return;
    let msg;
    try {
      msg = decode(new Uint8Array(data));
    } catch (err) {
      return;
    }
    if (msg === null || typeof msg !== "object") return;
    if (msg.id !== undefined && this.pending.has(msg.id)) {
      const { resolve, reject } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.t === "error") reject(new ServerError(msg));
      else resolve(msg);
      return;
    }
    this.onEvent(msg);
  }

  /**
   * Send request `t` with `fields`; resolves with its reply, rejects with ServerError.
   * Waits until the connection is up (and logged in again after a reconnect). A request
   * refused as rate_limited is sent again once, after the time the server asks for.
   */
  async request(t, fields = {}, { early = false } = {}) {
    if (this.idle && !early) {
      this.idle = false;
      this.connect();
    }
    if (!early) await this.ready;
    try {
      return await this._send(t, fields);
    } catch (err) {
      if (!(err instanceof ServerError) || err.code !== "rate_limited") throw err;
      await new Promise((r) => setTimeout(r, err.reply.retry_after_ms || 500));
      if (!early) await this.ready;
      return this._send(t, fields);
    }
  }

  _send(t, fields) {
    const id = this.nextId++;
    const frame = { t, id };
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined && value !== null) frame[key] = value;
    }
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new ServerError({ code: "disconnected", message: "not connected" }));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.ws.send(encode(frame));
    });
  }

  /** The game metadata of `key` from welcome. */
  game(key) {
    return (this.welcome?.games || []).find((g) => g.key === key);
  }

  /** Drop the connection (a test of reconnecting, or a revoked login). */
  reconnect() {
    if (this.ws) this.ws.close();
  }
}

export function serverUrl() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/ws`;
}
