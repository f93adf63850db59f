"""Hexifact: place next to the opponent and away from your own stones, or jump in a line
over opponent stones; score the product of your two largest groups.

Nothing in ``play`` needs groups: a placement looks at six neighbours, a jump at one line
and the landing cell's neighbourhood. Groups are counted only for scores (small boards).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .boards import Board
from .core import PASS, PASSES, Ending, Move
from .errors import BadPosition, IllegalMove
from .fields import int_field

AFTER_PLACING = "after-placing"
ONCE_PER_STONE = "once-per-stone"
MAX_FRIENDS = 3


class HexifactPosition:
    """A mutable Hexifact position."""

    __slots__ = ("board", "cells", "jumped", "may_jump", "mode", "passes", "ply")

    def __init__(self, board: Board, mode: str) -> None:
        self.board = board
        self.mode = mode
        self.cells = bytearray(board.size)  # 0 empty, 1 black (player 0), 2 white (player 1)
        self.ply = 0
        self.passes = 0
        self.may_jump = [False, False]  # after-placing: placed since the last own jump
        self.jumped: list[set[int]] = [set(), set()]  # once-per-stone: stones that jumped

    def copy(self) -> HexifactPosition:
        new = HexifactPosition.__new__(HexifactPosition)
        new.board = self.board
        new.mode = self.mode
        new.cells = self.cells[:]
        new.ply = self.ply
        new.passes = self.passes
        new.may_jump = self.may_jump[:]
        new.jumped = [set(self.jumped[0]), set(self.jumped[1])]
        return new

    # -- rules ---------------------------------------------------------------------------------
    def _friends(self, x: int, colour: int) -> int:
        cells = self.cells
        return sum(1 for y in self.board.neighbours[x] if cells[y] == colour)

    def _placement_error(self, x: int) -> str | None:
        if self.cells[x]:
            return "the cell is occupied"
        if self.ply == 0:
            return None
        me = self.ply % 2 + 1
        cells = self.cells
        near = [cells[y] for y in self.board.neighbours[x]]
        if me in near:
            return "a placement may not touch your own stones"
        if 3 - me not in near:
            return "a placement must touch an opponent's stone"
        return None

    def _may_jump_from(self, s: int) -> bool:
        p = self.ply % 2
        if self.mode == AFTER_PLACING:
            return self.may_jump[p]
        return s not in self.jumped[p]

    def _landing(self, s: int, d: int) -> int:
        """Landing cell of a jump from ``s`` in direction ``d``, or -1 if there is none."""
        step = self.board.steps[d]
        opp = 2 - self.ply % 2
        cells = self.cells
        y = step[s]
        if y < 0 or cells[y] != opp:
            return -1
        while y >= 0 and cells[y] == opp:
            y = step[y]
        return y if y >= 0 and cells[y] == 0 else -1

    def _crowds(self, s: int, z: int) -> bool:
        """True if moving the stone on ``s`` to ``z`` leaves a stone with > 3 friends."""
        me = self.cells[s]
        cells = self.cells
        cells[s] = 0
        cells[z] = me
        try:
            if self._friends(z, me) > MAX_FRIENDS:
                return True
            return any(
                cells[f] == me and self._friends(f, me) > MAX_FRIENDS
                for f in self.board.neighbours[z]
            )
        finally:
            cells[z] = 0
            cells[s] = me

    def _jumps_from(self, s: int) -> list[int]:
        out = []
        for d in range(len(self.board.steps)):
            z = self._landing(s, d)
            if z >= 0 and not self._crowds(s, z):
                out.append(z)
        return out

    # -- moves ---------------------------------------------------------------------------------
    def parse(self, text: str) -> Move:
        t = text.strip().lower()
        if t == "pass":
            return PASS
        if "-" in t:
            a, _, b = t.partition("-")
            s, z = self.board.index(a), self.board.index(b)
            return Move("jump", (s, z), f"{self.board.name(s)}-{self.board.name(z)}")
        x = self.board.index(t)
        return Move("place", (x,), self.board.name(x))

    def check(self, move: Move) -> None:
        n = self.board.size
        if move.kind == "pass":
            return
        if move.kind == "place" and len(move.args) == 1 and 0 <= move.args[0] < n:
            err = self._placement_error(move.args[0])
            if err:
                raise IllegalMove(f"{move.text}: {err}")
            return
        if move.kind != "jump" or len(move.args) != 2 or not all(0 <= a < n for a in move.args):
            raise IllegalMove(f"{move.text!r} is not a Hexifact move")
        s, z = move.args
        me = self.ply % 2 + 1
        if self.cells[s] != me:
            raise IllegalMove(f"{move.text}: there is no stone of yours on {self.board.name(s)}")
        if not self._may_jump_from(s):
            why = ("you have not placed a stone since your last jump" if self.mode == AFTER_PLACING
                   else "this stone has jumped since your last placement")
            raise IllegalMove(f"{move.text}: {why}")
        if all(self._landing(s, d) != z for d in range(len(self.board.steps))):
            raise IllegalMove(
                f"{move.text}: not a jump in a straight line over opponent stones "
                "onto the first empty cell after them"
            )
        if self._crowds(s, z):
            raise IllegalMove(f"{move.text}: a stone would have more than 3 friendly neighbours")

    def apply(self, move: Move) -> None:
        p = self.ply % 2
        if move.kind == "pass":
            self.passes += 1
        elif move.kind == "place":
            self.cells[move.args[0]] = p + 1
            self.may_jump[p] = True
            self.jumped[p].clear()
            self.passes = 0
        else:
            s, z = move.args
            self.cells[s] = 0
            self.cells[z] = p + 1
            self.may_jump[p] = False
            self.jumped[p].discard(s)
            self.jumped[p].add(z)
            self.passes = 0
        self.ply += 1

    @property
    def is_over(self) -> bool:
        return self.passes >= 2

    @property
    def winner(self) -> int | None:
        if self.passes < 2:
            return None
        last = (self.ply - 1) % 2  # made the final pass; wins ties
        scores = self.scores()
        return last if scores[last] >= scores[1 - last] else 1 - last

    def legal_moves(self) -> list[Move]:
        return list(self.iter_legal_moves())

    def iter_legal_moves(self) -> Iterator[Move]:
        if self.is_over:
            return
        names = self.board.cells
        for x in range(self.board.size):
            if self._placement_error(x) is None:
                yield Move("place", (x,), names[x].name)
        me = self.ply % 2 + 1
        for s in range(self.board.size):
            if self.cells[s] == me and self._may_jump_from(s):
                for z in self._jumps_from(s):
                    yield Move("jump", (s, z), f"{names[s].name}-{names[z].name}")
        yield PASS

    def random_move(self, rng: random.Random) -> Move:
        return rng.choice(self.legal_moves())

    # -- scoring -----------------------------------------------------------------------------
    def group_sizes(self, colour: int) -> list[int]:
        """Sizes of ``colour``'s groups, largest first."""
        cells, neighbours = self.cells, self.board.neighbours
        seen = bytearray(len(cells))
        sizes = []
        for start in range(len(cells)):
            if cells[start] != colour or seen[start]:
                continue
            seen[start] = 1
            stack, size = [start], 0
            while stack:
                x = stack.pop()
                size += 1
                for y in neighbours[x]:
                    if cells[y] == colour and not seen[y]:
                        seen[y] = 1
                        stack.append(y)
            sizes.append(size)
        return sorted(sizes, reverse=True)

    def scores(self) -> list[int]:
        out = []
        for colour in (1, 2):
            sizes = self.group_sizes(colour)
            out.append(sizes[0] * sizes[1] if len(sizes) >= 2 else 0)
        return out

    def summary(self) -> dict[str, Any]:
        names = self.board.cells
        me = self.ply % 2 + 1
        jumps = [f"{names[s].name}-{names[z].name}"
                 for s in range(self.board.size)
                 if self.cells[s] == me and self._may_jump_from(s)
                 for z in self._jumps_from(s)] if not self.is_over else []
        return {
            "scores": self.scores(),
            "groups": [self.group_sizes(1), self.group_sizes(2)],
            "jumps": jumps,
        }

    def ending(self, colours: tuple[str, str]) -> Ending | None:
        """Both passed: the one who passed last wins unless the other scores more."""
        winner = self.winner
        if winner is None:
            return None
        scores = self.scores()
        last = (self.ply - 1) % 2
        told = ", ".join(f"{colours[seat]} {self._score_text(seat)}" for seat in (0, 1))
        if scores[0] == scores[1]:
            rule = f"the tie goes to {colours[last]}, who passed last"
        else:
            rule = "the higher score wins"
        return Ending(winner, PASSES, (scores[0], scores[1]), f"both passed: {told}; {rule}")

    def _score_text(self, seat: int) -> str:
        """``6 x 6 = 36``: the two largest groups and their product; or why the score is 0."""
        sizes = self.group_sizes(seat + 1)
        if len(sizes) >= 2:
            return f"{sizes[0]} x {sizes[1]} = {sizes[0] * sizes[1]}"
        return "0 (one group)" if sizes else "0 (no stones)"

    # -- position text ------------------------------------------------------------------------
    def text_fields(self) -> dict[str, str]:
        fields = {"passes": str(self.passes)}
        if self.mode == AFTER_PLACING:
            fields["may_jump"] = "".join("1" if f else "0" for f in self.may_jump)
        else:
            cells = sorted(self.jumped[0] | self.jumped[1])
            fields["jumped"] = ",".join(self.board.name(x) for x in cells) or "-"
        return fields

    @classmethod
    def from_fields(cls, board: Board, colours: list[int], ply: int, fields: dict[str, str],
                    mode: str) -> HexifactPosition:
        pos = cls(board, mode)
        pos.cells[:] = bytes(colours)
        for x, colour in enumerate(pos.cells):
            if colour and pos._friends(x, colour) > MAX_FRIENDS:
                # unreachable by play: placements touch no friend and jumps keep <= 3
                raise BadPosition(f"the stone on {board.name(x)} has more than "
                                  f"{MAX_FRIENDS} friendly neighbours")
        pos.ply = ply
        pos.passes = int_field(fields, "passes", 0, 2)
        if mode == AFTER_PLACING:
            flags = fields.pop("may_jump", "")
            if len(flags) != 2 or set(flags) - {"0", "1"}:
                raise BadPosition("field may_jump= must be two flags, e.g. may_jump=10")
            pos.may_jump = [flags[0] == "1", flags[1] == "1"]
        else:
            listed = fields.pop("jumped", None)
            if listed is None:
                raise BadPosition("missing field jumped= (cells, or -)")
            for name in ([] if listed == "-" else listed.split(",")):
                try:
                    x = board.index(name)
                except IllegalMove as e:
                    raise BadPosition(str(e)) from None
                if not pos.cells[x]:
                    raise BadPosition(f"jumped= names the empty cell {name}")
                pos.jumped[pos.cells[x] - 1].add(x)
        return pos
