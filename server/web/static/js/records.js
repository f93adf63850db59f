// A stored game as the match records of docs/RECORDS.md, for downloading: the text form
// (tags and one move a line) and the JSON form. They are written as clients/records.py
// writes them (the browser tests compare the two, byte for byte for the text form), from
// the server's `game_record` and the game's metadata (colour names, rules version, the
// order of its options).

import { timeControlText } from "./timecontrol.js";

const RESULTS = { 0: "1-0", 1: "0-1" };
export const JSON_FORMAT = "tessera-record/1";

/** The fewest decimals (0 to 3) that write every millisecond value exactly in seconds: a
 * record writes all its times at this one precision (clients/records.py decimals_needed). */
function decimalsNeeded(values) {
  let needed = 0;
  for (const ms of values) {
    if (ms !== undefined && ms !== null && ms % 1000) {
      needed = Math.max(needed, String(ms % 1000).padStart(3, "0").replace(/0+$/, "").length);
    }
  }
  return needed;
}

/** ".ddd" cut to ``decimals`` digits ("" for none). */
function fraction(ms, decimals) {
  return decimals ? `.${String(ms % 1000).padStart(3, "0")}`.slice(0, decimals + 1) : "";
}

/** Milliseconds as seconds with ``decimals`` decimals (time used): 4200, 1 -> "4.2". */
function seconds(ms, decimals) {
  return `${Math.floor(ms / 1000)}${fraction(ms, decimals)}`;
}

/** A clock reading as H:MM:SS with ``decimals`` decimals. */
function clockReading(ms, decimals) {
  const total = Math.floor(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}` +
    fraction(ms, decimals);
}

function utcDate(ms) {
  const iso = new Date(ms).toISOString(); // 2026-01-01T00:00:00.000Z
  return ms % 1000 ? iso : iso.replace(".000Z", "Z");
}

function quote(value) {
  return `"${String(value).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** The record's options in the order of the game's option schema. */
function orderedOptions(record, info) {
  const names = (info.options || []).map((o) => o.name);
  const rest = Object.keys(record.options).filter((k) => !names.includes(k));
  return [...names.filter((n) => n in record.options), ...rest].map((k) => [k, record.options[k]]);
}

function outcome(record) {
  const over = record.status === "over" && record.result;
  return {
    winner: over && record.result.winner !== undefined ? record.result.winner : null,
    termination: over ? record.result.reason : "unterminated",
    ending: over && record.result.ending ? record.result.ending.text : null,
  };
}

/** The text form of a record (docs/RECORDS.md). */
export function recordText(record, info) {
  const [black, white] = info.players;
  const { winner, termination, ending } = outcome(record);
  const result = winner === null ? "*" : RESULTS[winner];
  const tags = [
    ["Game", record.game],
    ["Options", orderedOptions(record, info).map(([k, v]) => `${k}=${v}`).join(",")],
    ["RulesVersion", info.rules_version],
  ];
  if (record.game_id) tags.push(["GameId", record.game_id]);
  tags.push(["Date", utcDate(record.created_ms)], [black, record.players[0].name],
            [white, record.players[1].name]);
  tags.push([`${black}Kind`, record.players[0].kind], [`${white}Kind`, record.players[1].kind]);
  tags.push(["TimeControl", timeControlText(record.clock)], ["Result", result],
            ["Termination", termination]);
  if (ending !== null) tags.push(["Ending", ending]);
  const lines = tags.map(([name, value]) => `[${name} ${quote(value)}]`);
  lines.push("");
  const decimals = decimalsNeeded(record.moves.flatMap((m) => [m.ms_used, m.clock_ms]));
  for (const m of record.moves) {
    const parts = [`${m.ply + 1}.`, m.move];
    if (m.ms_used !== undefined) parts.push(`{used ${seconds(m.ms_used, decimals)}}`);
    if (m.clock_ms !== undefined) parts.push(`{clk ${clockReading(m.clock_ms, decimals)}}`);
    lines.push(parts.join(" "));
  }
  lines.push(result);
  return lines.join("\n") + "\n";
}

/** The JSON form of a record (docs/RECORDS.md). */
export function recordJson(record, info) {
  const { winner, termination, ending } = outcome(record);
  const data = {
    format: JSON_FORMAT,
    game_id: record.game_id ?? null,
    game: record.game,
    options: Object.fromEntries(orderedOptions(record, info)),
    rules_version: info.rules_version,
    players: record.players.map((p) => p.name),
    player_kinds: record.players.map((p) => p.kind),
    date: utcDate(record.created_ms),
    time_control: { ...record.clock },
    winner,
    termination,
    ...(ending !== null ? { ending } : {}),
    moves: record.moves.map((m) => ({
      ply: m.ply, move: m.move, ms_used: m.ms_used ?? null, clock_ms: m.clock_ms ?? null,
    })),
  };
  return JSON.stringify(data, null, 2) + "\n";
}
