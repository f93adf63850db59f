"""Write one golden playthrough transcript per game to tests/engine/golden/<game>.txt.

    python -m tests.engine.make_golden        # or: make golden

Each transcript is a seeded random game (moves chosen by tests.engine.helpers.pick from the
sorted legal moves, so engine.random_move is not involved): for every ply the player to
move, the number of legal moves, the drawing, the position text and summary, and the move
played; then the final position and the winner. test_golden.py regenerates them in memory
and compares, so any change in rules, notation, drawing or position text shows up as a
reviewable diff of these files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import engine

from .helpers import DEFAULT_CONFIGS, pick, texts

GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN_GAMES: dict[str, dict[str, Any]] = dict(DEFAULT_CONFIGS)
"""One playthrough per registered game, on its default options."""


def transcript(key: str) -> str:
    """The golden transcript of `key`'s seeded game, as text."""
    options = GOLDEN_GAMES[key]
    game = engine.get_game(key)
    rng = random.Random(f"golden-{key}")
    state = engine.new_game(key, **options)
    out = [
        f"# {game.name} golden playthrough, options {json.dumps(options, sort_keys=True)}",
        "# Regenerate with `make golden` (python -m tests.engine.make_golden); review the diff.",
        "",
    ]
    while True:
        legal = texts(state.legal_moves())
        player = f"{state.to_move} ({game.players[state.to_move]})"
        if not legal:
            break
        move = pick(rng, legal)
        out += [
            f"ply {state.ply}: {player} to move, {len(legal)} legal moves",
            state.render(),
            state.to_text(),
            f"summary {json.dumps(state.summary(), sort_keys=True)}",
            f"move {move}",
            "",
        ]
        state = state.play(move)
    out += [
        f"ply {state.ply}: game over, winner {state.winner} ({game.players[state.winner]})",
        state.render(),
        state.to_text(),
        f"summary {json.dumps(state.summary(), sort_keys=True)}",
        f"moves {' '.join(state.moves)}",
    ]
    return "\n".join(out) + "\n"


def golden_path(key: str) -> Path:
    return GOLDEN_DIR / f"{key}.txt"


def main() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for key in GOLDEN_GAMES:
        path = golden_path(key)
        path.write_text(transcript(key), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
