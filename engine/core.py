"""The game-independent half of the engine: moves, the immutable State, the Game registry entry.

Each game supplies a mutable *position* class (see :class:`Position`) that knows its rules.
:class:`State` wraps one position and never lets it change: :meth:`State.play` copies the
position and applies the move to the copy. Fast playouts apply moves in place on one private
copy instead. The move list is kept as a shared linked list so ``play`` costs the same at
ply 5 and at ply 500.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, Self

from .boards import Board
from .errors import IllegalMove
from .options import Option, normalize


class Move(NamedTuple):
    """A parsed move: its kind, game-specific integer arguments and canonical text."""

    kind: str  # "drop", "pass", "place" or "jump"
    args: tuple[int, ...]
    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def cells(self) -> tuple[int, ...]:
        """Indices of the cells the move puts a piece on or takes one from (none for a pass)."""
        if self.kind == "drop":
            return self.args[0::2]  # (cell, colour, cell, colour)
        return self.args  # place: (cell,); jump: (from, to); pass: ()


PASS = Move("pass", (), "pass")

NO_MOVE = "no_move"
"""An ending: the player to move had no legal move (and lost)."""
PASSES = "passes"
"""An ending: two passes followed each other, and the rules compared the scores."""


@dataclass(frozen=True, slots=True)
class Ending:
    """How the rules ended a game: who won, how (``NO_MOVE`` or ``PASSES``), what the
    rules compared (``scores``, seat 0's then seat 1's; None where a game keeps no score),
    and all of it in one sentence in the game's own words (``text``)."""

    winner: int
    how: str
    scores: tuple[int, int] | None
    text: str


class Position(Protocol):
    """What every game's mutable position provides. Only the engine mutates positions."""

    board: Board
    ply: int
    cells: bytearray  # per cell: 0 empty, 1 player 0's stone, 2 player 1's

    def copy(self) -> Self: ...
    def parse(self, text: str) -> Move: ...
    def check(self, move: Move) -> None: ...
    def apply(self, move: Move) -> None: ...
    def legal_moves(self) -> list[Move]: ...
    def iter_legal_moves(self) -> Iterator[Move]: ...
    def random_move(self, rng: random.Random) -> Move: ...
    @property
    def is_over(self) -> bool: ...
    @property
    def winner(self) -> int | None: ...
    def summary(self) -> dict[str, Any]: ...
    def ending(self, colours: tuple[str, str]) -> Ending | None: ...
    def text_fields(self) -> dict[str, str]: ...


class _MoveNode(NamedTuple):
    prev: _MoveNode | None
    text: str


