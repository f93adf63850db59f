"""The arguments of ``seek`` and ``challenge`` in the text client's command language.

    seek hadron size=5 5m+3s        game, options, time control (any order after the game)
    challenge bob xodd 30s/move color=white
    seek xodd 5m+3s rated 1400-1800     rated (or casual, the default), a rating range

Games are named by key or display name, or a unique prefix of one (``hex``). Options are
checked by the engine's own option schema. Time controls are written in the protocol's
notation (``protocol.timecontrol``): ``5m+3s``, ``30s/move``, ``3d/move``, ``unlimited``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import engine
import protocol as p

DEFAULT_CLOCK: p.TimeControl = p.Fischer(base_ms=300_000, increment_ms=3_000)
RANGE = re.compile(r"\d{3,4}-\d{0,4}|-\d{3,4}")
"""A seek's rating range: 1400-1800, 1400- (at least), -1800 (at most)."""



class OfferError(ValueError):
    """An argument the user typed is not understood; the message says what is expected."""


@dataclass(frozen=True)
class Offer:
    """A game to propose: key, options (checked), clock, and the seat asked for."""

    game: str
    options: dict[str, int | str] = field(default_factory=dict)
    clock: p.TimeControl = DEFAULT_CLOCK
    color: Any = "random"  # "random", 0 or 1 (protocol.Color)
    rated: bool = False
    rating_range: tuple[int | None, int | None] = (None, None)


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
    rated = False
    rating_range: tuple[int | None, int | None] = (None, None)
    for word in words[1:]:
        if word.lower() in ("rated", "casual"):
            rated = word.lower() == "rated"
            continue
        if RANGE.fullmatch(word):
            low, _, high = word.partition("-")
            rating_range = (int(low) if low else None, int(high) if high else None)
            continue
        name, eq, value = word.partition("=")
        if eq:
            if name.lower() in ("color", "colour", "as") and allow_color:
                color = _colour(game, value)
            else:
                raw[name.lower()] = value
        elif clock is None:
            try:
                clock = p.parse_time_control(word)
            except p.TimeControlSyntaxError as exc:
                raise OfferError(str(exc)) from None
        else:
            raise OfferError(f"two time controls given: {format_words(words)}")
    try:
        options = engine.get_game(game).normalize_options(raw)
    except ValueError as exc:
        raise OfferError(str(exc)) from None
    return Offer(game, options, clock if clock is not None else DEFAULT_CLOCK, color, rated,
                 rating_range)


def format_words(words: Sequence[str]) -> str:
    return " ".join(words)
