"""Match records: one finished (or unfinished) game as data, as text and as JSON.

A :class:`MatchRecord` holds who played what game, when, under which clock, how it ended and
every move (with optional time used and clock readings). Two serialisations round-trip
exactly (``parse_record(format_record(r)) == r`` and ``from_json(to_json(r)) == r``):

* the PGN-like text form, for people (``format_record`` / ``parse_record``);
* a JSON object, for programs (``to_json`` / ``from_json``; ``to_dict`` / ``from_dict``).

Both are specified in ``docs/RECORDS.md``. :func:`verify` replays a record through the engine
and says whether its moves are legal and its stored result is the one the rules give.

Errors: every malformed record raises :class:`RecordError` (a ``ValueError``), whose message
names the line (text form) or key (JSON form) that is wrong.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import engine
import protocol as p
from protocol.limits import PROVISIONAL_DEVIATION

TERMINATIONS = ("normal", "resign", "timeout", "abandon", "abort", "unterminated")
# Terminations that leave no winner; every other one names one.
NO_WINNER = ("abort", "unterminated")
RESULTS = {0: "1-0", 1: "0-1", None: "*"}
JSON_FORMAT = "tessera-record/1"

_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)")
_MOVE_RE = re.compile(r"[A-Za-z][^\s{}\[\]\";]*")
# Control characters, line and paragraph separators, lone surrogates: never in a text field.
_BANNED_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")
_SECONDS_RE = r"\d+(?:\.\d{1,3})?"


class RecordError(ValueError):
    """A record that is malformed or inconsistent; the message says where and why."""


# -- the data ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RecordMove:
    """One ply: its number (0-based), canonical move text, and optional timing.

    ``ms_used`` is the time the mover spent on it; ``clock_ms`` is the mover's clock right
    after the move (increment included), both in milliseconds; None when not recorded.
    """

    ply: int
    move: str
    ms_used: int | None = None
    clock_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchRecord:
    """One game. Validated and normalised when built; raises RecordError if inconsistent.

    ``options`` is normalised by the engine (defaults filled in, values typed), ``players``
    and ``player_kinds`` become tuples, ``moves`` may be given as plain move texts, and
    ``rules_version`` defaults to the engine's current one. ``winner`` is None exactly when
    ``termination`` is ``abort`` or ``unterminated`` (a game still in progress).
    """

    game: str
    players: tuple[str, str]
    date: str
    options: dict[str, int | str] = field(default_factory=dict, hash=False)
    rules_version: str | None = None
    game_id: str | None = None
    player_kinds: tuple[str, str] | None = None
    time_control: p.TimeControl = field(default_factory=p.Unlimited)
    winner: int | None = None
    termination: str = "unterminated"
    moves: tuple[RecordMove, ...] = ()
    rated: bool = False
    rating_changes: tuple[p.RatingUpdate, p.RatingUpdate] | None = None
    """Both players' ratings before and after a rated game, as the server stored them."""
    ending: str | None = None
    """How the rules decided a game that ended by them (termination ``normal``), in the
    engine's words: ``both passed: Black 14 groups, White 11; fewer groups wins``.
    Derived from the moves when the record is made; ``verify`` checks it."""

    def __post_init__(self) -> None:
        try:
            game = engine.get_game(self.game)
            options = game.normalize_options(self.options)
        except ValueError as e:
            raise RecordError(str(e)) from None
        set_ = object.__setattr__
        set_(self, "options", options)
        set_(self, "rules_version",
             game.rules_version if self.rules_version is None
             else _text("rules_version", self.rules_version))
        set_(self, "players", _pair("players", self.players))
        if self.player_kinds is not None:
            set_(self, "player_kinds", _pair("player_kinds", self.player_kinds))
        if self.game_id is not None:
            _text("game_id", self.game_id)
        check_date(self.date)
        set_(self, "time_control", _time_control(self.time_control))
        _check_result(self.winner, self.termination)
        set_(self, "moves", _moves(self.moves))
        if self.rating_changes is not None and not self.rated:
            raise RecordError("rating changes given for a game that is not rated")
        if self.ending is not None:
            _text("ending", self.ending)
            if self.termination != "normal":
                raise RecordError(f"an ending is given for a game whose termination is "
                                  f"{self.termination!r}, not 'normal'")

    @property
    def result(self) -> str:
        """``1-0`` (player 0 won), ``0-1`` (player 1 won) or ``*`` (no winner)."""
        return RESULTS[self.winner]

    @property
    def colours(self) -> tuple[str, str]:
        """The game's names for the two players, e.g. ("Black", "White")."""
        return engine.get_game(self.game).players

    def replay(self) -> engine.State:
        """The engine state after every move; engine.IllegalMove names a bad ply."""
        return engine.replay(self.game, self.options, (m.move for m in self.moves))


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise RecordError(f"{name} must be a non-empty string, got {value!r}")
    if any(unicodedata.category(ch) in _BANNED_CATEGORIES for ch in value):
        raise RecordError(f"{name} {value!r} holds a control or line-break character")
    return value


