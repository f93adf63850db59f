"""The registry of games. Keys are stable: they are stored in databases and sent on the wire."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import boards
from .boards import Board
from .core import Game
from .errors import UnknownGame
from .hadron import HadronPosition
from .hexifact import AFTER_PLACING, ONCE_PER_STONE, HexifactPosition
from .options import Option
from .xodd import COLOUR_LETTERS, XoddPosition

RULES_VERSION = "1"

# The kinds of move a notation is made of, for clients that compose moves by clicking
# without knowing the game (docs/PROTOCOL.md, section 4.11):
#   place  a cell name (c3): one of the mover's own pieces goes there
#   drop   up to ``max`` drops joined by ``join``; a drop is a letter of ``pieces`` (the
#          piece of seat i's colour is pieces[i], whoever moves) then a cell (Bc3,Wd4)
#   jump   a cell, ``join``, a cell (c3-c6): the mover's piece moves from one to the other
#   pass   the word ``text``
PLACE: dict[str, Any] = {"kind": "place", "example": "c3"}
JUMP: dict[str, Any] = {"kind": "jump", "join": "-", "example": "c3-c6"}
PASS_FORM: dict[str, Any] = {"kind": "pass", "text": "pass"}

HEXIFACT_BOARDS: dict[str, tuple[str, int]] = {
    "hex3-4": ("limping", 3),
    "hex4": ("hexhex", 4),
    "hex4-5": ("limping", 4),
    "hex5": ("hexhex", 5),
    "hex5-6": ("limping", 5),
}


def _hexifact_board(options: Mapping[str, int | str]) -> Board:
    shape, n = HEXIFACT_BOARDS[str(options["board"])]
    return boards.hexhex(n) if shape == "hexhex" else boards.limping(n)


def _odd_game(key: str, name: str, option: Option, make_board: Callable[[int], Board],
              summary: str) -> Game:
    """Xodd and Yodd share their rules and position; only the board differs."""
    return Game(
        key=key,
        name=name,
        players=("Black", "White"),
        stone_chars=(COLOUR_LETTERS[0], COLOUR_LETTERS[1]),
        options=(option,),
        rules_version=RULES_VERSION,
        summary_text=summary,
        piece="stone",
        move_forms=({"kind": "drop", "pieces": list(COLOUR_LETTERS), "max": 2, "join": ",",
                     "example": "Bc3,Wd4"}, PASS_FORM),
        make_board=lambda o: make_board(int(o["size"])),
        make_position=lambda b, o: XoddPosition(b),
        load_position=lambda b, o, colours, ply, f: XoddPosition.from_fields(b, colours, ply, f),
    )


XODD = _odd_game(
    "xodd", "Xodd",
    Option("size", "int", 9, "side of the square board (9..13 recommended)", 2, 26),
    boards.square,
    "Drop one or two stones of either colour; the group count must end odd; "
    "fewer own groups wins.")

YODD = _odd_game(
    "yodd", "Yodd",
    Option("size", "int", 6, "base of the hexhex board (6..9 recommended)", 2, 13),
    boards.hexhex,
    "Xodd on a hexagonal board.")

HADRON = Game(
    key="hadron",
    name="Hadron",
    players=("Red", "Blue"),
    stone_chars=("R", "B"),
    options=(Option("size", "int", 5, "side of the square board (odd sizes are standard)",
                    3, 26),),
    rules_version=RULES_VERSION,
    summary_text="Place where your and your opponent's neighbouring tiles are equal in "
    "number; the last to place wins.",
    piece="tile",
    move_forms=(PLACE,),
    make_board=lambda o: boards.square(int(o["size"])),
    make_position=lambda b, o: HadronPosition(b),
    load_position=lambda b, o, colours, ply, f: HadronPosition.from_fields(b, colours, ply, f),
)

HEXIFACT = Game(
    key="hexifact",
    name="Hexifact",
    players=("Black", "White"),
    stone_chars=("B", "W"),
    options=(
        Option("board", "choice", "hex3-4", "board shape", choices=tuple(HEXIFACT_BOARDS)),
        Option("jumps", "choice", AFTER_PLACING, "when a stone may jump",
               choices=(AFTER_PLACING, ONCE_PER_STONE)),
    ),
    rules_version=RULES_VERSION,
    summary_text="Place next to the opponent or jump over their stones; score the product "
    "of your two largest groups.",
    piece="stone",
    move_forms=(PLACE, JUMP, PASS_FORM),
    make_board=_hexifact_board,
    make_position=lambda b, o: HexifactPosition(b, str(o["jumps"])),
    load_position=lambda b, o, colours, ply, f: HexifactPosition.from_fields(
        b, colours, ply, f, str(o["jumps"])),
)

GAMES: Mapping[str, Game] = {g.key: g for g in (XODD, YODD, HADRON, HEXIFACT)}


def get_game(key: str) -> Game:
    """The registered game called ``key``; UnknownGame (a ValueError) names the known ones."""
    try:
        return GAMES[key]
    except (KeyError, TypeError):
        raise UnknownGame(f"unknown game {key!r} (known: {', '.join(GAMES)})") from None
