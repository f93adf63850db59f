"""The ``tessera`` command: one entry point for operators, players and bot authors.

Server commands (``serve``, ``db``, ``admin``, ``dump``, ``cluster``) run ``python -m server``
in this process's place, so this package never imports the server (the layering holds at
import level). Every command that prints behaves in a pipe: when the reader goes away
(``tessera verify --all | head -1``) it stops quietly (:func:`run_printing`), and a
refusal from a server that the command did not handle itself (an ``error`` reply, or a
connection refused with HTTP 429, 503 or 403) ends it with one line and status 1, never a
traceback.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Sequence

import protocol as p

SERVER_COMMANDS = {"serve", "db", "admin", "dump", "cluster", "ratings"}
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
    "siege": ("clients.siege.cli", "hostile traffic against a server, with canaries"),
    "ladder": ("clients.ladder", "the bot ladder's standings: tessera ladder standings GAME"),
    "botcheck": ("clients.botcheck.cli", "check a bot in scripted scenarios on a private server"),
}

USAGE = """usage: tessera COMMAND [ARGS]    (tessera COMMAND --help for one command)
       tessera --version

server:
  serve        run the game server
  db upgrade   apply database migrations (db counts, db check, db sandbox: see db --help)
  admin        create users and bot accounts, manage tokens
  dump         print stored match records as JSON lines
  cluster status  the nodes of a cluster, their games and last heartbeats
                  (cluster owners, forget, redis-cpu: see cluster --help)
  ratings verify  recompute every rating pool from the stored games
"""
SIGPIPE_STATUS = 128 + 13  # as a program killed by SIGPIPE ends, in a shell's terms


def usage() -> str:
    commands = "".join(f"  {name:<12} {text}\n" for name, (_, text) in CLIENT_COMMANDS.items())
    return f"{USAGE}\nclients:\n{commands}"


def version() -> str:
    """``tessera 0.1.0 (protocol 1)``."""
    try:
        number = importlib.metadata.version("tessera")
    except importlib.metadata.PackageNotFoundError:
        number = "unknown"
    return f"tessera {number} (protocol {p.PROTOCOL_VERSION})"


def run_printing(command: Callable[[], int | None]) -> int:
    """Run ``command``; if the reader of its output goes away (a closed pipe), stop quietly
    with the status of a program that SIGPIPE ended, instead of a BrokenPipeError traceback.
    """
    try:
        status = int(command() or 0)
        sys.stdout.flush()  # the last buffered lines, while an error can still be caught
    except BrokenPipeError:
        # Nobody reads any more: send what is still buffered nowhere, so that the
        # interpreter's last flush does not fail as well.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return SIGPIPE_STATUS
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(usage(), file=sys.stderr)
        return 2
    command = args[0]
    if command in ("-h", "--help", "help"):
        return run_printing(lambda: print(usage()))
    if command in ("-V", "--version"):
        return run_printing(lambda: print(version()))
    if command in SERVER_COMMANDS:
        os.execv(sys.executable, [sys.executable, "-m", "server", *args])
    if command in CLIENT_COMMANDS:
        from websockets.exceptions import InvalidStatus

        from clients.connection import ServerError

        module = importlib.import_module(CLIENT_COMMANDS[command][0])
        entry = module.verify_main if command == "verify" else module.main
        try:
            return run_printing(lambda: entry(args[1:]))
        except ServerError as exc:  # a refusal no part of the command expected: one line
            print(f"tessera {command}: the server refused: {exc}", file=sys.stderr)
            return 1
        except InvalidStatus as exc:  # the connection itself refused (HTTP 429, 503, 403)
            print(f"tessera {command}: the server refused the connection: HTTP "
                  f"{exc.response.status_code} {exc.response.reason_phrase}", file=sys.stderr)
            return 1
    print(f"tessera: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