def _pair(name: str, value: object) -> tuple[str, str]:
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise RecordError(f"{name} must be two strings, got {value!r}")
    return (_text(name, value[0]), _text(name, value[1]))


def _ms(name: str, value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RecordError(f"{name} must be a non-negative integer of milliseconds, got {value!r}")
    return value


def _moves(moves: object) -> tuple[RecordMove, ...]:
    if isinstance(moves, str) or not isinstance(moves, Iterable):
        raise RecordError(f"moves must be a sequence, got {type(moves).__name__}")
    out: list[RecordMove] = []
    for ply, m in enumerate(moves):
        if isinstance(m, str):
            m = RecordMove(ply, m)
        if not isinstance(m, RecordMove):
            raise RecordError(f"move {ply} must be a RecordMove or text, got {m!r}")
        if m.ply != ply:
            raise RecordError(f"move {ply} is numbered ply {m.ply}")
        if not isinstance(m.move, str) or not _MOVE_RE.fullmatch(m.move):
            raise RecordError(f"ply {ply}: {m.move!r} is not a move token")
        _ms(f"ply {ply} ms_used", m.ms_used)
        _ms(f"ply {ply} clock_ms", m.clock_ms)
        out.append(m)
    return tuple(out)


def _check_result(winner: object, termination: object) -> None:
    if termination not in TERMINATIONS:
        raise RecordError(
            f"termination {termination!r} is not one of {', '.join(TERMINATIONS)}")
    if winner not in (0, 1, None) or isinstance(winner, bool):
        raise RecordError(f"winner must be 0, 1 or None, got {winner!r}")
    if (winner is None) != (termination in NO_WINNER):
        if winner is None:
            raise RecordError(f"termination {termination!r} needs a winner")
        raise RecordError(f"termination {termination!r} has no winner, got winner {winner}")


def check_date(date: object) -> str:
    """Return ``date`` if it is an ISO 8601 UTC datetime (``...Z`` or ``...+00:00``)."""
    if not isinstance(date, str) or not _DATE_RE.fullmatch(date):
        raise RecordError(
            f"date must be an ISO 8601 UTC datetime like 2025-03-01T18:04:05Z, got {date!r}")
    try:
        datetime.fromisoformat(date)
    except ValueError:
        raise RecordError(f"date {date!r} is not a valid datetime") from None
    return date


def utc_date(when: datetime | int | None = None) -> str:
    """``when`` (an aware datetime, or epoch milliseconds; default now) as a record date:
    2025-03-01T18:04:05Z, with milliseconds (``18:04:05.123Z``) when there are any."""
    if isinstance(when, int):
        when = datetime.fromtimestamp(when / 1000, UTC)
    when = datetime.now(UTC) if when is None else when
    if when.tzinfo is None:
        raise RecordError("utc_date needs a timezone-aware datetime")
    spec = "milliseconds" if when.microsecond // 1000 else "seconds"
    return when.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


# -- time controls and clock readings --------------------------------------------------------
def _time_control(tc: object) -> p.TimeControl:
    """A record's time control: a ``protocol.TimeControl``, or its wire form as a mapping
    (``{"kind": "fischer", ...}``, Fischer's ``increment_ms`` defaulting to 0)."""
    if isinstance(tc, p.Fischer | p.PerMove | p.Correspondence | p.Unlimited):
        return tc
    if not isinstance(tc, Mapping):
        raise RecordError(f"time_control must be a time control or a mapping, got {tc!r}")
    data = dict(tc)
    if data.get("kind") == "fischer":
        data.setdefault("increment_ms", 0)
    try:
        return p.time_control_from_map(data, "time_control")
    except p.InvalidMessage as e:
        raise RecordError(str(e)) from None


def _parse_seconds(text: str, what: str) -> int:
    if not re.fullmatch(_SECONDS_RE, text):
        raise RecordError(f"{what} {text!r} must be seconds with at most 3 decimals, e.g. 1.25")
    whole, _, frac = text.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def decimals_needed(values: Iterable[int | None]) -> int:
    """The fewest decimals (0 to 3) that write every millisecond value exactly in seconds:
    a record writes all its times at this one precision."""
    needed = 0
    for ms in values:
        if ms is not None and ms % 1000:
            needed = max(needed, len(f"{ms % 1000:03d}".rstrip("0")))
    return needed


def _fixed_seconds(ms: int, decimals: int) -> str:
    """Milliseconds as seconds with exactly ``decimals`` decimals (enough for ``ms``)."""
    whole, frac = divmod(ms, 1000)
    return f"{whole}.{frac:03d}"[:len(str(whole)) + 1 + decimals] if decimals else str(whole)


def format_clock_reading(ms: int, decimals: int | None = None) -> str:
    """A clock reading (the time left on a clock) as H:MM:SS: with ``decimals`` decimals
    (enough for ``ms``), or as few as it needs: 298100 -> 0:04:58.1."""
    seconds, frac = divmod(ms, 1000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    if decimals is None:
        tail = f".{frac:03d}".rstrip("0") if frac else ""
    else:
        tail = f".{frac:03d}"[:decimals + 1] if decimals else ""
    return f"{hours}:{minute:02d}:{sec:02d}{tail}"


def parse_clock_reading(text: str) -> int:
    """Inverse of :func:`format_clock_reading`; also accepts M:SS and plain seconds."""
    m = re.fullmatch(r"(?:(?:(\d+):)?(\d+):)?(\d+)(?:\.(\d{1,3}))?", text)
    if not m:
        raise RecordError(f"clock reading {text!r} must look like H:MM:SS.s, e.g. 0:04:58.1")
    hours, minutes, seconds, frac = m.groups()
    total = (int(hours or 0) * 60 + int(minutes or 0)) * 60 + int(seconds)
    return total * 1000 + int(((frac or "") + "000")[:3])


# -- the text form -----------------------------------------------------------------------------
def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _options_text(options: Mapping[str, int | str]) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items())


def format_record(record: MatchRecord) -> str:
    """The record in the text form of docs/RECORDS.md (tags, a blank line, one ply a line)."""
    black, white = record.colours
    tags: list[tuple[str, str]] = [
        ("Game", record.game),
        ("Options", _options_text(record.options)),
        ("RulesVersion", str(record.rules_version)),
    ]
    if record.game_id is not None:
        tags.append(("GameId", record.game_id))
    tags += [("Date", record.date), (black, record.players[0]), (white, record.players[1])]
    if record.player_kinds is not None:
        tags += [(black + "Kind", record.player_kinds[0]),
                 (white + "Kind", record.player_kinds[1])]
    tags += [
        ("TimeControl", p.format_time_control(record.time_control)),
        ("Result", record.result),
        ("Termination", record.termination),
    ]
    if record.ending is not None:
        tags.append(("Ending", record.ending))
    if record.rated:
        tags.append(("Rated", "yes"))
    if record.rating_changes is not None:
        tags += [(colour + "Rating", _rating_text(change))
                 for colour, change in zip((black, white), record.rating_changes, strict=True)]
    lines = [f"[{name} {_quote(value)}]" for name, value in tags]
    if record.rating_changes is not None:  # each rating tag, in short, in a comment
        for i, change in enumerate(record.rating_changes, start=len(lines) - 2):
            lines[i] += f" ; {rating_change_text(change)}"
    lines.append("")
    decimals = decimals_needed(ms for m in record.moves for ms in (m.ms_used, m.clock_ms))
    for m in record.moves:
        parts = [f"{m.ply + 1}.", m.move]
        if m.ms_used is not None:
            parts.append(f"{{used {_fixed_seconds(m.ms_used, decimals)}}}")
        if m.clock_ms is not None:
            parts.append(f"{{clk {format_clock_reading(m.clock_ms, decimals)}}}")
        lines.append(" ".join(parts))
    lines.append(record.result)
    return "\n".join(lines) + "\n"


_TAG_RE = re.compile(r'\[\s*([A-Za-z][A-Za-z0-9_]*)\s+"((?:[^"\\]|\\.)*)"\s*\]\s*(?:;.*)?')
_TOKEN_RE = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>;[^\n]*)
      | (?P<brace>\{[^{}]*\})
      | (?P<result>1-0|0-1|\*)
      | (?P<number>\d+)\.
      | (?P<move>[A-Za-z][^\s{}\[\]";]*)""",
    re.VERBOSE,
)
_FIXED_TAGS = ("Game", "Options", "RulesVersion", "GameId", "Date", "TimeControl", "Result",
               "Termination", "Ending", "Rated")
_RATING_FIELDS = ("rating", "deviation", "volatility")


def _rating_text(change: p.RatingUpdate) -> str:
    """A rating change as its tag holds it: ``1500 350 0.06 -> 1662.21 290.23 0.05999968``
    (rating, deviation, volatility before, then after; floats written to round-trip)."""
    def side(when: str) -> str:
        return " ".join(_number(getattr(change, f"{name}_{when}")) for name in _RATING_FIELDS)
    return f"{side('before')} -> {side('after')}"


def rating_change_text(change: p.RatingUpdate) -> str:
    """A rating change as people read it: ``1500? -> 1662? (+162)``, ``?`` marking a
    provisional rating (docs/RATINGS.md)."""
    def shown(rating: float, deviation: float) -> str:
        return f"{round(rating)}{'?' if deviation > PROVISIONAL_DEVIATION else ''}"
    delta = round(change.rating_after) - round(change.rating_before)
    return (f"{shown(change.rating_before, change.deviation_before)} -> "
            f"{shown(change.rating_after, change.deviation_after)} "
            f"({'+' if delta >= 0 else ''}{delta})")


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _parse_rating(text: str, tag: str) -> p.RatingUpdate:
    before, arrow, after = text.partition("->")
    values = before.split() + after.split()
    if not arrow or len(values) != 6:
        raise RecordError(f"[{tag}] {text!r} must be 'rating deviation volatility -> "
                          "rating deviation volatility'")
    try:
        numbers = [float(value) for value in values]
        return p.RatingUpdate(**{f"{name}_{when}": numbers[i * 3 + j]
                                 for i, when in enumerate(("before", "after"))
                                 for j, name in enumerate(_RATING_FIELDS)})
    except (ValueError, p.InvalidMessage) as e:
        raise RecordError(f"[{tag}] {text!r}: {e}") from None


def parse_record(text: str) -> MatchRecord:
    """Parse the text form; RecordError names the line of the first problem.

    Whitespace is free, ``;`` starts a comment to the end of the line, and a ``{...}`` that
    does not start with ``clk`` or ``used`` is a comment. The structure is strict: known tags
    only, each once; move numbers 1, 2, 3... one per ply; annotations after their move.
    """
    lines = text.splitlines()
    tags: dict[str, str] = {}
    body_start = len(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        if not stripped.startswith("["):
            body_start = i
            break
        m = _TAG_RE.fullmatch(stripped)
        if not m:
            raise RecordError(f'line {i + 1}: malformed tag {stripped!r}; expected [Name "value"]')
        name, value = m[1], re.sub(r"\\(.)", r"\1", m[2])
        if name in tags:
            raise RecordError(f"line {i + 1}: tag [{name}] given twice")
        tags[name] = value
    try:
        record_head = _record_from_tags(tags)
    except RecordError as e:
        raise RecordError(f"header: {e}") from None
    moves, result = _parse_moves(lines[body_start:], body_start + 1)
    if result is not None and result != RESULTS[record_head["winner"]]:
        raise RecordError(
            f"the moves end with result {result} but [Result] is {RESULTS[record_head['winner']]}")
    return MatchRecord(moves=tuple(moves), **record_head)


def _record_from_tags(tags: dict[str, str]) -> dict[str, Any]:
    if "Game" not in tags:
        raise RecordError("missing tag [Game]")
    try:
        game = engine.get_game(tags["Game"])
    except ValueError as e:
        raise RecordError(str(e)) from None
    black, white = game.players
    known = {*_FIXED_TAGS, black, white, black + "Kind", white + "Kind", black + "Rating",
             white + "Rating"}
    unknown = sorted(set(tags) - known)
    if unknown:
        raise RecordError(f"unknown tag [{unknown[0]}] (known for {game.key}: "
                          f"{', '.join(sorted(known))})")
    for required in ("Date", black, white, "Result"):
        if required not in tags:
            raise RecordError(f"missing tag [{required}]")
    options: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in tags.get("Options", "").split(","))):
        name, eq, value = item.partition("=")
        if not eq:
            raise RecordError(f"[Options] item {item!r} must be name=value")
        options[name.strip()] = value.strip()
    kinds = (tags.get(black + "Kind"), tags.get(white + "Kind"))
    if (kinds[0] is None) != (kinds[1] is None):
        raise RecordError(f"give both [{black}Kind] and [{white}Kind] or neither")
    result = tags["Result"].strip()
    winners = {v: k for k, v in RESULTS.items()}
    if result not in winners:
        raise RecordError(f"[Result] {result!r} must be 1-0, 0-1 or *")
    winner = winners[result]
    termination = tags.get("Termination", "unterminated" if winner is None else "normal")
    rated = tags.get("Rated", "no").strip()
    if rated not in ("yes", "no"):
        raise RecordError(f"[Rated] {rated!r} must be yes or no")
    ratings = [tags.get(colour + "Rating") for colour in (black, white)]
    if (ratings[0] is None) != (ratings[1] is None):
        raise RecordError(f"give both [{black}Rating] and [{white}Rating] or neither")
    changes = None if ratings[0] is None or ratings[1] is None else (
        _parse_rating(ratings[0], black + "Rating"), _parse_rating(ratings[1], white + "Rating"))
    return {
        "rated": rated == "yes",
        "rating_changes": changes,
        "game": game.key,
        "options": options,
        "rules_version": tags.get("RulesVersion"),
        "game_id": tags.get("GameId"),
        "date": tags["Date"].strip(),
        "players": (tags[black], tags[white]),
        "player_kinds": None if kinds[0] is None else kinds,
        "time_control": _tag_time_control(tags.get("TimeControl", "unlimited")),
        "winner": winner,
        "termination": termination.strip(),
        "ending": tags.get("Ending"),
    }


