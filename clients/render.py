"""Text views of games for the terminal: boards in colour, clocks, the engine's hints.

Everything here is drawn from the engine's metadata and ``State`` methods, never from
knowledge of a particular game: the board layout is ``State.render`` (square and hex boards,
coordinates, last move bracketed), stones are told apart by ``Game.stone_chars``, and hints
are ``State.summary()`` laid out generically. Colours are ANSI escapes, added only when
asked for, so the same text serves terminals, pipes and tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import engine
import protocol as p

RESET = "\x1b[0m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
MARK = "\x1b[1;33m"  # the brackets around the last move's cells
# Stone styles by the colour's name (engine metadata); unknown names fall back by seat.
COLOUR_STYLES: dict[str, str] = {
    "red": "\x1b[1;31m",
    "blue": "\x1b[1;34m",
    "black": "\x1b[1;30;47m",
    "white": "\x1b[1;97;100m",
}
SEAT_STYLES = ("\x1b[1;33m", "\x1b[1;36m")
MAX_LISTED_CELLS = 40

Player = tuple[str, str]
"""A seat's occupant for display: (name, kind), kind being human, guest, bot or free text."""

_CELL_RE = re.compile(r"[a-z][0-9]+")


def style_of(colour: str, seat: int) -> str:
    """The ANSI style of a seat's stones, chosen by the colour's name."""
    return COLOUR_STYLES.get(colour.lower(), SEAT_STYLES[seat])


def paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color and style else text


def move_cells(state: engine.State, move: str | None) -> list[str]:
    """The board cells named in a move's text (``Bc3,Wd4`` -> c3, d4; ``c3-c6`` -> both)."""
    if not move:
        return []
    names = state.board.by_name
    return [cell for cell in _CELL_RE.findall(move.lower()) if cell in names]


def board_text(state: engine.State, *, mark: Sequence[str] = (), color: bool = False) -> str:
    """The engine's drawing of ``state`` with ``mark`` bracketed, coloured if ``color``."""
    drawing = state.render(mark=list(mark))
    if not color:
        return drawing
    styles = {ch: style_of(name, seat) for seat, (ch, name)
              in enumerate(zip(state.game.stone_chars, state.game.players, strict=True))}
    out: list[str] = []
    for line in drawing.splitlines():
        if not any(ch.isdigit() for ch in line):
            out.append(paint(line, DIM, True))  # column letters
            continue
        out.append("".join(
            paint(ch, styles[ch], True) if ch in styles
            else paint(ch, MARK, True) if ch in "[]"
            else paint(ch, DIM, True) if ch.isdigit() or ch == "."
            else ch
            for ch in line))
    return "\n".join(out)


def format_ms(ms: int) -> str:
    """A clock reading: ``1:02:03``, ``4:58``, or tenths under a minute (``9.4``)."""
    ms = max(ms, 0)
    if ms < 60_000:
        return f"{ms // 1000}.{ms % 1000 // 100}"
    seconds = ms // 1000
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{sec:02d}" if hours else f"{minute}:{sec:02d}"


def _seconds(ms: int) -> str:
    whole, frac = divmod(ms, 1000)
    return f"{whole}.{frac:03d}".rstrip("0").rstrip(".") if frac else str(whole)


def format_clock(clock: p.TimeControl) -> str:
    """A time control as players write it: ``5+3``, ``30s/move``, ``3d/move``, ``-``."""
    if isinstance(clock, p.Fischer):
        minutes, rest = divmod(clock.base_ms, 60_000)
        base = str(minutes) if not rest else _seconds(clock.base_ms) + "s"
        return f"{base}+{_seconds(clock.increment_ms)}"
    if isinstance(clock, p.PerMove):
        return f"{_seconds(clock.per_move_ms)}s/move"
    if isinstance(clock, p.Correspondence):
        return f"{clock.days_per_move}d/move"
    return "-"


def format_options(options: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())


