#!/usr/bin/env python3
"""A complete Tessera engine in the bridge's line protocol: it plays a random legal move.

It uses only the Python standard library and knows no rules: on ``go`` it asks the bridge
for the legal moves (``legal``) and picks one at random. Any game works. Run it through the
bridge (see docs/BRIDGE.md)::

    .venv/bin/tessera bridge -- python3 examples/random_engine.py --seed 7

or talk to it by hand: type ``tessera 1``, ``newgame hadron size=5 0``, ``go think=100``,
answer its ``legal`` with ``legal a1 b2``, and it says ``move a1`` or ``move b2``.
"""

from __future__ import annotations

import argparse
import random
import sys

PROTOCOL_VERSION = "1"


def send(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def read() -> str | None:
    """The next command line, or None when the bridge has closed our input."""
    line = sys.stdin.readline()
    return None if not line else line.strip()


def choose(rng: random.Random) -> str:
    """Ask the bridge for the legal moves and answer with one of them."""
    send("legal")
    reply = read()
    if reply is None:
        sys.exit(0)
    word, *moves = reply.split()
    if word != "legal" or not moves:
        return "resign"
    return "move " + rng.choice(moves)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="seed of the random choices")
    rng = random.Random(parser.parse_args().seed)
    while (line := read()) is not None:
        command, _, args = line.partition(" ")
        if command == "tessera":
            if args.strip() != PROTOCOL_VERSION:
                send(f"error version this engine speaks protocol {PROTOCOL_VERSION}")
                continue
            send("id name random-engine")
            send("id author the Tessera examples")
            send("ok")
        elif command == "newgame":
            send("ok")  # every game is fine: the bridge tells us the legal moves
        elif command == "go":
            send(choose(rng))
        elif command == "quit":
            return
        # position, moves and result need no answer and this engine has no use for them.


if __name__ == "__main__":
    main()