def _tag_time_control(text: str) -> p.TimeControl:
    """The [TimeControl] tag, in the notation of ``protocol.timecontrol`` (``5m+2s``)."""
    try:
        return p.parse_time_control(text)
    except p.TimeControlSyntaxError as e:
        raise RecordError(f"[TimeControl] {e}") from None


def _parse_moves(lines: list[str], first_line: int) -> tuple[list[RecordMove], str | None]:
    """The moves of the body and its closing result marker (None if absent)."""
    text = "\n".join(lines)
    moves: list[RecordMove] = []
    result: str | None = None
    expect = "number"  # then "move", then "annotation" (or the next number)
    pos = 0
    while pos < len(text):
        line = first_line + text.count("\n", 0, pos)
        m = _TOKEN_RE.match(text, pos)
        if not m:
            snippet = text[pos:].split(None, 1)[0][:30]
            raise RecordError(f"line {line}: unexpected {snippet!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind in ("space", "comment"):
            continue
        if result is not None:
            raise RecordError(f"line {line}: {m[0]!r} after the result {result}")
        if kind == "number":
            if expect == "move":
                raise RecordError(f"line {line}: move number {m[0]} where a move was expected")
            if int(m["number"]) != len(moves) + 1:
                raise RecordError(f"line {line}: move number {m[0]}, expected {len(moves) + 1}.")
            expect = "move"
        elif kind == "move":
            if expect != "move":
                raise RecordError(
                    f"line {line}: move {m[0]!r} without its number {len(moves) + 1}.")
            moves.append(RecordMove(len(moves), m[0]))
            expect = "annotation"
        elif kind == "brace":
            note = _annotation(m[0][1:-1], line)
            if note is None:
                continue
            if expect != "annotation":
                raise RecordError(f"line {line}: annotation {m[0]} not after a move")
            moves[-1] = _annotate(moves[-1], note, line)
        else:
            if expect == "move":
                raise RecordError(f"line {line}: result {m[0]} where a move was expected")
            result = m[0]
    if expect == "move":
        raise RecordError(f"the moves end after move number {len(moves) + 1}. with no move")
    return moves, result


def _annotation(body: str, line: int) -> dict[str, int] | None:
    """``clk``/``used`` values in a brace, or None if the brace is a plain comment."""
    words = body.split()
    if not words or words[0] not in ("clk", "used"):
        return None
    if len(words) % 2:
        raise RecordError(f"line {line}: annotation {{{body}}} must be pairs like 'used 1.9'")
    note: dict[str, int] = {}
    for key, value in zip(words[::2], words[1::2], strict=True):
        if key in note:
            raise RecordError(f"line {line}: {key} given twice for one move")
        if key == "clk":
            note[key] = parse_clock_reading(value)
        elif key == "used":
            note[key] = _parse_seconds(value, "used")
        else:
            raise RecordError(f"line {line}: unknown annotation {key!r} (known: clk, used)")
    return note


def _annotate(move: RecordMove, note: dict[str, int], line: int) -> RecordMove:
    used, clock = move.ms_used, move.clock_ms
    if "used" in note:
        if used is not None:
            raise RecordError(f"line {line}: used given twice for move {move.ply + 1}")
        used = note["used"]
    if "clk" in note:
        if clock is not None:
            raise RecordError(f"line {line}: clk given twice for move {move.ply + 1}")
        clock = note["clk"]
    return RecordMove(move.ply, move.move, used, clock)


# -- the JSON form -----------------------------------------------------------------------------
_JSON_KEYS = ("format", "game_id", "game", "options", "rules_version", "players",
              "player_kinds", "date", "time_control", "winner", "termination", "ending",
              "moves", "rated", "rating_changes")
_MOVE_KEYS = ("ply", "move", "ms_used", "clock_ms")


def to_dict(record: MatchRecord) -> dict[str, Any]:
    """The record as plain JSON-ready data (keys in docs/RECORDS.md); ``ending`` only for
    a game the rules ended, ``rated`` and ``rating_changes`` only for a rated game."""
    data = _plain_dict(record)
    if record.rated:
        data["rated"] = True
    if record.rating_changes is not None:
        data["rating_changes"] = [change.to_wire() for change in record.rating_changes]
    return data


def _plain_dict(record: MatchRecord) -> dict[str, Any]:
    return {
        "format": JSON_FORMAT,
        "game_id": record.game_id,
        "game": record.game,
        "options": dict(record.options),
        "rules_version": record.rules_version,
        "players": list(record.players),
        "player_kinds": None if record.player_kinds is None else list(record.player_kinds),
        "date": record.date,
        "time_control": record.time_control.to_wire(),
        "winner": record.winner,
        "termination": record.termination,
        **({"ending": record.ending} if record.ending is not None else {}),
        "moves": [{"ply": m.ply, "move": m.move, "ms_used": m.ms_used, "clock_ms": m.clock_ms}
                  for m in record.moves],
    }


def from_dict(data: object) -> MatchRecord:
    """Inverse of :func:`to_dict`; unknown keys and wrong types raise RecordError."""
    if not isinstance(data, Mapping):
        raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
    if data.get("format") != JSON_FORMAT:
        raise RecordError(f"key 'format' must be {JSON_FORMAT!r}, got {data.get('format')!r}")
    unknown = sorted(set(data) - set(_JSON_KEYS))
    if unknown:
        raise RecordError(f"unknown key {unknown[0]!r} (known: {', '.join(_JSON_KEYS)})")
    for key in ("game", "players", "date", "winner", "termination", "moves"):
        if key not in data:
            raise RecordError(f"missing key {key!r}")
    options = data.get("options", {})
    if not isinstance(options, Mapping):
        raise RecordError(f"key 'options' must be an object, got {options!r}")
    raw_moves = data["moves"]
    if not isinstance(raw_moves, list):
        raise RecordError("key 'moves' must be a list")
    moves = [_move_from_dict(i, m) for i, m in enumerate(raw_moves)]
    rated = data.get("rated", False)
    if not isinstance(rated, bool):
        raise RecordError(f"key 'rated' must be true or false, got {rated!r}")
    changes = data.get("rating_changes")
    if changes is not None:
        if not isinstance(changes, list) or len(changes) != 2:
            raise RecordError("key 'rating_changes' must be a list of two objects")
        try:
            changes = tuple(p.load_value(p.RatingUpdate, change, f"rating_changes[{i}]")
                            for i, change in enumerate(changes))
        except p.InvalidMessage as e:
            raise RecordError(str(e)) from None
    return MatchRecord(
        rated=rated, rating_changes=changes,
        game=data["game"],
        options=dict(options),
        rules_version=data.get("rules_version"),
        game_id=data.get("game_id"),
        players=data["players"],
        player_kinds=data.get("player_kinds"),
        date=data["date"],
        time_control=data.get("time_control", {"kind": "unlimited"}),
        winner=data["winner"],
        termination=data["termination"],
        ending=data.get("ending"),
        moves=tuple(moves),
    )


def _move_from_dict(i: int, m: object) -> RecordMove:
    if not isinstance(m, Mapping):
        raise RecordError(f"moves[{i}] must be an object, got {m!r}")
    unknown = sorted(set(m) - set(_MOVE_KEYS))
    if unknown:
        raise RecordError(f"moves[{i}] has unknown key {unknown[0]!r}")
    if "ply" not in m or "move" not in m:
        raise RecordError(f"moves[{i}] needs keys 'ply' and 'move'")
    return RecordMove(m["ply"], m["move"], m.get("ms_used"), m.get("clock_ms"))


def to_json(record: MatchRecord, indent: int | None = None) -> str:
    """The record as a JSON text (one line unless ``indent`` is given)."""
    return json.dumps(to_dict(record), indent=indent, ensure_ascii=False)


def from_json(text: str | bytes) -> MatchRecord:
    """Parse a JSON record; RecordError for bad JSON or a bad record."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RecordError(f"not JSON: {e}") from None
    return from_dict(data)


# -- building and checking ---------------------------------------------------------------------
def record_from_state(state: engine.State, *, players: Sequence[str], date: str,
                      termination: str | None = None, winner: int | None = None,
                      **fields: Any) -> MatchRecord:
    """A record of ``state``'s moves (it must come from ``engine.new_game`` + ``play``).

    With no ``termination``, a finished game is ``normal`` with the engine's winner and an
    unfinished one is ``unterminated``. Other ``fields`` (game_id, player_kinds,
    time_control) pass through; timing per move needs RecordMoves built by the caller.
    """
    if termination is None:
        termination = "normal" if state.is_over else "unterminated"
        winner = state.winner
    ending = state.ending if termination == "normal" else None
    return MatchRecord(game=state.game.key, options=dict(state.options),
                       players=_pair("players", players), date=date, termination=termination,
                       winner=winner, ending=None if ending is None else ending.text,
                       moves=tuple(RecordMove(i, m) for i, m in enumerate(state.moves)),
                       **fields)


def match_record_from_wire(record: p.Record | Mapping[str, Any],
                           rules_version: str | None = None) -> MatchRecord:
    """The match record of the server's record of a game: a ``protocol.Record`` (from
    ``get_game``), or its plain-data form (a line of ``server dump``), checked by the
    protocol (RecordError saying which field is wrong otherwise).

    The wire form has no rules version: pass the stored one, else the engine's is assumed.
    A game still ``waiting`` or ``playing`` becomes ``unterminated``; ``created_ms`` becomes
    the date.
    """
    if not isinstance(record, p.Record):
        try:
            record = p.load_value(p.Record, record, "record")
        except p.InvalidMessage as e:
            raise RecordError(f"malformed wire record: {e}") from None
    result = record.result if record.status == "over" else None
    return MatchRecord(
        game=record.game, options=dict(record.options), rules_version=rules_version,
        game_id=record.game_id, players=(record.players[0].name, record.players[1].name),
        player_kinds=(record.players[0].kind, record.players[1].kind),
        date=utc_date(record.created_ms),
        time_control=record.clock,
        winner=None if result is None else result.winner,
        termination="unterminated" if result is None else result.reason,
        ending=None if result is None or result.ending is None else result.ending.text,
        moves=tuple(RecordMove(m.ply, m.move, m.ms_used, m.clock_ms) for m in record.moves),
        rated=bool(record.rated), rating_changes=record.rating_changes,
    )


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify` found. ``ok`` is True exactly when ``problems`` is empty.

    ``legal_plies`` moves replayed legally (all of them unless ``illegal_ply`` is set);
    ``engine_over``/``engine_winner``/``position`` describe the state after them.
    """

    ok: bool
    legal_plies: int
    illegal_ply: int | None
    engine_over: bool
    engine_winner: int | None
    position: str
    problems: tuple[str, ...]


