"""A slow, deliberately simple reimplementation of /work/shared/rules.md: the tests' oracle.

It shares no code with `engine/` and is written for obviousness, not speed: every group
count is a fresh flood fill, every legal-move list is a brute-force enumeration of all
candidate turns, and every move is checked by applying it to a copy of the board and
testing the rule on the result. Only the standard library is used.

    state = new_game("xodd", size=3)
    state.legal_moves()          # sorted canonical move strings
    state = state.play("Bb2")    # a new state; RefIllegal (a ValueError) if not legal
    state.to_move, state.ply, state.is_over, state.winner

Stones are stored as `{(col, row): player}`; in Xodd/Yodd the "player" is the stone's
colour (0 Black, 1 White), which need not be the mover.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import combinations

Cell = tuple[int, int]
Stones = Mapping[Cell, int]

LETTERS = "abcdefghijklmnopqrstuvwxyz"
SQUARE_STEPS: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, 1), (0, -1))
HEX_STEPS: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, 1), (1, 1), (-1, -1), (0, -1))
COLOUR_LETTERS = "BW"

HEXIFACT_BOARDS = {
    "hex3-4": ("limping", 3),
    "hex4": ("hexhex", 4),
    "hex4-5": ("limping", 4),
    "hex5": ("hexhex", 5),
    "hex5-6": ("limping", 5),
}
JUMP_OPTIONS = ("after-placing", "once-per-stone")
SIZE_RANGES = {"xodd": (2, 26, 9), "yodd": (2, 13, 6), "hadron": (3, 26, 5)}


class RefIllegal(ValueError):
    """A move the reference rules reject."""


# --------------------------------------------------------------------------- boards


@dataclass(frozen=True)
class Board:
    """The cells of one board, in cell order (row, then column), and their neighbours."""

    cells: tuple[Cell, ...]
    adjacent: dict[Cell, tuple[Cell, ...]]
    hexes: bool

    def __contains__(self, cell: object) -> bool:
        return cell in self.adjacent

    def neighbours(self, cell: Cell) -> tuple[Cell, ...]:
        return self.adjacent[cell]

    def parse_cell(self, text: str) -> Cell:
        match = re.fullmatch(r"([a-z])([1-9][0-9]*)", text)
        if not match:
            raise RefIllegal(f"not a cell: {text!r}")
        cell = (LETTERS.index(match.group(1)), int(match.group(2)) - 1)
        if cell not in self:
            raise RefIllegal(f"off the board: {text!r}")
        return cell


def cell_name(cell: Cell) -> str:
    return f"{LETTERS[cell[0]]}{cell[1] + 1}"


def cell_order(cell: Cell) -> tuple[int, int]:
    """Row first, then column: a1 b1 .. a2 b2 .."""
    return (cell[1], cell[0])


def make_board(cells: list[Cell], steps: tuple[Cell, ...]) -> Board:
    on_board = set(cells)
    adjacent = {
        (c, r): tuple((c + dc, r + dr) for dc, dr in steps if (c + dc, r + dr) in on_board)
        for c, r in cells
    }
    return Board(tuple(sorted(cells, key=cell_order)), adjacent, steps == HEX_STEPS)


def square_board(n: int) -> Board:
    cells = [(c, r) for r in range(n) for c in range(n)]
    return make_board(cells, SQUARE_STEPS)


def hexhex_board(n: int) -> Board:
    side = 2 * n - 1
    cells = [(q, r) for r in range(side) for q in range(side) if -(n - 1) <= q - r <= n - 1]
    return make_board(cells, HEX_STEPS)


def limping_board(n: int) -> Board:
    side = 2 * n
    cells = [(q, r) for r in range(side) for q in range(side) if -(n - 1) <= q - r <= n]
    return make_board(cells, HEX_STEPS)


def groups(board: Board, stones: Stones, colour: int) -> list[set[Cell]]:
    """Every maximal connected set of `colour` stones, found by flood fill."""
    return [g for g in all_groups(board, stones) if stones[next(iter(g))] == colour]


def all_groups(board: Board, stones: Stones) -> list[set[Cell]]:
    """Every group of either colour: flood fill from each stone not yet in a group."""
    seen: set[Cell] = set()
    found: list[set[Cell]] = []
    for start, colour in stones.items():
        if start in seen:
            continue
        group = {start}
        frontier = [start]
        while frontier:
            cell = frontier.pop()
            for nb in board.adjacent[cell]:
                if nb not in group and stones.get(nb) == colour:
                    group.add(nb)
                    frontier.append(nb)
        seen |= group
        found.append(group)
    return found


def total_groups(board: Board, stones: Stones) -> int:
    return len(all_groups(board, stones))


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class RefState:
    """One position plus the history the rules need. Immutable: `play` returns a new one."""

    game: str
    options: dict[str, object]
    board: Board
    stones: dict[Cell, int] = field(default_factory=dict)
    moves: tuple[str, ...] = ()
    # Hexifact only: after-placing flags per player, once-per-stone jumped stones per player.
    jumped: tuple[bool, bool] = (False, False)
    jumped_stones: tuple[frozenset[Cell], frozenset[Cell]] = (frozenset(), frozenset())

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def to_move(self) -> int:
        return self.ply % 2

    @property
    def is_over(self) -> bool:
        if self.game == "hadron":
            return not self._hadron_moves()
        return self.moves[-2:] == ("pass", "pass")

    @property
    def winner(self) -> int | None:
        if not self.is_over:
            return None
        if self.game == "hadron":
            return 1 - self.to_move
        if self.game in ("xodd", "yodd"):
            black = len(groups(self.board, self.stones, 0))
            white = len(groups(self.board, self.stones, 1))
            return 0 if black < white else 1
        last_passer = 1 - self.to_move
        if self.score(last_passer) >= self.score(1 - last_passer):
            return last_passer
        return 1 - last_passer

    def score(self, player: int) -> int:
        """Hexifact: product of the sizes of the two largest groups, 0 with fewer than two."""
        sizes = sorted((len(g) for g in groups(self.board, self.stones, player)), reverse=True)
        return sizes[0] * sizes[1] if len(sizes) >= 2 else 0

    def group_counts(self) -> tuple[int, int]:
        return (len(groups(self.board, self.stones, 0)), len(groups(self.board, self.stones, 1)))

    # ----------------------------------------------------------------- legal moves

    def legal_moves(self) -> list[str]:
        """Every legal move as a canonical string, sorted; empty once the game is over."""
        if self.is_over:
            return []
        if self.game in ("xodd", "yodd"):
            found = self._odd_moves()
        elif self.game == "hadron":
            found = self._hadron_moves()
        else:
            found = self._hexifact_moves()
        return sorted(found)

    def _odd_moves(self) -> list[str]:
        empty = [c for c in self.board.cells if c not in self.stones]
        found = []
        for cell in empty:
            for colour in (0, 1):
                if self._odd_after({cell: colour}):
                    found.append(drop_text(cell, colour))
        if self.ply == 0:
            return found
        for first, second in combinations(empty, 2):
            for c1 in (0, 1):
                for c2 in (0, 1):
                    if self._odd_after({first: c1, second: c2}):
                        found.append(f"{drop_text(first, c1)},{drop_text(second, c2)}")
        if total_groups(self.board, self.stones) % 2 == 1:
            found.append("pass")
        return found

    def _odd_after(self, drops: dict[Cell, int]) -> bool:
        return total_groups(self.board, {**self.stones, **drops}) % 2 == 1

    def _hadron_moves(self) -> list[str]:
        return [cell_name(c) for c in self.board.cells if self._hadron_ok(c)]

    def _hadron_ok(self, cell: Cell) -> bool:
        if cell in self.stones:
            return False
        around = [self.stones.get(nb) for nb in self.board.neighbours(cell)]
        return around.count(self.to_move) == around.count(1 - self.to_move)

    def _hexifact_moves(self) -> list[str]:
        found = [cell_name(c) for c in self.board.cells if self._placement_ok(c)]
        for start, landing in self._jumps():
            found.append(f"{cell_name(start)}-{cell_name(landing)}")
        found.append("pass")
        return found

    def _placement_ok(self, cell: Cell) -> bool:
        if cell in self.stones:
            return False
        if self.ply == 0:
            return True
        around = [self.stones.get(nb) for nb in self.board.neighbours(cell)]
        return self.to_move not in around and (1 - self.to_move) in around

    def _jumps(self) -> list[tuple[Cell, Cell]]:
        """Every legal jump of the mover as (start, landing)."""
        found = []
        for start in self.board.cells:
            if self.stones.get(start) != self.to_move:
                continue
            for dc, dr in HEX_STEPS:
                landing = (start[0] + dc, start[1] + dr)
                while self.stones.get(landing) == 1 - self.to_move:
                    landing = (landing[0] + dc, landing[1] + dr)
                if self._jump_ok(start, landing):
                    found.append((start, landing))
        return found

    def _jump_ok(self, start: Cell, landing: Cell) -> bool:
        """Is moving the mover's stone from `start` to `landing` a legal jump?"""
        me = self.to_move
        if self.options["jumps"] == "after-placing" and self.jumped[me]:
            return False
        if self.stones.get(start) != me or start in self.jumped_stones[me]:
            return False
        if landing not in self.board or landing in self.stones:
            return False
        line = self._line(start, landing)
        if not line or any(self.stones.get(cell) != 1 - me for cell in line):
            return False
        return self._crowding_ok(start, landing)

    @staticmethod
    def _line(start: Cell, landing: Cell) -> list[Cell] | None:
        """The cells strictly between two cells on one straight hex line, or None if the
        cells are not on a line at least two steps apart."""
        for dc, dr in HEX_STEPS:
            between = []
            cell = (start[0] + dc, start[1] + dr)
            while abs(cell[0] - start[0]) < 30 and abs(cell[1] - start[1]) < 30:
                if cell == landing:
                    return between or None
                between.append(cell)
                cell = (cell[0] + dc, cell[1] + dr)
        return None

    def _crowding_ok(self, start: Cell, landing: Cell) -> bool:
        """After the jump every stone of the mover has at most 3 friendly neighbours."""
        me = self.to_move
        after = dict(self.stones)
        del after[start]
        after[landing] = me
        for cell, owner in after.items():
            if owner == me:
                friends = [nb for nb in self.board.neighbours(cell) if after.get(nb) == me]
                if len(friends) > 3:
                    return False
        return True

    # ----------------------------------------------------------------- playing

    def play(self, text: str) -> RefState:
        """Parse `text` (case-insensitive), check it against the rules, return the new state."""
        if self.is_over:
            raise RefIllegal("the game is over")
        text = text.lower()
        if self.game in ("xodd", "yodd"):
            return self._play_odd(text)
        if self.game == "hadron":
            return self._play_hadron(text)
        return self._play_hexifact(text)

    def _after(self, move: str, stones: dict[Cell, int], **changes: object) -> RefState:
        return replace(self, stones=stones, moves=(*self.moves, move), **changes)  # type: ignore[arg-type]

    def _play_odd(self, text: str) -> RefState:
        if text == "pass":
            if self.ply == 0:
                raise RefIllegal("Black's first turn must drop exactly one stone")
            return self._after("pass", dict(self.stones))
        parts = text.split(",")
        if len(parts) > 2 or (self.ply == 0 and len(parts) != 1):
            raise RefIllegal("a turn drops one or two stones (exactly one on the first turn)")
        drops: dict[Cell, int] = {}
        for part in parts:
            if not part or part[0] not in "bw":
                raise RefIllegal(f"a drop is B or W and a cell: {part!r}")
            cell = self.board.parse_cell(part[1:])
            if cell in self.stones or cell in drops:
                raise RefIllegal(f"not empty: {part[1:]}")
            drops[cell] = "bw".index(part[0])
        if not self._odd_after(drops):
            raise RefIllegal("the group count would be even")
        canonical = ",".join(drop_text(c, drops[c]) for c in sorted(drops, key=cell_order))
        return self._after(canonical, {**self.stones, **drops})

    def _play_hadron(self, text: str) -> RefState:
        cell = self.board.parse_cell(text)
        if not self._hadron_ok(cell):
            raise RefIllegal(f"{text}: friendly and enemy neighbours differ, or occupied")
        return self._after(cell_name(cell), {**self.stones, cell: self.to_move})

    def _play_hexifact(self, text: str) -> RefState:
        me = self.to_move
        if text == "pass":
            return self._after("pass", dict(self.stones))
        if "-" in text:
            start_text, _, landing_text = text.partition("-")
            start = self.board.parse_cell(start_text)
            landing = self.board.parse_cell(landing_text)
            if not self._jump_ok(start, landing):
                raise RefIllegal(f"not a legal jump: {text}")
            stones = dict(self.stones)
            del stones[start]
            stones[landing] = me
            jumped = list(self.jumped)
            jumped[me] = True
            jumped_stones = list(self.jumped_stones)
            jumped_stones[me] = (jumped_stones[me] - {start}) | {landing}
            move = f"{cell_name(start)}-{cell_name(landing)}"
            return self._after(
                move, stones, jumped=tuple(jumped), jumped_stones=tuple(jumped_stones)
            )
        cell = self.board.parse_cell(text)
        if not self._placement_ok(cell):
            raise RefIllegal(f"not a legal placement: {text}")
        jumped = list(self.jumped)
        jumped[me] = False
        jumped_stones = list(self.jumped_stones)
        jumped_stones[me] = frozenset()
        return self._after(
            cell_name(cell),
            {**self.stones, cell: me},
            jumped=tuple(jumped),
            jumped_stones=tuple(jumped_stones),
        )