def describe_offer(game: str, options: Mapping[str, Any], clock: p.TimeControl) -> str:
    """``Hadron size=5 5+3``: a seek's or challenge's game, options and clock."""
    name = engine.get_game(game).name if game in engine.GAMES else game
    opts = format_options(options)
    return f"{name}{' ' + opts if opts else ''} {format_clock(clock)}"


def _value_text(value: Any, nested: bool = False) -> str:
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        if nested:
            return "[" + " ".join(_value_text(v) for v in value) + "]"
        items = [_value_text(v, nested=True) for v in value]
        if len(items) > MAX_LISTED_CELLS:
            return " ".join(items[:MAX_LISTED_CELLS]) + f" ... (+{len(items) - MAX_LISTED_CELLS})"
        return " ".join(items)
    return str(value)


def summary_lines(summary: Mapping[str, Any], colours: Sequence[str]) -> list[str]:
    """``State.summary()`` as ``name: value`` lines; pairs of numbers are read per seat."""
    lines: list[str] = []
    for key, value in summary.items():
        label = key.replace("_", " ")
        per_seat = (isinstance(value, list | tuple) and len(value) == len(colours)
                    and all(isinstance(v, int | list | tuple) and not isinstance(v, bool)
                            for v in value))
        if per_seat:
            text = ", ".join(f"{c} {_value_text(v, nested=True)}"
                             for c, v in zip(colours, value, strict=True))
        else:
            text = _value_text(value)
        lines.append(f"{label}: {text}")
    return lines


def player_lines(players: Sequence[Player], colours: Sequence[str], *, to_move: int | None,
                 clocks: Sequence[int] | None, me: int | None, color: bool) -> list[str]:
    """One line per seat: an arrow for the side to move, colour, name, clock."""
    width = max(len(name) for name, _ in players) + len(" (you)")
    lines = []
    for seat, ((user, kind), colour) in enumerate(zip(players, colours, strict=True)):
        arrow = "->" if seat == to_move else "  "
        name = user + (" (you)" if seat == me else "")
        if kind == "bot":
            name += " [bot]"
        clock = f"  {format_ms(clocks[seat]):>8}" if clocks is not None else ""
        badge = paint(colour, style_of(colour, seat), color) + " " * max(0, 6 - len(colour))
        lines.append(f"{arrow} {badge} {name:<{width + 6}}{clock}".rstrip())
    return lines


def result_text(game: str, players: Sequence[Player], result: p.Result | None) -> str:
    """How the game ended, in words: ``Red (alice) wins: Blue resigned.``"""
    if result is None:
        return "The game is still going on."
    if result.winner is None:
        return "The game was aborted."
    colours = engine.get_game(game).players
    winner, loser = result.winner, 1 - result.winner
    who = f"{colours[winner]} ({players[winner][0]}) wins"
    why = {
        "normal": "by the rules",
        "resign": f"{colours[loser]} resigned",
        "timeout": f"{colours[loser]} ran out of time",
        "abandon": f"{colours[loser]} left the game",
    }.get(result.reason, result.reason)
    return f"{who}: {why}."


def position_panel(state: engine.State, *, title: str, players: Sequence[Player],
                   clocks: Sequence[int] | None = None, me: int | None = None,
                   last: str | None = None, color: bool = False,
                   hints: bool = True) -> str:
    """Title, board with the last move marked, both players with clocks, and hints."""
    colours = state.game.players
    lines = [paint(title, BOLD, color)]
    lines.append(board_text(state, mark=move_cells(state, state.last_move), color=color))
    to_move = None if state.is_over else state.to_move
    lines += player_lines(players, colours, to_move=to_move, clocks=clocks, me=me, color=color)
    if last:
        lines.append(last)
    if hints and not state.is_over:
        lines += summary_lines(state.summary(), colours)
    return "\n".join(lines)


def last_move_text(state: engine.State) -> str | None:
    """``last move: 3. a3 (Blue)`` for the state's last move, numbered from 1."""
    if state.last_move is None or state.ply == 0:
        return None
    colour = state.game.players[(state.ply - 1) % 2]
    return f"last move: {state.ply}. {state.last_move} ({colour})"
