"""Text forms of what a bot operator types: durations, time controls, seeks, game rules.

Each ``parse_*`` has a ``format_*`` that it inverts (``parse(format(x)) == x``)::

    parse_clock("fischer 5m+3s")          -> Fischer(base_ms=300000, increment_ms=3000)
    parse_clock("per_move 2s")            -> PerMove(per_move_ms=2000)
    parse_seek("hadron size=5 per_move 2s") -> SeekSpec("hadron", {"size": 5}, PerMove(2000))
    parse_game_rules("hadron:size=5..9,xodd:size=9|13,yodd")

A time control is one of ``unlimited``, ``per_move DURATION``, ``fischer BASE+INCREMENT``
(or ``fischer BASE INCREMENT``) and ``correspondence DAYS`` (``3`` or ``3d``). A duration is
a number with an optional unit: ``500ms``, ``2s``, ``1.5s``, ``5m``, ``1h``; a bare number
is seconds. :func:`budget_for` turns a game's clock into the :class:`TimeBudget` a bot
thinks with. Everything raises ``ValueError`` with a message fit for a command line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import engine
import protocol as p
from clients.bots.base import TimeBudget

CLOCK_KINDS = ("fischer", "per_move", "correspondence", "unlimited")
UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?")


# -- durations and clocks ----------------------------------------------------------------------
def parse_duration_ms(text: str) -> int:
    """Milliseconds in ``text``: ``500ms``, ``2s``, ``1.5s``, ``5m``, ``1h``; bare: seconds."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (examples: 500ms, 2s, 1.5s, 5m)")
    return round(float(match.group(1)) * UNITS_MS[match.group(2) or "s"])


def format_duration_ms(ms: int) -> str:
    """The shortest exact text for ``ms``: ``5m``, ``2s``, ``1.5s``, ``250ms``."""
    if ms and ms % 60_000 == 0:
        return f"{ms // 60_000}m"
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    if ms % 100 == 0:
        return f"{ms / 1000:g}s"
    return f"{ms}ms"


def parse_clock(text: str) -> p.TimeControl:
    """A time control from text (see the module doc); the protocol validates its bounds."""
    words = text.replace("+", " ").split()
    if not words:
        raise ValueError("empty time control")
    kind, args = words[0].lower().replace("-", "_"), words[1:]
    try:
        if kind == "unlimited" and not args:
            return p.Unlimited()
        if kind == "per_move" and len(args) == 1:
            return p.PerMove(per_move_ms=parse_duration_ms(args[0]))
        if kind == "fischer" and len(args) in (1, 2):
            increment = parse_duration_ms(args[1]) if len(args) == 2 else 0
            return p.Fischer(base_ms=parse_duration_ms(args[0]), increment_ms=increment)
        if kind == "correspondence" and len(args) == 1:
            return p.Correspondence(days_per_move=int(args[0].lower().removesuffix("d")))
    except p.InvalidMessage as e:
        raise ValueError(f"time control {text!r}: {e}") from None
    raise ValueError(f"not a time control: {text!r} (examples: 'per_move 2s', "
                     "'fischer 5m+3s', 'correspondence 3d', 'unlimited')")


def format_clock(clock: p.TimeControl) -> str:
    """The text :func:`parse_clock` reads back to ``clock``."""
    if isinstance(clock, p.PerMove):
        return f"per_move {format_duration_ms(clock.per_move_ms)}"
    if isinstance(clock, p.Fischer):
        return (f"fischer {format_duration_ms(clock.base_ms)}"
                f"+{format_duration_ms(clock.increment_ms)}")
    if isinstance(clock, p.Correspondence):
        return f"correspondence {clock.days_per_move}d"
    return "unlimited"


def budget_for(clock: p.TimeControl, left_ms: int | None, move_time_ms: int | None = None
               ) -> TimeBudget:
    """The budget for a move under ``clock`` with ``left_ms`` on the mover's clock now.

    Fischer gives the remaining time and increment; a per-move clock gives what is left of
    this move's time; correspondence and unlimited games give no limit (the bot's default
    think time). ``move_time_ms`` caps the time per move whatever the clock.
    """
    budget = TimeBudget(remaining_ms=None)
    if isinstance(clock, p.Fischer):
        left = clock.base_ms if left_ms is None else left_ms
        budget = TimeBudget(remaining_ms=max(0, left), increment_ms=clock.increment_ms)
    elif isinstance(clock, p.PerMove):
        left = clock.per_move_ms if left_ms is None else min(left_ms, clock.per_move_ms)
        budget = TimeBudget(remaining_ms=None, per_move_ms=max(0, left))
    if move_time_ms is not None:
        cap = move_time_ms if budget.per_move_ms is None else min(budget.per_move_ms,
                                                                  move_time_ms)
        budget = TimeBudget(budget.remaining_ms, budget.increment_ms, cap)
    return budget


