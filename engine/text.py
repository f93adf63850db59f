"""Position text: one line that names the game, its options and the whole position.

    xodd:size=5 ply=3 passes=0 board=...../..B../.W.B./...../.....
    hexifact:board=hex3-4,jumps=after-placing ply=2 passes=0 may_jump=11 board=...

``board`` lists rows from the top down, separated by ``/``, each row left to right; ``.`` is
empty and stones use the game's letters (B/W, or R/B for Hadron). Game-specific fields
follow the ``ply`` field. ``from_text(s.to_text()).to_text() == s.to_text()`` always holds.
The move history is not part of the position.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from .errors import BadOption, BadPosition
from .fields import int_field
from .games import get_game

if TYPE_CHECKING:
    from .core import State


def position_text(state: State) -> str:
    game = state.game
    opts = ",".join(f"{k}={v}" for k, v in state.options.items())
    board = state.board
    chars = state.cell_chars()
    rows = ["".join(chars[i] for i in row) for row in reversed(board.rows())]
    fields = {"ply": str(state.ply), **state._pos.text_fields(), "board": "/".join(rows)}
    return " ".join([f"{game.key}:{opts}", *(f"{k}={v}" for k, v in fields.items())])


def from_text(text: str) -> State:
    """Parse position text; BadPosition (a ValueError) says what is wrong with it."""
    from .core import State

    if not isinstance(text, str) or not text.strip():
        raise BadPosition("empty position text")
    head, *rest = text.split()
    key, _, opts_text = head.partition(":")
    game = get_game(key)
    raw: dict[str, str] = {}
    for item in filter(None, opts_text.split(",")):
        name, eq, value = item.partition("=")
        if not eq:
            raise BadPosition(f"option {item!r} must be name=value")
        raw[name] = value
    try:
        options = game.normalize_options(raw)
    except BadOption as e:
        raise BadPosition(str(e)) from None
    fields: dict[str, str] = {}
    for item in rest:
        name, eq, value = item.partition("=")
        if not eq or name in fields:
            raise BadPosition(f"field {item!r} must be name=value, given once")
        fields[name] = value
    board = game.make_board(options)
    ply = int_field(fields, "ply", 0, 10**9)
    colours = _board_colours(fields.pop("board", None), board.rows(), game.stone_chars)
    pos = game.load_position(board, options, colours, ply, fields)
    if fields:
        raise BadPosition(f"unknown field {next(iter(fields))}= for {game.key}")
    return State(game, MappingProxyType(options), pos)


def _board_colours(rows_text: str | None, rows: list[list[int]], stones: tuple[str, str]
                   ) -> list[int]:
    """Per cell in canonical order: 0 empty, 1 or 2 for the players' stones."""
    if rows_text is None:
        raise BadPosition("missing field board=")
    given = rows_text.upper().split("/")
    if len(given) != len(rows):
        raise BadPosition(f"board= has {len(given)} rows, the board has {len(rows)}")
    colours = [0] * sum(len(r) for r in rows)
    code = {".": 0, stones[0]: 1, stones[1]: 2}
    for row_cells, row_text in zip(reversed(rows), given, strict=True):
        if len(row_text) != len(row_cells):
            raise BadPosition(f"board= row {row_text!r} should have {len(row_cells)} cells")
        for x, ch in zip(row_cells, row_text, strict=True):
            if ch not in code:
                raise BadPosition(f"board= holds {ch!r}; allowed: {''.join(code)}")
            colours[x] = code[ch]
    return colours
