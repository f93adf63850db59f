"""Xodd (square board) and Yodd (hexhex board): drop one or two stones of either colour so
that the total number of groups is odd at the end of every turn; fewer own groups wins.

Groups are kept in a union-find forest with a group count per colour. A stone of colour c
dropped on x changes the count by ``1 - k`` (k = distinct c-groups around x), so checking a
turn, applying it and listing every turn never flood-fills the board.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .boards import Board
from .core import PASS, PASSES, Ending, Move
from .errors import IllegalMove
from .fields import int_field

EMPTY = 0  # cells hold 0 (empty), 1 (black, player 0) or 2 (white, player 1)
COLOUR_LETTERS = "BW"
_FALLBACK_TRIES = 64


def _second_delta(ry: set[int], rx: set[int], joined: bool) -> int:
    """Delta of the second drop of a turn; ``joined``: the first stone merged into its groups.

    After the first stone (same colour) merges the groups ``rx`` into one, the second stone
    touches that merged group plus whatever of ``ry`` lies outside ``rx``.
    """
    if joined:
        return -len(ry - rx)
    return 1 - len(ry)


class XoddPosition:
    """A mutable Xodd/Yodd position (square or hex board alike)."""

    __slots__ = ("_empty", "_slot", "board", "cells", "groups", "parent", "passes", "ply",
                 "stones")

    def __init__(self, board: Board) -> None:
        n = board.size
        self.board = board
        self.cells = bytearray(n)
        self.parent = list(range(n))
        self.groups = [0, 0]
        self.ply = 0
        self.passes = 0  # consecutive passes just played; 2 ends the game
        self.stones = 0
        # The empty cells in no particular order, and each one's slot in that list: built
        # on the first random draw and kept up to date from then on (playouts), but not
        # copied by play(), whose cost must not grow with the board.
        self._empty: list[int] | None = None
        self._slot: list[int] | None = None

    def copy(self) -> XoddPosition:
        new = XoddPosition.__new__(XoddPosition)
        new.board = self.board
        new.cells = self.cells[:]
        new.parent = self.parent[:]
        new.groups = self.groups[:]
        new.ply = self.ply
        new.passes = self.passes
        new.stones = self.stones
        new._empty = new._slot = None
        return new

    # -- groups -------------------------------------------------------------------------------
    def _find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def _roots(self, x: int, colour: int) -> set[int]:
        """Distinct groups of ``colour`` (1 or 2) next to cell ``x``."""
        cells = self.cells
        return {self._find(y) for y in self.board.neighbours[x] if cells[y] == colour}

    def _delta_pair(self, x: int, cx: int, y: int, cy: int) -> int:
        """Change in the group count from dropping cx on x, then cy on y."""
        rx = self._roots(x, cx)
        ry = self._roots(y, cy)
        return (1 - len(rx)) + _second_delta(ry, rx, cx == cy and self._touches(x, y, rx, ry))

    def _touches(self, x: int, y: int, rx: set[int], ry: set[int]) -> bool:
        """Does a stone on ``x`` (merging the groups ``rx``) reach ``y``'s groups ``ry``?"""
        return y in self.board.neighbours[x] or not rx.isdisjoint(ry)

    def _put(self, x: int, colour: int) -> None:
        roots = self._roots(x, colour)
        self.cells[x] = colour
        parent = self.parent
        # The new stone hangs under one of the groups it joins, and the others under that
        # one: trees stay shallow without a rank array to copy on every play().
        top = roots.pop() if roots else x
        parent[x] = top
        for r in roots:
            parent[r] = top
        if top != x:
            roots.add(top)
        self.groups[colour - 1] += 1 - len(roots)
        self.stones += 1
        empty, slot = self._empty, self._slot
        if empty is not None and slot is not None:
            # remove x from the empty list by swapping the last entry into its slot
            i = slot[x]
            last = empty.pop()
            if last != x:
                empty[i] = last
                slot[last] = i

    def _empties(self) -> list[int]:
        """The empty cells (in no particular order), building the list if need be."""
        if self._empty is None:
            self._empty = [x for x, v in enumerate(self.cells) if not v]
            slot = [0] * len(self.cells)
            for i, x in enumerate(self._empty):
                slot[x] = i
            self._slot = slot
        return self._empty

    # -- moves ---------------------------------------------------------------------------------
    def parse(self, text: str) -> Move:
        t = text.strip().lower()
        if t == "pass":
            return PASS
        parts = [p.strip() for p in t.split(",")]
        if len(parts) > 2:
            raise IllegalMove(f"{text!r}: a turn drops at most two stones")
        drops: list[tuple[int, int]] = []
        for p in parts:
            if len(p) < 3 or p[0] not in "bw":
                raise IllegalMove(
                    f"{text!r}: a drop is B or W followed by a cell, e.g. Bc3 (or 'pass')"
                )
            drops.append((self.board.index(p[1:]), 1 if p[0] == "b" else 2))
        if len(drops) == 2 and drops[0][0] == drops[1][0]:
            raise IllegalMove(f"{text!r}: both stones on the same cell")
        drops.sort()
        return self._drop_move(drops)

    def _drop_move(self, drops: list[tuple[int, int]]) -> Move:
        names = self.board.cells
        text = ",".join(f"{COLOUR_LETTERS[c - 1]}{names[x].name}" for x, c in drops)
        args = tuple(v for d in drops for v in d)
        return Move("drop", args, text)

    def _total(self) -> int:
        return self.groups[0] + self.groups[1]

    def check(self, move: Move) -> None:
        if move.kind == "pass":
            if self.ply == 0:
                raise IllegalMove("pass: Black's first turn must drop exactly one stone")
            if self._total() % 2 == 0:
                raise IllegalMove("pass: the group count is even")
            return
        if move.kind != "drop" or len(move.args) not in (2, 4):
            raise IllegalMove(f"{move.text!r} is not an Xodd/Yodd move")
        args = move.args
        n = self.board.size
        for i in range(0, len(args), 2):
            x, c = args[i], args[i + 1]
            if not 0 <= x < n or c not in (1, 2):
                raise IllegalMove(f"{move.text!r} is not a move on this board")
            if self.cells[x]:
                raise IllegalMove(f"{move.text}: {self.board.name(x)} is occupied")
        if len(args) == 2:
            delta = 1 - len(self._roots(args[0], args[1]))
        else:
            if self.ply == 0:
                raise IllegalMove(f"{move.text}: Black's first turn must drop exactly one stone")
            if args[0] == args[2]:
                raise IllegalMove(f"{move.text}: both stones on the same cell")
            delta = self._delta_pair(*args)
        after = self._total() + delta
        if after % 2 == 0:
            raise IllegalMove(
                f"{move.text}: the turn would end with {after} groups, an even number"
            )

    def apply(self, move: Move) -> None:
        if move.kind == "pass":
            self.passes += 1
        else:
            args = move.args
            self._put(args[0], args[1])
            if len(args) == 4:
                self._put(args[2], args[3])
            self.passes = 0
        self.ply += 1

    @property
    def is_over(self) -> bool:
        return self.passes >= 2

    @property
    def winner(self) -> int | None:
        if self.passes < 2:
            return None
        black, white = self.groups
        return 0 if black < white else 1

    # -- listing and sampling ------------------------------------------------------------
    def legal_moves(self) -> list[Move]:
        return list(self.iter_legal_moves())

    def iter_legal_moves(self) -> Iterator[Move]:
        """Single drops, then two-drop turns, then the pass: lazily, so that a caller who
        wants only the first few pays for the per-cell tables, not for every pair."""
        if self.is_over:
            return
        total = self._total()
        board = self.board
        empties = [x for x, v in enumerate(self.cells) if not v]
        names = [c.name for c in board.cells]
        roots: dict[tuple[int, int], set[int]] = {}
        delta: dict[tuple[int, int], int] = {}
        for x in empties:
            for c in (1, 2):
                r = self._roots(x, c)
                roots[x, c] = r
                delta[x, c] = 1 - len(r)
        yield from [Move("drop", (x, c), f"{COLOUR_LETTERS[c - 1]}{names[x]}")
                    for x in empties for c in (1, 2) if (total + delta[x, c]) % 2]
        if self.ply == 0:
            return
        # Two drops: the sum of the single deltas, except for two stones of one colour where
        # the first joins groups the second touches (or touches the second itself). They
        # are made a first cell at a time: a generator step per move would cost half again.
        need = (total + 1) % 2  # the two deltas must add up to this parity
        for i, x in enumerate(empties):
            adjacent = set(board.neighbours[x])
            out: list[Move] = []
            for cx in (1, 2):
                dx = delta[x, cx]
                rx = roots[x, cx]
                head = f"{COLOUR_LETTERS[cx - 1]}{names[x]},"
                for y in empties[i + 1:]:
                    for cy in (1, 2):
                        ry = roots[y, cy]
                        if cx == cy and (y in adjacent or not rx.isdisjoint(ry)):
                            d = dx - len(ry - rx)
                        else:
                            d = dx + delta[y, cy]
                        if (d - need) % 2 == 0:
                            out.append(Move("drop", (x, cx, y, cy),
                                            f"{head}{COLOUR_LETTERS[cy - 1]}{names[y]}"))
            yield from out
        if total % 2:
            yield PASS

    def random_move(self, rng: random.Random) -> Move:
        """Uniform over legal turns by rejection sampling; lists them only as a fallback.

        Every candidate turn has exactly two codes: a pass and each single drop are drawn
        twice over, and each two-drop turn once per order of its two cells.
        """
        empty = self._empties()
        e = len(empty)
        passes = 0 if self.ply == 0 else 2
        singles = passes + 4 * e
        space = singles if self.ply == 0 else singles + 4 * e * (e - 1)
        for _ in range(_FALLBACK_TRIES):
            k = rng.randrange(space)
            if k < passes:
                if self._total() % 2:
                    return PASS
                continue
            if k < singles:
                s = (k - passes) >> 1
                drops = [(empty[s >> 1], (s & 1) + 1)]
            else:
                i, rest = divmod(k - singles, 4 * (e - 1))
                j, colours = divmod(rest, 4)
                if j >= i:
                    j += 1
                drops = sorted([(empty[i], (colours & 1) + 1), (empty[j], (colours >> 1) + 1)])
            move = self._drop_move(drops)
            try:
                self.check(move)
            except IllegalMove:
                continue
            return move
        return rng.choice(self.legal_moves())

    def summary(self) -> dict[str, Any]:
        black, white = self.groups
        return {
            "groups": [black, white],
            "stones": [self.cells.count(1), self.cells.count(2)],
            "total_groups": black + white,
            "parity": "odd" if (black + white) % 2 else "even",
            "empty_cells": self.board.size - self.stones,
        }

    def ending(self, colours: tuple[str, str]) -> Ending | None:
        """Both passed: the player with fewer groups of their colour wins."""
        winner = self.winner
        if winner is None:
            return None
        black, white = self.groups
        plural = "group" if black == 1 else "groups"
        text = (f"both passed: {colours[0]} {black} {plural}, {colours[1]} {white}; "
                "fewer groups wins")
        return Ending(winner, PASSES, (black, white), text)

    # -- position text ------------------------------------------------------------------------
    def text_fields(self) -> dict[str, str]:
        return {"passes": str(self.passes)}

    @classmethod
    def from_fields(cls, board: Board, colours: list[int], ply: int, fields: dict[str, str]
                    ) -> XoddPosition:
        pos = cls(board)
        for x, colour in enumerate(colours):
            if colour:
                pos._put(x, colour)
        pos.ply = ply
        pos.passes = int_field(fields, "passes", 0, 2)
        return pos

