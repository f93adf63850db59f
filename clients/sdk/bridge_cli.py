"""``tessera bridge``: play an external engine on a server, through the bot SDK.

    tessera bridge --server ws://host:8765/ws --max-games 2 --seek 'hadron 2s/move' \\
        -- python3 examples/random_engine.py --seed 7

Everything before ``--`` is an option of ``tessera bot`` (token, policy, seeks, signals);
everything after it is the engine's command line. The engine speaks the line protocol of
:mod:`clients.bridge` (docs/BRIDGE.md) and is wrapped in an
:class:`~clients.bridge.EngineBot`: one engine process per game played at once, started at
the first game and kept for the next ones, stopped when the bridge stops. An engine that
resigns, or crashes beyond the one restart per game, resigns its game.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from clients.bridge import EngineBot

from .cli import add_runner_arguments, run_cli


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(options, engine command) around the first ``--``; the command may not be empty."""
    args = list(argv)
    if "--" not in args:
        return args, []
    i = args.index("--")
    return args[:i], args[i + 1:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tessera bridge", usage="tessera bridge [OPTIONS] -- PROGRAM [ARGS ...]",
        description="Connect an external engine to a Tessera server: the engine speaks the "
                    "line protocol of docs/BRIDGE.md on its stdin and stdout; the other "
                    "options are those of 'tessera bot' (docs/BOTS.md).")
    parser.add_argument("--seed", type=int, help="seed passed to the bridge's bot object")
    parser.add_argument("--grace", type=float, default=1.0, metavar="S",
                        help="extra seconds allowed for an engine's answer beyond its think "
                             "time (never past the clock; default: %(default)s)")
    parser.add_argument("--startup-timeout", type=float, default=10.0, metavar="S",
                        help="seconds for the engine to start and accept a game")
    parser.add_argument("--cwd", help="run the engine in this directory")
    add_runner_arguments(parser)
    options, command = split_command(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(options)
    if not command:
        parser.error("no engine: put its command line after '--', e.g. "
                     "tessera bridge -- python3 examples/random_engine.py")

    def factory() -> EngineBot:
        return EngineBot(command, seed=args.seed, grace_s=args.grace,
                         startup_timeout_s=args.startup_timeout, cwd=args.cwd)

    return run_cli(lambda _: factory, args, parser)


if __name__ == "__main__":
    sys.exit(main())
