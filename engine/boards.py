"""Board geometry shared by every game: cells, names, drawing coordinates, neighbours.

Cells are numbered in canonical order (by row from the bottom, then by column), so sorting
cell indices sorts cells the way notation wants. A name is the column letter (``a`` = 0)
followed by the 1-based row: ``c3``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

from .errors import IllegalMove

SQUARE_STEPS: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, 1), (0, -1))
# The six hex steps (dq, dr): left, right, up-left, up-right, down-left, down-right.
HEX_STEPS: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, 1), (1, 1), (-1, -1), (0, -1))

# A cell's outline around its centre, in drawing units (x, y as in Cell), and the factor
# that turns y into the same scale as x: squares are unit squares; hex cells are
# pointy-topped hexagons that tile rows one unit apart, regular once y is scaled.
Outline = tuple[tuple[float, float], ...]
SQUARE_OUTLINE: Outline = ((-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5))
HEX_OUTLINE: Outline = ((0.0, 2 / 3), (0.5, 1 / 3), (0.5, -1 / 3), (0.0, -2 / 3),
                        (-0.5, -1 / 3), (-0.5, 1 / 3))
HEX_Y_SCALE = math.sqrt(3) / 2


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: its index in canonical order, name, grid column/row and drawing point."""

    index: int
    name: str
    col: int
    row: int
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Board:
    """A board's cells and adjacency.

    ``steps[d][i]`` is the index of the cell one step from ``i`` in direction ``d``, or -1
    off the board; ``neighbours[i]`` lists the on-board ones.
    """

    kind: str  # "square" or "hex"
    label: str  # e.g. "square 9", "hexhex 6", "limping 3"
    cells: tuple[Cell, ...]
    steps: tuple[tuple[int, ...], ...]
    neighbours: tuple[tuple[int, ...], ...]
    width: int  # number of columns
    height: int  # number of rows
    outline: Outline  # a cell's shape around its centre (drawing units)
    y_scale: float  # drawing y times this is on the scale of x
    by_name: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        self.by_name.update((c.name, c.index) for c in self.cells)

    @property
    def size(self) -> int:
        return len(self.cells)

    def index(self, name: str) -> int:
        """Index of the cell called ``name`` (case-insensitive); IllegalMove if none."""
        try:
            return self.by_name[name.strip().lower()]
        except KeyError:
            raise IllegalMove(f"no cell {name.strip()!r} on this board ({self.label})") from None

    def name(self, index: int) -> str:
        return self.cells[index].name

    def rows(self) -> list[list[int]]:
        """Cell indices grouped by row, bottom row first, each row left to right."""
        out: list[list[int]] = [[] for _ in range(self.height)]
        for cell in self.cells:
            out[cell.row].append(cell.index)
        return out

    def describe(self) -> dict[str, object]:
        """Plain-data geometry for clients that draw boards without knowing the game: each
        cell's name, grid column and row and centre (x, y: row 1 at the bottom), the cell
        indices next to each cell, a cell's outline around its centre, and the factor that
        puts y on the scale of x."""
        return {
            "kind": self.kind,
            "label": self.label,
            "cells": [
                {"name": c.name, "col": c.col, "row": c.row, "x": c.x, "y": c.y}
                for c in self.cells
            ],
            "neighbours": [list(n) for n in self.neighbours],
            "outline": [list(point) for point in self.outline],
            "y_scale": self.y_scale,
        }


def cell_name(col: int, row: int) -> str:
    return f"{chr(ord('a') + col)}{row + 1}"


def _build(kind: str, label: str, coords: list[tuple[int, int]], steps: tuple[tuple[int, int], ...]
           ) -> Board:
    coords.sort(key=lambda qr: (qr[1], qr[0]))
    index = {qr: i for i, qr in enumerate(coords)}
    cells = tuple(
        Cell(i, cell_name(q, r), q, r, (q - r / 2) if kind == "hex" else float(q), float(r))
        for i, (q, r) in enumerate(coords)
    )
    step_tables = tuple(
        tuple(index.get((q + dq, r + dr), -1) for (q, r) in coords) for dq, dr in steps
    )
    neighbours = tuple(
        tuple(t[i] for t in step_tables if t[i] >= 0) for i in range(len(coords))
    )
    width = max(q for q, _ in coords) + 1
    height = max(r for _, r in coords) + 1
    if kind == "hex":
        return Board(kind, label, cells, step_tables, neighbours, width, height, HEX_OUTLINE,
                     HEX_Y_SCALE)
    return Board(kind, label, cells, step_tables, neighbours, width, height, SQUARE_OUTLINE,
                 1.0)


@cache
def square(n: int) -> Board:
    """An n x n board with orthogonal neighbours."""
    coords = [(q, r) for r in range(n) for q in range(n)]
    return _build("square", f"square {n}", coords, SQUARE_STEPS)


@cache
def hexhex(n: int) -> Board:
    """A regular hexagon with n cells on every side."""
    coords = [
        (q, r)
        for r in range(2 * n - 1)
        for q in range(2 * n - 1)
        if -(n - 1) <= q - r <= n - 1
    ]
    return _build("hex", f"hexhex {n}", coords, HEX_STEPS)


@cache
def limping(n: int) -> Board:
    """A hexagon whose sides alternate n+1 and n cells, the bottom side n+1."""
    coords = [
        (q, r) for r in range(2 * n) for q in range(2 * n) if -(n - 1) <= q - r <= n
    ]
    return _build("hex", f"limping {n}", coords, HEX_STEPS)
