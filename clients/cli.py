"""The ``tessera`` command: one entry point for operators, players and bot authors.

Server commands (``serve``, ``db``, ``admin``, ``dump``, ``cluster``) run ``python -m server``
in this process's place, so this package never imports the server (the layering holds at
import level).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

SERVER_COMMANDS = {"serve", "db", "admin", "dump", "cluster"}
# command -> (module in clients, one-line help)
CLIENT_COMMANDS: dict[str, tuple[str, str]] = {
    "play": ("clients.play", "the interactive terminal client"),
    "bot": ("clients.sdk.cli", "run a bundled or your own bot on a server"),
    "bridge": ("clients.sdk.bridge_cli", "connect an external engine: tessera bridge -- PROG"),
    "arena": ("clients.arena", "play bots against each other and rate them"),
    "replay": ("clients.replay", "step through a stored match"),
    "export": ("clients.export", "write a match record as text or JSON"),
    "verify": ("clients.export", "re-play match records through the engine"),
    "bench": ("clients.bench", "load benchmark of a real server"),
    "chaos": ("clients.chaos", "crash test: kill the server during live games"),
}

USAGE = """usage: tessera COMMAND [ARGS]

server:
  serve        run the game server (tessera serve --help)
  db upgrade   apply database migrations
  admin        create users and bot accounts, manage tokens
  dump         print stored match records as JSON lines
  cluster status  the nodes of a cluster, their games and last heartbeats
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        extra = "".join(f"  {name:<12} {text}\n" for name, (_, text) in CLIENT_COMMANDS.items())
        print(USAGE + ("\nclients:\n" + extra if extra else ""))
        return 0
    command = args[0]
    if command in SERVER_COMMANDS:
        os.execv(sys.executable, [sys.executable, "-m", "server", *args])
    if command in CLIENT_COMMANDS:
        module = importlib.import_module(CLIENT_COMMANDS[command][0])
        if command == "verify":
            return int(module.verify_main(args[1:]) or 0)
        return int(module.main(args[1:]) or 0)
    print(f"tessera: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