class State:
    """An immutable game state. ``play`` returns a new state and leaves this one unchanged."""

    __slots__ = ("_moves", "_moves_cache", "_pos", "game", "options")

    def __init__(self, game: Game, options: Mapping[str, int | str], pos: Position,
                 moves: _MoveNode | None = None) -> None:
        self.game = game
        self.options: Mapping[str, int | str] = options
        self._pos = pos
        self._moves = moves
        self._moves_cache: tuple[str, ...] | None = None

    # -- the interface of rules.md ---------------------------------------------------------
    @property
    def to_move(self) -> int:
        """The player whose turn it is: always ``ply % 2``, also once the game is over."""
        return self._pos.ply % 2

    @property
    def ply(self) -> int:
        return self._pos.ply

    @property
    def is_over(self) -> bool:
        return self._pos.is_over

    @property
    def winner(self) -> int | None:
        return self._pos.winner

    @property
    def ending(self) -> Ending | None:
        """How the rules ended the game (winner, how, scores, in words); None while it goes
        on. A game that ended otherwise (resigned, lost on time) has none: the engine
        does not know of it."""
        return self._pos.ending(self.game.players)

    def ending_if(self, move: str | Move) -> Ending | None:
        """The ending ``move`` would bring if played now: None if it is illegal or the game
        goes on after it (a client warns of a pass that ends the game with it)."""
        try:
            after = self.play(move)
        except IllegalMove:
            return None
        return after.ending

    @property
    def board(self) -> Board:
        return self._pos.board

    def legal_moves(self) -> list[Move]:
        """Every legal move, each once, in canonical form; empty once the game is over."""
        return self._pos.legal_moves()

    def legal_moves_upto(self, limit: int) -> list[Move] | None:
        """Every legal move if there are at most ``limit``, else None (without listing them
        all: a client is sent the list where it is short, and checks candidates otherwise)."""
        moves = list(islice(self._pos.iter_legal_moves(), limit + 1))
        return moves if len(moves) <= limit else None

    def parse_move(self, move: str | Move) -> Move:
        """Parse ``move`` and check it is legal here; raise IllegalMove saying why not."""
        if isinstance(move, Move):
            parsed = move
        elif isinstance(move, str):
            parsed = self._pos.parse(move)
        else:
            raise IllegalMove(f"a move must be text, got {type(move).__name__}")
        if self._pos.is_over:
            raise IllegalMove("the game is over")
        self._pos.check(parsed)
        return parsed

    def play(self, move: str | Move) -> State:
        """Return the state after ``move``; raise IllegalMove (and change nothing) if illegal."""
        parsed = self.parse_move(move)
        pos = self._pos.copy()
        pos.apply(parsed)
        return State(self.game, self.options, pos, _MoveNode(self._moves, parsed.text))

    @property
    def moves(self) -> tuple[str, ...]:
        """The canonical text of every move played since the start (or since from_text)."""
        if self._moves_cache is None:
            out: list[str] = []
            node = self._moves
            while node is not None:
                out.append(node.text)
                node = node.prev
            out.reverse()
            self._moves_cache = tuple(out)
        return self._moves_cache

    @property
    def last_move(self) -> str | None:
        return self._moves.text if self._moves is not None else None

    def cells_of(self, move: str | Move) -> list[str]:
        """Names of the cells ``move`` puts a piece on or takes one from, legal or not
        (clients mark the last move with them); IllegalMove if it cannot be read."""
        parsed = move if isinstance(move, Move) else self._pos.parse(move)
        return [self.board.name(x) for x in parsed.cells]

    @property
    def cells(self) -> bytes:
        """Per cell in canonical order: 0 empty, 1 a piece of player 0's, 2 of player 1's."""
        return bytes(self._pos.cells)

    # -- bots and playouts ------------------------------------------------------------------
    def random_move(self, rng: random.Random) -> Move:
        """A legal move drawn uniformly, without listing them all where the game allows."""
        if self._pos.is_over:
            raise IllegalMove("the game is over")
        return self._pos.random_move(rng)

    def playout(self, rng: random.Random, max_plies: int | None = None) -> State:
        """Play uniformly random moves to the end (or ``max_plies``); fast, in one copy.

        The returned state has the final position; its move list is not kept.
        """
        pos = self._pos.copy()
        limit = max_plies if max_plies is not None else -1
        while not pos.is_over and limit != 0:
            pos.apply(pos.random_move(rng))
            limit -= 1
        return State(self.game, self.options, pos)

    def summary(self) -> dict[str, Any]:
        """Per-game facts a client can show as help (group counts, scores, legal squares)."""
        return self._pos.summary()

    # -- text forms -----------------------------------------------------------------------------
    def cell_chars(self) -> str:
        """One character per cell in canonical order: ``.`` or the game's stone letter."""
        symbols = (".", *self.game.stone_chars)
        return "".join(symbols[v] for v in self._pos.cells)

    def to_text(self) -> str:
        """One-line position text; ``engine.from_text`` turns it back into a state."""
        from .text import position_text

        return position_text(self)

    def render(self, mark: Iterable[str] = ()) -> str:
        """An ASCII drawing with coordinates; cells named in ``mark`` are bracketed."""
        from .render import render

        return render(self, set(mark))

    def __repr__(self) -> str:
        return f"<State {self.to_text()}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.to_text() == other.to_text()

    def __hash__(self) -> int:
        return hash(self.to_text())


@dataclass(frozen=True)
class Game:
    """A registry entry: static metadata plus the factory of its positions."""

    key: str
    name: str
    players: tuple[str, str]
    stone_chars: tuple[str, str]
    options: tuple[Option, ...]
    rules_version: str
    summary_text: str
    piece: str  # what a player puts on the board: "stone" or "tile"
    move_forms: tuple[Mapping[str, Any], ...]  # the notation's kinds of move, see move_forms
    make_board: Callable[[Mapping[str, int | str]], Board]
    make_position: Callable[[Board, Mapping[str, int | str]], Position]
    load_position: Callable[[Board, Mapping[str, int | str], list[int], int, dict[str, str]],
                            Position]

    def normalize_options(self, values: Mapping[str, Any] | None = None) -> dict[str, int | str]:
        """Options with defaults filled in; BadOption (a ValueError) if any is not allowed."""
        return normalize(self.options, values or {})

    def board(self, options: Mapping[str, Any] | None = None) -> Board:
        return self.make_board(self.normalize_options(options))

    def new(self, **options: Any) -> State:
        opts = self.normalize_options(options)
        pos = self.make_position(self.make_board(opts), opts)
        return State(self, MappingProxyType(opts), pos)

    def describe(self) -> dict[str, Any]:
        """Plain-data metadata: key, names, colours, options schema, rules version, and what
        a client needs to compose moves without knowing the game (the ``moves`` forms)."""
        return {
            "key": self.key,
            "name": self.name,
            "players": list(self.players),
            "rules_version": self.rules_version,
            "summary": self.summary_text,
            "options": [o.describe() for o in self.options],
            "piece": self.piece,
            "moves": [dict(form) for form in self.move_forms],
        }