def verify(record: MatchRecord) -> VerifyReport:
    """Replay ``record`` through the engine; check every move and the stored result.

    * every move must be legal and written in canonical form;
    * ``normal``: the game is over by the rules and the engine's winner is the record's;
    * ``resign``/``abandon``/``abort``/``unterminated``: the game is not over by the rules
      after the last move (otherwise it ended normally, at that move);
    * ``timeout``: the same, and the winner is the player not to move (the clock that runs
      is the mover's);
    * a record made under another rules version is reported, since it cannot be checked.
    """
    game = engine.get_game(record.game)
    problems: list[str] = []
    if record.rules_version != game.rules_version:
        problems.append(f"recorded under rules version {record.rules_version}; "
                        f"this engine implements version {game.rules_version}")
    state = engine.new_game(record.game, **record.options)
    illegal: int | None = None
    for m in record.moves:
        try:
            parsed = state.parse_move(m.move)
        except engine.IllegalMove as e:
            illegal = m.ply
            problems.append(f"{_numbered(m.ply)}: {m.move} is illegal: {e}")
            break
        if parsed.text != m.move:
            problems.append(f"{_numbered(m.ply)}: {m.move!r} is not canonical "
                            f"(canonical: {parsed.text})")
        state = state.play(parsed)
    if illegal is None:
        problems.extend(_result_problems(record, state))
    return VerifyReport(
        ok=not problems,
        legal_plies=state.ply,
        illegal_ply=illegal,
        engine_over=state.is_over,
        engine_winner=state.winner,
        position=state.to_text(),
        problems=tuple(problems),
    )


