"""Time controls: the four kinds, their wire and stored form, their arithmetic, their notation.

This is the one home of the concept. A time control is a value of :data:`TimeControl`: one
of :class:`Fischer`, :class:`PerMove`, :class:`Correspondence` and :class:`Unlimited`,
told apart on the wire (and in the database, and in JSON records) by its ``kind``. Each
kind knows its own arithmetic (:meth:`initial_ms`, :meth:`after_move`), so nobody else
branches on kind strings, and its own notation.

The notation is what a person types and reads everywhere (the terminal client, ``tessera
bot --seek``, ``tessera arena --clock``, text records, the docs). Units are always written,
so nothing is ambiguous::

    5m+3s        Fischer: 5 minutes, 3 seconds added after each move
    1m30s+0s     Fischer without increment (the ``+`` part is required)
    30s/move     a fixed time for every move
    3d/move      correspondence: days per move
    unlimited    no clock

A duration is hours, minutes, seconds and milliseconds in that order, each optional but at
least one: ``1h``, ``1h30m``, ``90s`` (written back as ``1m30s``), ``1.5s``, ``250ms``
(written back as ``0.25s``). :func:`parse_time_control` reads any of these and
:func:`format_time_control` writes the canonical one, so ``parse(format(tc)) == tc``.
Old notations (``5+3``, ``300+2``, ``fischer 5m+3s``, ``per_move 2s``, ``correspondence
3``, ``-``) are refused with an error that shows the new form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from protocol._schema import Ints, Struct, compile_type
from protocol.errors import InvalidMessage
from protocol.limits import MAX_CLOCK_MS, MAX_DAYS_PER_MOVE, MAX_INCREMENT_MS, MIN_CLOCK_MS

__all__ = [
    "Correspondence",
    "Fischer",
    "PerMove",
    "TimeControl",
    "TimeControlSyntaxError",
    "Unlimited",
    "format_duration_ms",
    "format_time_control",
    "parse_duration_ms",
    "parse_time_control",
    "time_control_from_map",
]

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Fischer(Struct):
    """Fischer clock: ``base_ms`` to start with, ``increment_ms`` added after each move."""

    TAG_KEY = "kind"
    TAG = "fischer"
    CARRIES_OVER: ClassVar[bool] = True
    base_ms: Annotated[int, Ints(MIN_CLOCK_MS, MAX_CLOCK_MS)]
    increment_ms: Annotated[int, Ints(0, MAX_INCREMENT_MS)]

    def initial_ms(self) -> int | None:
        return self.base_ms

    def after_move(self, left_ms: int, used_ms: int) -> int | None:
        return left_ms - used_ms + self.increment_ms

    def notation(self) -> str:
        return f"{format_duration_ms(self.base_ms)}+{format_duration_ms(self.increment_ms)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PerMove(Struct):
    """A fixed time for every move; unused time is not carried over."""

    TAG_KEY = "kind"
    TAG = "per_move"
    CARRIES_OVER: ClassVar[bool] = False
    per_move_ms: Annotated[int, Ints(MIN_CLOCK_MS, MAX_CLOCK_MS)]

    def initial_ms(self) -> int | None:
        return self.per_move_ms

    def after_move(self, left_ms: int, used_ms: int) -> int | None:
        return self.per_move_ms

    def notation(self) -> str:
        return f"{format_duration_ms(self.per_move_ms)}/move"


@dataclass(frozen=True, slots=True, kw_only=True)
class Correspondence(Struct):
    """Days per move, for slow games played over many sessions."""

    TAG_KEY = "kind"
    TAG = "correspondence"
    CARRIES_OVER: ClassVar[bool] = False
    days_per_move: Annotated[int, Ints(1, MAX_DAYS_PER_MOVE)]

    def initial_ms(self) -> int | None:
        return self.days_per_move * DAY_MS

    def after_move(self, left_ms: int, used_ms: int) -> int | None:
        return self.days_per_move * DAY_MS

    def notation(self) -> str:
        return f"{self.days_per_move}d/move"


@dataclass(frozen=True, slots=True, kw_only=True)
class Unlimited(Struct):
    """No clock."""

    TAG_KEY = "kind"
    TAG = "unlimited"
    CARRIES_OVER: ClassVar[bool] = False

    def initial_ms(self) -> int | None:
        return None

    def after_move(self, left_ms: int, used_ms: int) -> int | None:
        return None

    def notation(self) -> str:
        return "unlimited"


TimeControl = Fischer | PerMove | Correspondence | Unlimited
"""A time control, told apart on the wire by its ``kind``.

