"""The shared loop of the misbehaving test engines: a well-behaved random engine with hooks.

Each engine script in this folder overrides one hook to misbehave in one way. Only the
standard library is used, as for any engine in another language.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

Hook = Callable[["Engine"], None]


class Engine:
    """Speaks the bridge protocol; ``on_go`` answers a ``go`` (default: a random legal move)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rng = random.Random(0)
        self.moves_made = 0
        self.last_error: str | None = None

    def send(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def read(self) -> str:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        return line.strip()

    def legal(self) -> list[str]:
        self.send("legal")
        word, *moves = self.read().split()
        assert word == "legal", word
        return moves

    def play_random(self) -> None:
        self.send("move " + self.rng.choice(self.legal()))
        self.moves_made += 1

    def handshake(self) -> None:
        self.send(f"id name {self.name}")
        self.send("ok")

    def newgame(self, args: str) -> None:
        self.send("ok")

    def on_go(self) -> None:
        self.play_random()

    def run(self) -> None:
        while True:
            line = self.read()
            command, _, args = line.partition(" ")
            if command == "tessera":
                self.handshake()
            elif command == "newgame":
                self.newgame(args)
            elif command == "go":
                self.on_go()
            elif command == "error":
                self.last_error = args
            elif command == "quit":
                return