def _result_problems(record: MatchRecord, state: engine.State) -> list[str]:
    term, colours = record.termination, record.colours
    if term == "normal":
        if not state.is_over:
            return [f"termination is normal but the game is not over by the rules after "
                    f"{_numbered(state.ply - 1)}; {colours[state.to_move]} is to move"]
        if state.winner != record.winner:
            return [f"the rules give the win to {_who(state.winner, colours)}, "
                    f"the record to {_who(record.winner, colours)}"]
        ending = state.ending
        if record.ending is not None and ending is not None and record.ending != ending.text:
            return [f"the record says the game ended with {record.ending!r}; "
                    f"the rules say {ending.text!r}"]
        return []
    if state.is_over:
        return [f"the game ended by the rules at its last move, {_numbered(state.ply - 1)}, "
                f"won by {_who(state.winner, colours)}, so it cannot end by {term}; "
                "termination should be normal"]
    if term == "timeout" and record.winner == state.to_move:
        return [f"{colours[state.to_move]} was to move, so only their clock ran, yet the "
                "record says they won on time"]
    return []


def _numbered(ply: int) -> str:
    """A move as files number it: ``move 5`` in the text form (move numbers from 1), with
    ``ply 4`` for the JSON form and the wire (plies from 0): ``move 5 (ply 4)``."""
    return f"move {ply + 1} (ply {ply})"


def _who(winner: int | None, colours: tuple[str, str]) -> str:
    return "nobody" if winner is None else f"{colours[winner]} (player {winner})"
