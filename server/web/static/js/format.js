// Text for people: clocks, time controls, options, results. No game is named here: what a
// game is called and what its seats' colours are comes from the server's metadata.

/** A clock reading: 4:59, 1:02:03, or 9.4 under ten seconds. */
export function clockText(ms) {
  const t = Math.max(0, ms);
  if (t < 10000) return (Math.floor(t / 100) / 10).toFixed(1);
  const total = Math.floor(t / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mm = h ? String(m).padStart(2, "0") : String(m);
  return (h ? `${h}:` : "") + `${mm}:${String(s).padStart(2, "0")}`;
}

/** "Xodd 9 · size 9" style: the game's name and its options that differ from nothing. */
export function gameLabel(info, options) {
  const name = info ? info.name : "?";
  const parts = Object.entries(options || {}).map(([k, v]) => `${k} ${v}`);
  return parts.length ? `${name} (${parts.join(", ")})` : name;
}

const REASONS = {
  normal: (w, l, ending) => (ending ? `${w} wins: ${ending.text}` : `${w} wins`),
  resign: (w, l) => `${l} resigned: ${w} wins`,
  timeout: (w, l) => `${l} ran out of time: ${w} wins`,
  abandon: (w, l) => `${l} left the game: ${w} wins`,
};

/** Why a game ended, with the winner's colour and name; by how much when the rules ended
 *  it (the result's ending: the engine's words, shown as they are). */
export function resultText(result, players, colours) {
  if (!result) return "";
  if (result.reason === "abort" || result.winner === undefined) return "Game aborted";
  const who = (seat) => `${colours[seat]} (${players[seat].name})`;
  const say = REASONS[result.reason] || REASONS.normal;
  return say(who(result.winner), who(1 - result.winner), result.ending);
}

/** A rating as shown beside a name: 1612, or 1431? while provisional. */
export function ratingText(rating) {
  if (!rating) return "";
  return `${rating.rating}${rating.provisional ? "?" : ""}`;
}

/** A user's name with a mark for bots and their rating: in their `rating` (the pool of
 *  where they appear), else in `game`'s pool from their `ratings`. */
export function userText(user, game) {
  if (!user) return "";
  let text = user.kind === "bot" ? `${user.name} (bot)` : user.name;
  let rating = user.rating;
  if (!rating && game && user.ratings) rating = user.ratings.find((r) => r.game === game);
  if (rating) text += ` ${ratingText(rating)}`;
  return text;
}

/** Every pool's rating in short: "Hadron 1431?, Xodd 1612". */
export function ratingsText(ratings, gameName = (key) => key) {
  return (ratings || []).map((r) => `${gameName(r.game)} ${ratingText(r)}`).join(", ");
}

/** A rating change: "1500 → 1662 (+162)". */
export function changeText(update) {
  const before = Math.round(update.rating_before);
  const after = Math.round(update.rating_after);
  return `${before} → ${after} (${after >= before ? "+" : ""}${after - before})`;
}

/** "2 min ago" style age of an epoch-ms time. */
export function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toISOString().slice(0, 10);
}

/** The time a move took: "0.8 s", "12 s", "1:05". */
export function tookText(ms) {
  if (ms < 10000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  if (ms < 60000) return `${Math.floor(ms / 1000)} s`;
  return clockText(ms);
}

/** Each seat's clock reading when a time control starts ([ms, ms]), or null without one. */
export function startingClocks(clock) {
  const ms = { fischer: clock.base_ms, per_move: clock.per_move_ms,
               correspondence: clock.days_per_move && clock.days_per_move * 86400000 }[clock.kind];
  return ms === undefined || ms === null ? null : [ms, ms];
}
