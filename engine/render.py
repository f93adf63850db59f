"""ASCII drawings of any position, with coordinates; hex boards get offset rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import State


def render(state: State, mark: set[str]) -> str:
    """Rows top-down, each cell two characters wide; cells named in ``mark`` get brackets."""
    board = state.board
    chars = state.cell_chars()
    marked = {c.index for c in board.cells if c.name in {m.lower() for m in mark}}
    # drawing column of each cell: x = q - r/2, doubled to stay on whole characters
    col = {c.index: int(2 * c.x) for c in board.cells}
    left = min(col.values())
    width = max(col.values()) - left + 1
    label_w = len(str(board.height))
    rows = board.rows()

    def letters(row: list[int]) -> str:
        line = [" "] * (width + 2)
        for x in row:
            line[col[x] - left + 1] = board.cells[x].name[0]
        return " " * (label_w + 1) + "".join(line).rstrip()

    out = [letters(rows[-1])] if board.kind == "hex" else [letters(rows[0])]
    for r in range(board.height - 1, -1, -1):
        line = [" "] * (width + 2)
        for x in rows[r]:
            c = col[x] - left + 1
            line[c] = chars[x]
            if x in marked:
                line[c - 1], line[c + 1] = "[", "]"
        label = str(r + 1).rjust(label_w)
        out.append(f"{label} {''.join(line)} {label}".rstrip())
    out.append(letters(rows[0]))
    return "\n".join(out)
