"""The arguments of ``seek`` and ``challenge`` in the text client's command language.

    seek hadron size=5 5+3          game, options, time control (any order after the game)
    challenge bob xodd 30s/move color=white

Games are named by key or display name, or a unique prefix of one (``hex``). Options are
checked by the engine's own option schema. Time controls:

    5+3        Fischer: 5 minutes, 3 seconds added per move (``0.5+0``, ``90s+2`` too)
    30s/move   30 seconds for every move (``2m/move``)
    3d         correspondence, 3 days per move (``3d/move``)
    -          no clock (``unlimited``)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import engine
import protocol as p

DEFAULT_CLOCK: p.TimeControl = p.Fischer(base_ms=300_000, increment_ms=3_000)

_NUMBER = r"\d+(?:\.\d+)?"
_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000}


class OfferError(ValueError):
    """An argument the user typed is not understood; the message says what is expected."""


@dataclass(frozen=True)
class Offer:
    """A game to propose: key, options (checked), clock, and the seat asked for."""

    game: str
    options: dict[str, int | str] = field(default_factory=dict)
    clock: p.TimeControl = DEFAULT_CLOCK
    color: Any = "random"  # "random", 0 or 1 (protocol.Color)


def find_game(word: str) -> str:
    """The game key meant by ``word``: a key, a name or a unique prefix of one."""
    w = word.lower()
    names = {key: {key, g.name.lower()} for key, g in engine.GAMES.items()}
    exact = [key for key, ns in names.items() if w in ns]
    if exact:
        return exact[0]
    prefixed = [key for key, ns in names.items() if any(n.startswith(w) for n in ns)]
    if len(prefixed) == 1:
        return prefixed[0]
    known = ", ".join(engine.GAMES)
    if prefixed:
        raise OfferError(f"{word!r} could be {' or '.join(prefixed)}")
    raise OfferError(f"unknown game {word!r} (games: {known})")


def _ms(amount: str, unit: str) -> int:
    return round(float(amount) * _UNITS_MS[unit])


def parse_clock(text: str) -> p.TimeControl:
    """A time control in the client's notation (see the module docstring)."""
    t = text.strip().lower()
    try:
        if t in ("-", "none", "unlimited", "no-clock"):
            return p.Unlimited()
        if m := re.fullmatch(rf"({_NUMBER})([smh]?)(?:\+({_NUMBER})s?)?", t):
            base = _ms(m[1], m[2] or "m")
            return p.Fischer(base_ms=base, increment_ms=_ms(m[3] or "0", "s"))
        if m := re.fullmatch(rf"({_NUMBER})([smh]?)/move", t):
            return p.PerMove(per_move_ms=_ms(m[1], m[2] or "s"))
        if m := re.fullmatch(r"(\d+)d(?:/move)?", t):
            return p.Correspondence(days_per_move=int(m[1]))
    except p.ProtocolError as exc:
        why = str(exc).split(": ", 1)[-1]
        raise OfferError(f"time control {text!r} is out of range: {why}") from None
    raise OfferError(f"time control {text!r} not understood; use 5+3 (minutes+seconds), "
                     "30s/move, 3d (days per move) or - (no clock)")


def _colour(game: str, value: str) -> Any:
    v = value.lower()
    if v in ("random", "any", "?"):
        return "random"
    colours = [c.lower() for c in engine.get_game(game).players]
    if v in colours:
        return colours.index(v)
    if v in ("0", "1"):
        return int(v)
    raise OfferError(f"color must be random or one of {', '.join(colours)}, got {value!r}")


def parse_offer(words: Sequence[str], *, allow_color: bool = False) -> Offer:
    """``GAME [NAME=VALUE ...] [TIME]`` (and ``color=C`` for challenges)."""
    if not words:
        raise OfferError("which game? one of " + ", ".join(engine.GAMES))
    game = find_game(words[0])
    raw: dict[str, str] = {}
    clock: p.TimeControl | None = None
    color: Any = "random"
    for word in words[1:]:
        name, eq, value = word.partition("=")
        if eq:
            if name.lower() in ("color", "colour", "as") and allow_color:
                color = _colour(game, value)
            else:
                raw[name.lower()] = value
        elif clock is None:
            clock = parse_clock(word)
        else:
            raise OfferError(f"two time controls given: {format_words(words)}")
    try:
        options = engine.get_game(game).normalize_options(raw)
    except ValueError as exc:
        raise OfferError(str(exc)) from None
    return Offer(game, options, clock if clock is not None else DEFAULT_CLOCK, color)


def format_words(words: Sequence[str]) -> str:
    return " ".join(words)
