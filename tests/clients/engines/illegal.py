"""Answers illegal moves: ``illegal.py always``, ``illegal.py once`` (legal again after the
bridge's ``error illegal``), or ``illegal.py shout`` (legal moves in upper case)."""

import sys

from _loop import Engine

CANDIDATES = ["pass", "a1", "Ba1", "a1-a3", "zz99"]


class Illegal(Engine):
    def on_go(self) -> None:
        mode = sys.argv[1]
        legal = self.legal()
        if mode == "shout":
            self.send("move " + self.rng.choice(legal).upper())
        elif mode == "once" and self.last_error is not None and self.last_error.startswith(
                "illegal"):
            self.last_error = None
            self.send("move " + self.rng.choice(legal))
        else:
            self.send("move " + next(m for m in CANDIDATES if m not in legal))


Illegal("illegal").run()
