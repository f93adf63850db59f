// Time controls in Tessera's one notation (protocol/timecontrol.py: 5m+3s, 30s/move,
// 3d/move, unlimited), as people read them everywhere: the lobby, the game page, records.

/** A duration as the notation writes it: 5m, 1m30s, 1.5s, 0s (hours, minutes, seconds). */
export function durationText(ms) {
  const h = Math.floor(ms / 3600000);
  const m = Math.floor((ms % 3600000) / 60000);
  const rest = ms % 60000;
  const s = Math.floor(rest / 1000);
  const frac = rest % 1000;
  let text = (h ? `${h}h` : "") + (m ? `${m}m` : "");
  if (frac) text += `${s}.${String(frac).padStart(3, "0")}`.replace(/0+$/, "") + "s";
  else if (s || !text) text += `${s}s`;
  return text;
}

/** A time control in the notation: "5m+3s", "30s/move", "3d/move", "unlimited". */
export function timeControlText(clock) {
  switch (clock.kind) {
    case "fischer":
      return `${durationText(clock.base_ms)}+${durationText(clock.increment_ms)}`;
    case "per_move":
      return `${durationText(clock.per_move_ms)}/move`;
    case "correspondence":
      return `${clock.days_per_move}d/move`;
    default:
      return "unlimited";
  }
}
