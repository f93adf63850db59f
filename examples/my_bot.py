#!/usr/bin/env python3
"""A complete Tessera bot: it takes a win in one move when there is one, else plays at random.

Make a bot account once (the server's operator does this) and keep the token it prints::

    .venv/bin/tessera admin create-bot mybot

Then run this file; it takes every option of ``.venv/bin/tessera bot`` (``--help`` lists them)::

    export TESSERA_BOT_TOKEN=...          # the token
    .venv/bin/python examples/my_bot.py --server ws://127.0.0.1:8765/ws --games hadron,xodd \\
        --seek 'hadron size=5 5s/move' --max-games 2

It plays until you press Ctrl-C (the games in progress are finished first; press it again
to resign them). The guide is docs/BOTS.md.
"""

from __future__ import annotations

import sys
import time

import engine
from clients.sdk import Bot, TimeBudget, run_bot


class MyBot(Bot):
    """Wins at once if it can; otherwise a random legal move."""

    name = "my-bot"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        deadline = time.monotonic() + budget.seconds_for_move(state.ply)
        me = state.to_move
        moves = state.legal_moves()  # never empty: choose_move is not called once it's over
        self.rng.shuffle(moves)  # self.rng is the bot's seeded random.Random
        for move in moves:
            if time.monotonic() > deadline:
                break  # out of time: settle for a random move
            after = state.play(move)  # a new state; `state` is unchanged
            if after.is_over and after.winner == me:
                return str(move)  # canonical move text, e.g. "c3"
        return str(moves[0])

    def new_game(self, game_key: str, options: dict[str, object], seat: int) -> None:
        print(f"{self.name}: a game of {game_key} {options}, as seat {seat}", file=sys.stderr)

    def game_over(self, winner: int | None) -> None:
        print(f"{self.name}: game over, winner {winner}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(run_bot(MyBot()))