Every kind has ``initial_ms()`` (each player's time when their first clocked turn starts;
None without a clock), ``after_move(left_ms, used_ms)`` (the mover's time after a move
on a running clock), ``CARRIES_OVER`` (whether time saved on one move is kept for later
ones) and ``notation()``.
"""

_LOADER = compile_type(TimeControl)


def time_control_from_map(data: Mapping[str, Any], path: str = "clock") -> TimeControl:
    """The time control of its wire or stored form (``{"kind": "fischer", ...}``), checked:
    InvalidMessage (a ValueError) naming the bad field otherwise."""
    control: TimeControl = _LOADER.load(dict(data), path)
    return control


# -- notation ---------------------------------------------------------------------------------
_UNITS_MS = (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))
_DURATION = re.compile(
    r"(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+(?:\.\d{1,3})?|\.\d{1,3})s)?"
    r"(?:(?P<ms>\d+)ms)?")
_BARE_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*\+\s*(\d+(?:\.\d+)?)")
_OLD_WORDS = re.compile(r"(fischer|per[_-]move|correspondence)\s+(.*)")

EXAMPLES = "5m+3s, 30s/move, 3d/move or unlimited"


class TimeControlSyntaxError(ValueError):
    """Text that is not a time control in the notation; the message shows what to write."""


def parse_duration_ms(text: str) -> int:
    """Milliseconds in a duration with units: ``1h30m``, ``5m``, ``1.5s``, ``250ms``."""
    t = text.strip().lower()
    match = _DURATION.fullmatch(t)
    if not t or match is None or not any(match.groupdict().values()):
        if re.fullmatch(r"\d+(?:\.\d+)?", t):
            raise TimeControlSyntaxError(
                f"the duration {text!r} needs a unit: {t}s (seconds) or {t}m (minutes)")
        raise TimeControlSyntaxError(
            f"not a duration: {text!r} (examples: 5m, 1m30s, 1.5s, 250ms, 1h)")
    parts = match.groupdict()
    total = 0.0
    for unit, scale in _UNITS_MS:
        if parts[unit]:
            total += float(parts[unit]) * scale
    return round(total)


def format_duration_ms(ms: int) -> str:
    """The canonical text of a duration: ``5m``, ``1m30s``, ``1.5s``, ``0s``."""
    if ms < 0:
        raise ValueError(f"a duration cannot be negative: {ms}")
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    if millis:
        text += f"{seconds}.{millis:03d}".rstrip("0") + "s"
    elif seconds or not text:
        text += f"{seconds}s"
    return text


def format_time_control(control: TimeControl) -> str:
    """The canonical notation of a time control (see the module docstring)."""
    return control.notation()


def parse_time_control(text: str) -> TimeControl:
    """A time control from its notation; TimeControlSyntaxError (a ValueError) saying what
    to write otherwise, including for the old notations and for values out of range."""
    t = " ".join(text.strip().lower().split())
    try:
        if t == "unlimited":
            return Unlimited()
        if t.endswith("/move"):
            amount = t.removesuffix("/move").strip()
            if re.fullmatch(r"\d+d", amount):
                return Correspondence(days_per_move=int(amount[:-1]))
            return PerMove(per_move_ms=parse_duration_ms(amount))
        if "+" in t and not _BARE_PAIR.fullmatch(t) and not _OLD_WORDS.fullmatch(t):
            base, _, increment = t.partition("+")
            return Fischer(base_ms=parse_duration_ms(base),
                           increment_ms=parse_duration_ms(increment))
    except InvalidMessage:
        raise TimeControlSyntaxError(
            f"time control {text!r} is out of range: {_allowed(t)}") from None
    raise TimeControlSyntaxError(_what_to_write(text, t))


def _allowed(t: str) -> str:
    """The range of a time control of the form ``t`` has, in its own notation."""
    shortest, longest = format_duration_ms(MIN_CLOCK_MS), format_duration_ms(MAX_CLOCK_MS)
    if re.fullmatch(r"\d+d/move", t):
        return f"a correspondence move has 1d to {MAX_DAYS_PER_MOVE}d (1d/move to " \
               f"{MAX_DAYS_PER_MOVE}d/move)"
    if t.endswith("/move"):
        return f"a move has {shortest} to {longest} ({shortest}/move to {longest}/move)"
    return (f"the base time is {shortest} to {longest} and the increment 0s to "
            f"{format_duration_ms(MAX_INCREMENT_MS)} (1s+0s to {longest}+"
            f"{format_duration_ms(MAX_INCREMENT_MS)})")


def _what_to_write(text: str, t: str) -> str:
    """The error for text that is no time control, showing the notation it should be."""
    hint = None
    if t in ("-", "none", "no-clock", "no clock", "∞"):
        hint = "unlimited"
    elif (bare := _BARE_PAIR.fullmatch(t)) is not None:
        a, b = bare.groups()
        as_seconds = format_duration_ms(round(float(a) * 1000))
        hint = f"{a}m+{b}s (minutes+seconds) or {as_seconds}+{b}s (seconds+seconds)"
    elif (old := _OLD_WORDS.fullmatch(t)) is not None:
        kind, rest = old.group(1).replace("-", "_"), old.group(2).strip()
        if kind == "correspondence":
            hint = f"{rest.removesuffix('d')}d/move"
        elif kind == "per_move":
            hint = f"{rest}/move"
        else:
            base, _, increment = rest.replace(" ", "+", 1).partition("+")
            hint = f"{base}+{increment or '0s'}"
    elif re.fullmatch(r"\d+d", t):
        hint = f"{t}/move"
    elif (alone := _DURATION.fullmatch(t)) is not None and any(alone.groupdict().values()):
        hint = f"{t}+0s (Fischer) or {t}/move (per move)"
    if hint is not None:
        return f"time control {text!r} is written differently now: write {hint}"
    return f"not a time control: {text!r} (examples: {EXAMPLES})"
