"""Hadron: place a tile of your colour on an empty square whose orthogonal neighbours hold
as many of your tiles as of your opponent's; whoever cannot place loses.

The condition "own == opponent's" is the same for both players, so one count serves both:
``diff[x]`` (red minus blue neighbours) per square and the number of empty squares with
``diff == 0``. A placement updates them for the square and its neighbours only.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .boards import Board
from .core import NO_MOVE, Ending, Move
from .errors import IllegalMove

_FALLBACK_TRIES = 32


class HadronPosition:
    """A mutable Hadron position."""

    __slots__ = ("balanced", "board", "cells", "diff", "ply")

    def __init__(self, board: Board) -> None:
        self.board = board
        self.cells = bytearray(board.size)  # 0 empty, 1 red (player 0), 2 blue (player 1)
        self.diff = [0] * board.size
        self.balanced = board.size  # empty squares where a placement is legal
        self.ply = 0

    def copy(self) -> HadronPosition:
        new = HadronPosition.__new__(HadronPosition)
        new.board = self.board
        new.cells = self.cells[:]
        new.diff = self.diff[:]
        new.balanced = self.balanced
        new.ply = self.ply
        return new

    def parse(self, text: str) -> Move:
        x = self.board.index(text)
        return Move("place", (x,), self.board.name(x))

    def _legal(self, x: int) -> bool:
        return not self.cells[x] and self.diff[x] == 0

    def check(self, move: Move) -> None:
        if move.kind != "place" or len(move.args) != 1 or not 0 <= move.args[0] < self.board.size:
            raise IllegalMove(f"{move.text!r} is not a Hadron move")
        x = move.args[0]
        if self.cells[x]:
            raise IllegalMove(f"{move.text}: the square is occupied")
        if self.diff[x]:
            own, other = self._counts(x)
            raise IllegalMove(
                f"{move.text}: it touches {own} of your tiles and {other} of your "
                "opponent's; they must be equal"
            )

    def _counts(self, x: int) -> tuple[int, int]:
        me = self.ply % 2 + 1
        cells = self.cells
        own = sum(1 for y in self.board.neighbours[x] if cells[y] == me)
        other = sum(1 for y in self.board.neighbours[x] if cells[y] == 3 - me)
        return own, other

    def _place(self, x: int, colour: int) -> None:
        if self._legal(x):
            self.balanced -= 1
        self.cells[x] = colour
        step = 1 if colour == 1 else -1
        cells, diff = self.cells, self.diff
        for y in self.board.neighbours[x]:
            if cells[y]:
                diff[y] += step
                continue
            before = diff[y] == 0
            diff[y] += step
            self.balanced += (diff[y] == 0) - before

    def apply(self, move: Move) -> None:
        self._place(move.args[0], self.ply % 2 + 1)
        self.ply += 1

    @property
    def is_over(self) -> bool:
        return self.balanced == 0

    @property
    def winner(self) -> int | None:
        # The player to move has no legal placement and loses.
        return 1 - self.ply % 2 if self.balanced == 0 else None

    def legal_moves(self) -> list[Move]:
        return list(self.iter_legal_moves())

    def iter_legal_moves(self) -> Iterator[Move]:
        names = self.board.cells
        return (Move("place", (x,), names[x].name) for x in range(self.board.size)
                if self._legal(x))

    def random_move(self, rng: random.Random) -> Move:
        n = self.board.size
        for _ in range(_FALLBACK_TRIES):
            x = rng.randrange(n)
            if self._legal(x):
                return Move("place", (x,), self.board.cells[x].name)
        return rng.choice(self.legal_moves())

    def summary(self) -> dict[str, Any]:
        return {
            "legal_squares": [m.text for m in self.legal_moves()],
            "tiles": [self.cells.count(1), self.cells.count(2)],
        }

    def ending(self, colours: tuple[str, str]) -> Ending | None:
        """The player to move has no legal placement and loses."""
        winner = self.winner
        if winner is None:
            return None
        return Ending(winner, NO_MOVE, None, f"{colours[1 - winner]} has no legal placement")

    def text_fields(self) -> dict[str, str]:
        return {}

    @classmethod
    def from_fields(cls, board: Board, colours: list[int], ply: int, fields: dict[str, str]
                    ) -> HadronPosition:
        pos = cls(board)
        for x, colour in enumerate(colours):
            if colour:
                pos._place(x, colour)
        pos.ply = ply
        return pos