# -- options, seeks and game rules ---------------------------------------------------------------
def _value(text: str) -> int | str:
    text = text.strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_options(game: str, pairs: list[str]) -> dict[str, int | str]:
    """``["size=5"]`` for ``game`` as complete, normalised options (defaults filled in)."""
    options: dict[str, int | str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"an option is NAME=VALUE, got {pair!r}")
        options[name.strip().lower()] = _value(value)
    return dict(engine.get_game(game).normalize_options(options))


def format_options(options: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())


@dataclass(frozen=True, slots=True)
class GameSpec:
    """A game and its complete options: ``hadron size=5``."""

    game: str
    options: dict[str, int | str] = field(default_factory=dict)

    def __str__(self) -> str:
        return " ".join([self.game, format_options(self.options)]).strip()


def parse_game_spec(text: str) -> GameSpec:
    """``GAME [NAME=VALUE ...]``, e.g. ``hexifact board=hex4``; options normalised."""
    words = text.split()
    if not words:
        raise ValueError("empty game: expected e.g. 'hadron size=5'")
    game = words[0].lower()
    engine.get_game(game)  # ValueError naming the known games
    return GameSpec(game, parse_options(game, words[1:]))


@dataclass(frozen=True, slots=True)
class SeekSpec:
    """A seek to keep open: a game, its complete options and a time control."""

    game: str
    options: dict[str, int | str]
    clock: p.TimeControl

    def __str__(self) -> str:
        return " ".join(w for w in (self.game, format_options(self.options),
                                    format_clock(self.clock)) if w)

    def matches(self, game: str, options: Mapping[str, Any], clock: p.TimeControl) -> bool:
        return (self.game, self.options, self.clock) == (game, dict(options), clock)


def parse_seek(text: str) -> SeekSpec:
    """``GAME [NAME=VALUE ...] CLOCK``, e.g. ``hadron size=5 per_move 2s``."""
    words = text.split()
    if not words:
        raise ValueError("empty seek: expected e.g. 'hadron size=5 per_move 2s'")
    option_words = [w for w in words[1:] if "=" in w]
    clock_words = [w for w in words[1:] if "=" not in w]
    if not clock_words:
        raise ValueError(f"seek {text!r} names no time control (e.g. 'per_move 2s')")
    spec = parse_game_spec(" ".join([words[0], *option_words]))
    return SeekSpec(spec.game, spec.options, parse_clock(" ".join(clock_words)))


@dataclass(frozen=True, slots=True)
class Allowed:
    """The values an option may take: listed values and inclusive integer ranges."""

    values: frozenset[int | str] = frozenset()
    ranges: tuple[tuple[int, int], ...] = ()

    def __contains__(self, value: object) -> bool:
        if value in self.values or (isinstance(value, str) and value.lower() in self.values):
            return True
        return isinstance(value, int) and any(lo <= value <= hi for lo, hi in self.ranges)

    def __str__(self) -> str:
        parts = [f"{lo}..{hi}" for lo, hi in self.ranges]
        parts += sorted(str(v) for v in self.values)
        return "|".join(parts)


def parse_allowed(text: str) -> Allowed:
    """``5|7|9``, ``5..9``, ``hex4|hex5`` or a mix: the values an option may take."""
    values: set[int | str] = set()
    ranges: list[tuple[int, int]] = []
    for part in text.split("|"):
        part = part.strip().lower()
        low, sep, high = part.partition("..")
        if sep:
            try:
                ranges.append((int(low), int(high)))
            except ValueError:
                raise ValueError(f"a range is LOW..HIGH with integers, got {part!r}") from None
        elif part:
            values.add(_value(part))
        else:
            raise ValueError(f"empty value in {text!r}")
    return Allowed(frozenset(values), tuple(ranges))


GameRules = dict[str, dict[str, Allowed]]
"""Allowed games and, per game, constraints on options (an option not named: any value)."""


def parse_game_rules(text: str) -> GameRules | None:
    """``hadron:size=5..9,xodd:size=9|13,yodd``; ``all`` (or ``*``): every game, any options.

    Returns None for every game. Unknown games and options are refused.
    """
    if text.strip().lower() in ("all", "*", "any"):
        return None
    rules: GameRules = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        game, *constraints = item.split(":")
        game = game.strip().lower()
        known = {o.name for o in engine.get_game(game).options}
        allowed: dict[str, Allowed] = {}
        for constraint in constraints:
            name, sep, values = constraint.partition("=")
            name = name.strip().lower()
            if not sep:
                raise ValueError(f"{item!r}: a constraint is OPTION=VALUES, got {constraint!r}")
            if name not in known:
                raise ValueError(f"{game} has no option {name!r} (its options: "
                                 f"{', '.join(sorted(known)) or 'none'})")
            allowed[name] = parse_allowed(values)
        rules[game] = allowed
    if not rules:
        raise ValueError("no game named: expected e.g. 'hadron,xodd:size=9' or 'all'")
    return rules


def format_game_rules(rules: GameRules | None) -> str:
    if rules is None:
        return "all"
    return ",".join(":".join([game, *(f"{k}={v}" for k, v in allowed.items())])
                    for game, allowed in rules.items())