def drop_text(cell: Cell, colour: int) -> str:
    return f"{COLOUR_LETTERS[colour]}{cell_name(cell)}"


# --------------------------------------------------------------------------- games


def new_game(game: str, **options: object) -> RefState:
    """The initial position, options validated and defaults filled in as rules.md says."""
    if game in SIZE_RANGES:
        low, high, default = SIZE_RANGES[game]
        unknown = set(options) - {"size"}
        size = options.get("size", default)
        if unknown or not isinstance(size, int) or not low <= size <= high:
            raise ValueError(f"{game} takes size {low}..{high}")
        board = hexhex_board(size) if game == "yodd" else square_board(size)
        return RefState(game, {"size": size}, board)
    if game == "hexifact":
        name = options.get("board", "hex3-4")
        jumps = options.get("jumps", "after-placing")
        if set(options) - {"board", "jumps"} or name not in HEXIFACT_BOARDS:
            raise ValueError(f"hexifact boards: {', '.join(HEXIFACT_BOARDS)}")
        if jumps not in JUMP_OPTIONS:
            raise ValueError(f"hexifact jumps: {', '.join(JUMP_OPTIONS)}")
        kind, n = HEXIFACT_BOARDS[str(name)]
        board = hexhex_board(n) if kind == "hexhex" else limping_board(n)
        return RefState(game, {"board": name, "jumps": jumps}, board)
    raise ValueError(f"unknown game {game!r}")


def replay(game: str, options: Mapping[str, object], moves: Iterable[str]) -> RefState:
    state = new_game(game, **options)
    for move in moves:
        state = state.play(move)
    return state


def render(state: RefState) -> str:
    """A plain picture for failure messages: top row first; a hex cell sits at x = q - r/2."""
    symbols = "RB" if state.game == "hadron" else "BW"
    width = 2 if state.board.hexes else 1
    xs = {cell: 2 * cell[0] - (cell[1] if width == 2 else 0) for cell in state.board.cells}
    left = min(xs.values())
    lines = []
    for row in sorted({r for _, r in state.board.cells}, reverse=True):
        line = [" "] * (max(xs.values()) - left + 1)
        for cell in state.board.cells:
            if cell[1] == row:
                owner = state.stones.get(cell)
                line[xs[cell] - left] = "." if owner is None else symbols[owner]
        lines.append(f"{row + 1:>2} {''.join(line).rstrip()}")
    return "\n".join(lines)
